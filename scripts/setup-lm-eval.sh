#!/usr/bin/env bash
# Installs lm-evaluation-harness into its own virtual environment (default: .venv-eval in the
# repo), for the accuracy gate (infermatrix/evals) and its integration test.
# Idempotent: when the venv already imports lm_eval's API models, it does nothing.
#   bash scripts/setup-lm-eval.sh [VENV_DIR]
# lm_eval depends on torch; torch==2.13.0 goes in FIRST so pip takes the CPU wheel the machine
# image carries (an unpinned torch would download a multi-GB CUDA build). The `api` extra brings
# what the local-completions / local-chat-completions models need (aiohttp, tenacity, ...).
# It is never installed into the main .venv: the package itself only runs it as a subprocess.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${1:-${INFERMATRIX_EVAL_VENV:-.venv-eval}}"
LM_EVAL_VERSION="${LM_EVAL_VERSION:-0.4.13}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
PYTHON="${PYTHON:-python3}"
CHECK='import lm_eval, lm_eval.models.openai_completions'

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$CHECK" >/dev/null 2>&1; then
  echo "setup-lm-eval: $VENV already has lm_eval"
  exit 0
fi

echo "setup-lm-eval: installing lm_eval[api]==$LM_EVAL_VERSION into $VENV (takes a few minutes)"
"$PYTHON" -m venv "$VENV"
echo '*' > "$VENV/.gitignore"  # the venv ignores itself (GBs that must never be committed)
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# (grep: pip's warnings about extra index folders that do not exist would drown the log)
"$VENV/bin/python" -m pip install --quiet "torch==$TORCH_VERSION" 2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/python" -m pip install --quiet "torch==$TORCH_VERSION" "lm_eval[api]==$LM_EVAL_VERSION" \
  2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/python" -c "$CHECK"
echo "setup-lm-eval: done ($("$VENV/bin/python" -m pip show lm_eval | sed -n 's/^Version: //p'))"
