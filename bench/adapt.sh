#!/usr/bin/env bash
# Adaptation to slow links and ranks (issue #13): mpirun -np 4 coll-run adapt on this machine, ring
# AllReduce 1-16 MiB, healthy / degraded / adapted per fault, and what the probe found.
# Goal: the adapted ring recovers at least half of what a 4x slow link costs.
# Usage: bench/adapt.sh [build/bin] [out.md]
# COLLKIT_BENCH_FAULTS (space-separated --inject values) and COLLKIT_BENCH_MAX_SIZE (default 16M)
# shorten a run.
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/adapt.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
read -r -a faults <<<"${COLLKIT_BENCH_FAULTS:-slow-link=0-1:x4 slow-link=0-1:x16 slow-link=1-2:x16,slow-link=0-3:x16 slow-rank=2:x8}"
max_size=${COLLKIT_BENCH_MAX_SIZE:-16M}
{
  echo "# Adapting to slow links and ranks: coll-run adapt"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, \`mpirun -np 4\` on one host."
  echo "Written by \`bench/adapt.sh\`; each block is"
  echo
  echo '```'
  echo "mpirun --oversubscribe -np 4 coll-run adapt --inject FAULTS --probe-bytes 4M -b 1M -e $max_size -f 4 -n 10 -w 3"
  echo '```'
  echo
  echo "The faults hold every message of a slowed pair back by (factor - 1) x its bytes at the pair's own"
  echo "rate (measured by the probe before any fault), so a factor slows the link, not the collective: on"
  echo "this machine four processes share two cores and the copies through shared memory are not what"
  echo "bounds a ring, so a 4x slower link costs the ring little. The probe (each pair, shift by shift, best"
  echo "of five) names pairs above three times the lower quartile of the pairs; the ring is re-planned in an order that avoids them."
  echo "recovered = (degraded - adapted) / (degraded - healthy); \"(no loss)\" where degraded is within 10% of"
  echo "healthy. A slow rank cannot be routed around by a ring order (every rank is on the ring)."
  for f in "${faults[@]}"; do
    echo
    echo "## --inject $f"
    echo
    echo '```'
    mpirun --oversubscribe -np 4 "$bin/coll-run" adapt --inject "$f" --probe-bytes 4M -b 1M -e "$max_size" -f 4 -n 10 -w 3
    echo '```'
  done
} >"$tmp/out.md"
mv "$tmp/out.md" "$out"
echo "wrote $out"
