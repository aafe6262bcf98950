#!/usr/bin/env bash
# Adaptation to slow links and ranks (issue #13): mpirun -np 4 coll-run adapt on this machine,
# AllReduce 1-16 MiB, healthy / degraded / adapted per fault, found from the degraded ring's own
# iterations (the iteration it was named at and the one the adapted plan took over at).
# Goal: the adapted plan recovers at least half of what a 4x slow link (or rank) costs.
# Usage: bench/adapt.sh [build/bin] [out.md]
# COLLKIT_BENCH_FAULTS (space-separated --inject values), COLLKIT_BENCH_PROBE_FAULTS (those also
# found by the probe; empty: none) and COLLKIT_BENCH_MAX_SIZE (default 16M) shorten a run.
set -euo pipefail
bin=${1:-build/bin}
out=${2:-results/adapt.md}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
read -r -a faults <<<"${COLLKIT_BENCH_FAULTS:-slow-link=0-1:x4 slow-link=0-1:x16 slow-link=1-2:x16,slow-link=0-3:x16 slow-rank=2:x4 slow-rank=2:x8}"
read -r -a probed <<<"${COLLKIT_BENCH_PROBE_FAULTS-slow-rank=2:x8}"  # also found by the probe (--detect probe)
max_size=${COLLKIT_BENCH_MAX_SIZE:-16M}
{
  echo "# Adapting to slow links and ranks: coll-run adapt"
  echo
  echo "$(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(nproc) cores, \`mpirun -np 4\` on one host;"
  echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Written by \`bench/adapt.sh\`; each block is"
  echo
  echo '```'
  echo "mpirun --oversubscribe -np 4 coll-run adapt --inject FAULTS -b 1M -e $max_size -f 4 -n 10 -w 3"
  echo '```'
  echo
  echo "The faults hold every message of a slowed pair back by (factor - 1) x its bytes at the pair's own"
  echo "rate (measured once, pair by pair, before any fault), each pair on its own: a slow rank's links are"
  echo "each slow, and a message on one does not wait for another. On this machine four processes share"
  echo "two cores and the copies through shared memory are not all that bounds a ring, so a 4x slower link"
  echo "costs the ring little."
  echo
  echo "Per size: the plain ring healthy (no faults); then, with the faults, a detection run of 12 iterations"
  echo "of the plain ring with every send timed (post to finished, us per MiB), the fastest message per pair"
  echo "kept; the pairs above the first natural break of their sorted times (a ratio over 1.5 and over the"
  echo "spread of the times below it) are named once two iterations agree (\"detected at iteration\"). The"
  echo "candidates (a ring order avoiding the named pairs; for a rank in two named pairs or more, the"
  echo "straggler-aware AllReduce around it, docs/algorithms.md) are predicted by the simulator with the"
  echo "slowdown put into the topology; those predicted faster run 3 trial iterations each, fastest first,"
  echo "and one is kept only when its best iteration beats the best of the plan it would replace by more than"
  echo "the noise, else rolled back (each decision printed); \"recovered at iteration\" is the first iteration"
  echo "of the plan finally kept. Then the plain ring (degraded) and the"
  echo "adapted plan are timed under the faults (-n 10 after -w 3), and the adapted plan verified and run once"
  echo "with every element checked (#wrong). recovered = (degraded - adapted) / (degraded - healthy); \"(no loss)\""
  echo "where degraded is within 10% of healthy."
  for f in "${faults[@]}"; do
    echo
    echo "## --inject $f"
    echo
    echo '```'
    mpirun --oversubscribe -np 4 "$bin/coll-run" adapt --inject "$f" -b 1M -e "$max_size" -f 4 -n 10 -w 3
    echo '```'
  done
  for f in "${probed[@]}"; do
    echo
    echo "## --inject $f --detect probe --probe-bytes 4M"
    echo
    echo "The same fault found the old way: each pair probed in turn (best of five) before any size."
    echo
    echo '```'
    mpirun --oversubscribe -np 4 "$bin/coll-run" adapt --inject "$f" --detect probe --probe-bytes 4M -b 1M -e "$max_size" -f 4 -n 10 -w 3
    echo '```'
  done
} >"$tmp/out.md"
mv "$tmp/out.md" "$out"
echo "wrote $out"
