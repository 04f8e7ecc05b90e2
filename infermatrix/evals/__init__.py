"""The accuracy gate: evaluate a running server with lm-eval, record the score, gate publishing.

Modules, one job each: ``schema`` (accuracy.yaml and the sweep's eval policy), ``config``
(loading it), ``plan`` (which levels evaluate), ``harness`` (lm-eval as a subprocess), ``parse``
(its results JSON), ``record`` (the eval-*.json file), ``step`` (one evaluation in a job),
``collect`` / ``store`` (eval records into the history) and ``gate`` (which records may be
published). docs/accuracy.md describes the whole.
"""
