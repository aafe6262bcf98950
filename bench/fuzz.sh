#!/usr/bin/env bash
# Every loader's fuzz target (fuzz/, docs/fuzz.md) for FUZZ_RUNS executions (1,000,000), each
# capped at FUZZ_MAX_SECONDS of wall time (600): on a loaded 2-core machine under ASan+UBSan a
# target may not reach the million in that time, and the table says what it reached. Targets run
# one after another, single-process, seeded from <build>/fuzz/seeds/<target>/ (copied there at
# configure time) and growing <build>/fuzz/corpus/<target>/. A crash, sanitizer report, leak,
# timeout (-timeout=25 s for one input) or memory blow-up (-rss_limit_mb=2048) stops that target;
# its reproducer is kept as <build>/fuzz/crash-<target>-*. Writes results/fuzz.md.
# Usage: bench/fuzz.sh [build dir (build-asan)] [out.md]; it configures and builds the build dir as
# scripts/test.sh's sanitizer pass does (clang, COLLKIT_FUZZ=ON).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
out=${2:-results/fuzz.md}
runs=${FUZZ_RUNS:-1000000}
cap=${FUZZ_MAX_SECONDS:-600}
targets=${FUZZ_TARGETS:-"topology nccl_xml preset template plan model tuning results"}

fuzz_targets=""
for t in $targets; do fuzz_targets+=" fuzz_$t"; done
# The configuration of scripts/test.sh's sanitizer pass: this builds only what is out of date there.
# FUZZ_NO_BUILD=1 runs the targets as they are built.
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' "$build/CMakeCache.txt"; then
    echo "$build is configured with another compiler than clang: give another build dir, or remove it" >&2
    exit 1
  fi
  COLLKIT_BUILD_DIR=$build COLLKIT_TARGETS="$fuzz_targets" ./scripts/build.sh -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCOLLKIT_FUZZ=ON -DCOLLKIT_BUILD_BENCH=OFF -DCOLLKIT_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" >/dev/null
fi

commit=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- libs fuzz || echo "+changes")
rows=()
total_crashes=0
for t in $targets; do
  log="$build/fuzz/bench-$t.log"
  echo "== fuzz_$t: $runs runs, at most $cap s" >&2
  start=$(date +%s)
  rc=0
  (cd "$build/fuzz" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ../bin/fuzz_$t -runs="$runs" -max_total_time="$cap" \
    -seed=1 -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="crash-$t-" "corpus/$t" "seeds/$t") >"$log" 2>&1 || rc=$?
  secs=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  crashes=0
  what=""
  if [ "$rc" != 0 ]; then
    crashes=1
    what=$(grep -m1 -E '^==[0-9]+==ERROR|runtime error|deadly signal|ALARM|out-of-memory|leak' "$log" | sed 's/|/\\|/g' | cut -c1-120 || true)
    [ -n "$what" ] || what="exit $rc"
    tail -30 "$log" >&2
  fi
  total_crashes=$((total_crashes + crashes))
  reached="yes"
  [ "${execs:-0}" -ge "$runs" ] || reached="no (time cap)"
  corpus=$(find "$build/fuzz/corpus/$t" -type f | wc -l)
  rows+=("| $t | ${execs:-?} | $reached | $crashes${what:+ ($what)} | $secs | ${rate:-?} | $corpus |")
  echo "   ${execs:-?} executions in $secs s, crashes $crashes" >&2
done

{
  echo "# Fuzzing the loaders"
  echo
  echo "\`bench/fuzz.sh\` (docs/fuzz.md): each loader's libFuzzer target for up to $runs executions or $cap s,"
  echo "whichever comes first, under ASan+UBSan (clang $(clang++ --version | sed -n 's/.*clang version \([0-9.]*\).*/\1/p;q'), -O1), one at a time, seeded"
  echo "from tests/fixtures, configs/, docs/examples and fuzz/corpus. Commit $commit, $(date -u '+%Y-%m-%d %H:%M UTC'),"
  echo "$(nproc) cores, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)."
  echo
  echo "| target | executions | reached $runs | crashes | seconds | exec/s | corpus files at the end |"
  echo "| --- | ---: | --- | --- | ---: | ---: | ---: |"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Crashes in all: $total_crashes."
} >"$out"
echo "wrote $out" >&2
[ "$total_crashes" = 0 ]
