#!/usr/bin/env bash
# Run one benchmark job on a local fleet (runners/fleets.yaml): a thin shell over the CLI.
#   runners/local.sh --recipe R --workload W --runner-label L --concurrency 1 4 16 [--run-id ID]
# Everything else (commands, mounts, partitions, teardown) is infermatrix's; this node needs
# nothing but this checkout (real engines: bash scripts/setup-vllm-cpu.sh).
set -euo pipefail
exec infermatrix run --backend local --engine real "$@"
