#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the pipeline as far as it exists:
# discover this machine, show it, synthesise a 128-node DGX H100 cluster, plan an AllReduce on it,
# plan and run one with coll-run under mpirun on this machine, then predict overlap schedules for
# Llama-3 70B on two of its hosts.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== dependencies (Debian packages, scripts/setup-deps.sh)"
./scripts/setup-deps.sh
# The first build takes about 15 minutes on 2 cores: progress on one line (a line per 10% when
# not on a terminal), warnings and errors whole; the whole log in build/build.log.
echo "== building collkit into build/ (the first time about 15 minutes on 2 cores; log: build/build.log)"
mkdir -p build
tty=0
[ -t 1 ] && tty=1
if ! ./scripts/build.sh 2>&1 | tee build/build.log | awk -v tty=$tty -f scripts/build-progress.awk; then
  echo "demo: the build failed; its last lines (all of it in build/build.log):" >&2
  tail -20 build/build.log >&2
  exit 1
fi
bin=build/bin
out=${COLLKIT_DEMO_OUT:-out/demo}
mkdir -p "$out"

echo "== coll-topo discover: this machine"
$bin/coll-topo discover -o "$out/local.json"
$bin/coll-topo show "$out/local.json"

echo
echo "== coll-topo synth: 128 x DGX H100, rail-optimised fat-tree"
$bin/coll-topo synth --node dgx-h100 --nodes 128 --fabric fat-tree:rails=8,oversub=1 -o "$out/dgx-h100x128.json"
$bin/coll-topo show "$out/dgx-h100x128.json" --count 10

echo
echo "== coll-plan: the best 1 GiB AllReduce on it, with its lower bound"
$bin/coll-plan generate --topo "$out/dgx-h100x128.json" --coll allreduce --size 1G --algo hier -o "$out/plan-h100x128.json"

echo
echo "== coll-run: 4 ranks on this machine, ring and halving-doubling AllReduce against MPI_Allreduce"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun --oversubscribe -np 4 $bin/coll-run --coll allreduce --algo ring,rhd -b 64K -e 4M -f 8 -n 10 --json "$out/run.json"
echo
echo "== coll-overlap: Llama-3 70B, TP 8 + SP inside each host, DP 2 across two DGX H100"
$bin/coll-overlap --topo dgx-h100 --nodes 2 --model llama3-70b --tp 8 --sp --dp 2 --seq-len 8192 \
  --json "$out/overlap.json" --trace "$out/overlap.trace.json"
echo
echo "artifacts in $out/"
