#!/usr/bin/env bash
# Run one benchmark job on a slurm fleet (runners/fleets.yaml): a thin shell over the CLI.
#   runners/slurm.sh --recipe R --workload W --runner-label L --concurrency 1 4 16 [--run-id ID]
# Everything else (commands, mounts, partitions, teardown) is infermatrix's; this node needs
# the SLURM client tools (and Pyxis for container images).
set -euo pipefail
for tool in salloc srun sbatch scancel squeue scontrol; do
  command -v "$tool" >/dev/null 2>&1 || { echo "slurm.sh: $tool not found on PATH" >&2; exit 2; }
done
exec infermatrix run --backend slurm --engine real "$@"
