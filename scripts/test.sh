#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test through ctest. With COLLKIT_SANITIZE=1
# (CI sets it) the unit tests are also built with clang and run once under AddressSanitizer + UBSan,
# and each loader's fuzz target runs briefly (docs/fuzz.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
./scripts/build.sh
(cd build && ctest --output-on-failure -j2 --timeout 300)

if [ "${COLLKIT_SANITIZE:-0}" = "1" ]; then
  echo "== unit tests and the loaders' fuzz targets under AddressSanitizer + UndefinedBehaviorSanitizer (clang)"
  # One build serves both: clang with COLLKIT_FUZZ=ON compiles collkit's code with ASan, UBSan and
  # libFuzzer's coverage instrumentation; only the fuzz_* targets link libFuzzer (docs/fuzz.md).
  # NDEBUG: Boost's push_relabel_max_flow asserts its flow conserves exactly (is_flow() compares
  # doubles with ==), which rounding breaks with real-valued capacities; the sanitizers need no
  # assert() to do their work. -O1 -g1 (line tables: the reports keep file and line) compiles in
  # half the time of -O2 -g, and the unit tests need no GPU code: this pass is CI's longest build.
  # This pass was GCC's before the fuzz targets: a build-asan configured with another compiler is
  # started afresh (CMake cannot switch a configured folder's compiler in one configure step).
  if [ -f build-asan/CMakeCache.txt ] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++' build-asan/CMakeCache.txt; then
    rm -rf build-asan
  fi
  fuzz_targets="fuzz_topology fuzz_nccl_xml fuzz_preset fuzz_template fuzz_plan fuzz_model fuzz_tuning fuzz_results"
  COLLKIT_BUILD_DIR=build-asan COLLKIT_TARGETS="collkit_unit_tests collkit_exec_unit_tests $fuzz_targets" \
    ./scripts/build.sh -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCOLLKIT_FUZZ=ON -DCOLLKIT_BUILD_BENCH=OFF \
    -DCOLLKIT_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" >/dev/null
  # The bound property holds on 200 random topologies in the pass above; here, where it is 3x
  # slower and the longest test (175 s at 40 topologies in CI beside other work, with AlltoAll's
  # flow LP), 20 of them give the sanitizers the same code paths. COLLKIT_SANITIZER_PASS: a few
  # tests run their smaller cases only (tests/unit/sanitizer_pass.h).
  (cd build-asan && COLLKIT_BOUND_CASES=20 COLLKIT_SANITIZER_PASS=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --output-on-failure -j2 -L 'unit|fuzz')
fi
