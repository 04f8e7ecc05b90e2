#!/usr/bin/env bash
# Installs the peer benchmark clients (guidellm, aiperf) into their own virtual environment
# (default: .venv-peers in the repo) for tests/perf/client_accuracy.py, which runs them against
# the same stamping server as our client and prints their TTFT/TPOT error beside ours.
# Not needed by the test suite. Idempotent: when both console scripts exist, it does nothing.
#   bash scripts/setup-peers.sh [VENV_DIR]
set -euo pipefail

cd "$(dirname "$0")/.."
VENV="${1:-${INFERMATRIX_PEERS_VENV:-.venv-peers}}"
PYTHON="${PYTHON:-python3}"
GUIDELLM_VERSION="${GUIDELLM_VERSION:-0.8.1}"
AIPERF_VERSION="${AIPERF_VERSION:-0.13.0}"

if [ -x "$VENV/bin/guidellm" ] && [ -x "$VENV/bin/aiperf" ]; then
  echo "setup-peers: $VENV already has guidellm and aiperf"
  exit 0
fi

echo "setup-peers: installing guidellm==$GUIDELLM_VERSION and aiperf==$AIPERF_VERSION into $VENV"
"$PYTHON" -m venv "$VENV"
echo '*' > "$VENV/.gitignore"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "guidellm==$GUIDELLM_VERSION" "aiperf==$AIPERF_VERSION" \
  2>&1 | grep -v "^WARNING: Location" || true
"$VENV/bin/guidellm" --help >/dev/null
"$VENV/bin/aiperf" --help >/dev/null
echo "setup-peers: done"
