"""The CLI layer's subcommands that wire several packages together (docs/architecture.md):
``catalog`` (engines' rendering into report's catalog page) and ``collect`` / ``report`` /
``compare`` (results, evals and report), ``run`` / ``sweep`` (launch runs every job; capacity
brings the measurement of capacity jobs). They may import every package; no package imports
them."""
