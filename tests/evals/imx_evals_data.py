"""Helpers for the eval tests: a local lm-eval task, eval and performance records, a fake harness.

The local task is lm-eval's own YAML format over a JSONL file the test writes, so the real
harness runs it with no dataset hub: ``dataset_path: json`` loads ``data_files`` from disk.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from imx_support.synthetic import SynthJob, level_result

from infermatrix.evals.record import EvalRecord, document, file_name
from infermatrix.results.records import Record, normalise

FIXTURES = Path(__file__).parent / "fixtures"
# Recorded with lm-eval 0.4.13 (local-completions, tokenizer_backend=none):
SIM_FAIL = FIXTURES / "sim_local_qa_fail.json"  # task imx_local_qa on the simulated engine: 0.0
LOCAL_PASS = FIXTURES / "local_math_pass.json"  # task imx_local_math, 9 of 10 right: 0.9 ± 0.1
LOCAL_TASK = "imx_local_qa"
RUN = "20261122T090000Z-abcdef"


def write_local_task(folder: Path, n: int = 8, task: str = LOCAL_TASK) -> Path:
    """A custom lm-eval task (YAML + JSONL) in ``folder``; returns the folder (--include_path)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / f"{task}.jsonl"
    with data.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"question": f"What is {i} plus {i}?", "answer": str(2 * i)}) + "\n")
    (folder / f"{task}.yaml").write_text(f"""\
task: {task}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {json.dumps(str(data))}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  do_sample: false
  max_gen_toks: 8
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: true
metadata:
  version: 1.0
""", encoding="utf-8")
    return folder


def synth_job(**kw: Any) -> SynthJob:
    return SynthJob(**kw)


def perf_records(job: SynthJob, run_id: str = RUN, *, simulated: bool = False,
                 started_at: str = "2026-11-22T09:00:00Z") -> list[Record]:
    out = []
    for conc in job.concurrency:
        raw = level_result(job, run_id, conc)
        raw["infermatrix"].update(simulated=simulated, started_at=started_at)
        out.append(normalise(raw))
    return out


def eval_record(job: SynthJob, run_id: str = RUN, **fields: Any) -> EvalRecord:
    raw = level_result(job, run_id, job.concurrency[-1])["infermatrix"]
    base: dict[str, Any] = {k: raw[k] for k in ("job_id", "fingerprint", "recipe", "model", "hardware",
                                                "engine", "engine_version", "image", "precision",
                                                "workload", "runner")}
    base.update(run_id=run_id, concurrency=job.concurrency[-1], task="gsm8k",
                lm_eval_task="gsm8k", metric="exact_match,flexible-extract", status="ok",
                score=0.95, stderr=0.006, n_samples=1319, task_version="3.0",
                started_at="2026-11-22T09:10:00Z", finished_at="2026-11-22T09:20:00Z")
    base.update(fields)
    return EvalRecord.model_validate(base)


def write_eval(job_dir: Path, rec: EvalRecord, lm_eval: dict[str, Any] | None = None) -> Path:
    path = job_dir / file_name(rec.task, rec.concurrency)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document(rec, lm_eval)), encoding="utf-8")
    return path


FAKE_HARNESS = f"""#!{sys.executable}
# Stands in for `python -m lm_eval run ...`: behaves as $IMX_FAKE_MODE says.
import os, shutil, sys, time
args = sys.argv[1:]
out = args[args.index("--output_path") + 1]
mode = os.environ.get("IMX_FAKE_MODE", "ok")
print("fake lm-eval", " ".join(args))
print("hub offline:", os.environ.get("HF_HUB_OFFLINE"), os.environ.get("HF_DATASETS_OFFLINE"))
if mode == "crash":
    print("Traceback: boom", file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    time.sleep(30)
os.makedirs(os.path.join(out, "m"), exist_ok=True)
target = os.path.join(out, "m", "results_2026-11-22T09-00-00.json")
if mode == "garbage":
    open(target, "w").write('{{"results": {{"gsm8k": ')
elif mode == "nothing":
    pass
else:
    shutil.copyfile(os.environ["IMX_FAKE_RESULTS"], target)
"""


def fake_harness_python(folder: Path) -> Path:
    """An executable that takes lm-eval's command line (after ``-m lm_eval``) and fakes it."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / "python"
    exe.write_text(FAKE_HARNESS, encoding="utf-8")
    exe.chmod(0o755)
    return exe
