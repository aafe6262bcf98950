#!/usr/bin/env bash
# coll-run autotune (issue #13, AutoCCL's idea): per size, the model's `auto` choice and every
# applicable algorithm measured on mpirun -np 4 here; the gain of the measured choice over the
# model's, on the discovered host before and after `coll-run calibrate`.
# Usage: bench/autotune.sh [build/bin] [out.md]
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/autotune.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -np 4 "$bin/coll-run" calibrate -o "$tmp/cal.json" 2>"$tmp/cal.txt"
{
  echo "# coll-run autotune: the measured choice against the model's"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, \`mpirun -np 4\` on one host."
  echo "Written by \`bench/autotune.sh\`. Per size, \`auto\` (the simulator's choice, knobs searched) and every"
  echo "applicable algorithm run 5 timed iterations each; gain = the model's choice's time / the best measured"
  echo "(1.00: the model chose the fastest). First on the host as discovered (the model uncalibrated), then on"
  echo "the topology \`coll-run calibrate\` wrote."
  for coll in allreduce allgather; do
    for where in discovered calibrated; do
      topo=()
      [ "$where" = calibrated ] && topo=(--topo "$tmp/cal.json")
      echo
      echo "## $coll, $where"
      echo
      echo '```'
      echo "mpirun --oversubscribe -np 4 coll-run autotune --coll $coll ${topo[*]/$tmp\//} -b 1K -e 64M -f 8 -o tuning.json"
      mpirun --oversubscribe -np 4 "$bin/coll-run" autotune --coll "$coll" "${topo[@]}" -b 1K -e 64M -f 8 -o "$tmp/t.json"
      echo '```'
    done
  done
} >"$tmp/out.md"
mv "$tmp/out.md" "$out"
echo "wrote $out"
