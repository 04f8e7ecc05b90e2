#!/usr/bin/env bash
# Run one benchmark job on a ssh fleet (runners/fleets.yaml): a thin shell over the CLI.
#   runners/ssh.sh --recipe R --workload W --runner-label L --concurrency 1 4 16 [--run-id ID]
# Everything else (commands, mounts, partitions, teardown) is infermatrix's; this node needs
# key-based ssh to every host of the fleet.
set -euo pipefail
command -v ssh >/dev/null 2>&1 || { echo "ssh.sh: ssh not found on PATH" >&2; exit 2; }
exec infermatrix run --backend ssh --engine real "$@"
