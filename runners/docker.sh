#!/usr/bin/env bash
# Run one benchmark job on a docker fleet (runners/fleets.yaml): a thin shell over the CLI.
#   runners/docker.sh --recipe R --workload W --runner-label L --concurrency 1 4 16 [--run-id ID]
# Everything else (commands, mounts, partitions, teardown) is infermatrix's; this node needs
# a Docker engine this user may use (docker group).
set -euo pipefail
command -v docker >/dev/null 2>&1 || { echo "docker.sh: docker not found on PATH" >&2; exit 2; }
exec infermatrix run --backend docker --engine real "$@"
