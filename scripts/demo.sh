#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs the pipeline as far as it exists:
# discover this machine, show it, then synthesise a 128-node DGX H100 cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh
./scripts/build.sh >/dev/null
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
echo "artifacts in $out/"
