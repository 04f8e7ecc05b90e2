#!/usr/bin/env bash
# `make test` three times in a row, each while two CPU-burning processes keep both cores busy
# (issue 16: the suite must hold on a loaded machine). Run from a clean clone of the repository;
# each run's output goes to loaded-run<N>.log in the current directory.
set -u
cd "$(dirname "$0")/.." || exit 1
export CI=true
status=0
for i in 1 2 3; do
  yes > /dev/null & y1=$!
  yes > /dev/null & y2=$!
  start=$(date +%s)
  echo "run $i start $(date -u +%H:%M:%S) commit $(git rev-parse --short HEAD)"
  make test > "loaded-run$i.log" 2>&1
  rc=$?
  kill "$y1" "$y2"
  echo "run $i rc=$rc $(( $(date +%s) - start )) s: $(grep -E '(passed|failed)' "loaded-run$i.log" | tail -1)"
  [ "$rc" -eq 0 ] || status=1
done
exit "$status"
