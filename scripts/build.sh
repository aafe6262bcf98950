#!/usr/bin/env bash
# Configures and builds collkit into build/ (or $COLLKIT_BUILD_DIR). Arguments go to the cmake
# configure step; $COLLKIT_TARGETS (space-separated) limits what is built.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${COLLKIT_BUILD_DIR:-build}
jobs=${COLLKIT_JOBS:-$(nproc)}
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -DCOLLKIT_WERROR=ON "$@" >"$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; exit 1; }
grep '^-- collkit:' "$build_dir/configure.log" || true
targets=()
for t in ${COLLKIT_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$jobs" "${targets[@]}"
