#!/usr/bin/env bash
# Builds the whole test suite (and the libFuzzer targets) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/ (or $1), then runs every test there (the GoogleTest
# suite in shards, the rest through ctest). Any sanitizer report aborts the process that hit it
# (-fno-sanitize-recover=all), so any report fails this script.
#   scripts/sanitize.sh [BUILD_DIR] [--configure-only | --build-only | --test-only]
# Excluded: install.find_package_consumer — it configures and builds a separate consumer project
# with the default compiler and no sanitizer flags against the sanitized static library, which
# cannot link (undefined __asan_*/__ubsan_* symbols); it checks packaging, not memory safety, and
# the Release run covers it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
what=${2:-}
if [[ "$what" != "--test-only" ]]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  # -O1 for the library and the CLI: sanitized code at -O0 runs several times slower, and the tests
  # spend their time in the library. The tests' own code is compiled at -O0
  # (REFOLD_TEST_COMPILE_OPTIONS): it runs little, and clang -O1 with ASan costs 2.5x the compile
  # time of -O0 there. -gline-tables-only: reports name file:line without full debug info's cost.
  # Unity build (REFOLD_UNITY_BUILD, on unless set to OFF): several .cpp files per compiler run.
  # Benchmarks and examples are built in the Release build only.
  cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Sanitize \
    -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" -DREFOLD_SANITIZE=address,undefined \
    -DREFOLD_TEST_COMPILE_OPTIONS=-O0 -DREFOLD_UNITY_BUILD="${REFOLD_UNITY_BUILD:-ON}" \
    -DREFOLD_BUILD_FUZZERS=ON -DREFOLD_BUILD_BENCHMARKS=OFF -DREFOLD_BUILD_EXAMPLES=OFF \
    "${launcher[@]}" >/dev/null
  [[ "$what" == "--configure-only" ]] && exit 0
  cmake --build "$build"
fi
[[ "$what" == "--build-only" ]] && exit 0
# detect_leaks: a leak is a report too. halt_on_error/abort: the first report ends the test.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The GoogleTest suite (ctest label gtest) runs in-process, in 2 x nproc gtest shards at once: one
# sanitized process start per shard instead of one per test (~0.2 s each under ASan, 1100 tests:
# half of ctest's CPU time). Every test still runs; a report aborts its shard and fails this script.
# Like ctest, each shard runs in BUILD_DIR/tests.
shards=$((2 * $(nproc)))
tests_dir=$(cd "$build/tests" && pwd)
pids=()
for ((i = 0; i < shards; i++)); do
  (cd "$tests_dir" && GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i exec timeout 1800 \
    ./refold_tests >"shard-$i.log" 2>&1) &
  pids+=($!)
done
status=0
for ((i = 0; i < shards; i++)); do
  log="$tests_dir/shard-$i.log"
  if wait "${pids[i]}"; then
    echo "sanitize: shard $((i + 1))/$shards: $(grep -E '^\[==========\] .* ran' "$log")"
  else
    status=1
    tail -n 120 "$log"
    echo "sanitize: shard $((i + 1))/$shards FAILED (whole log: $log)"
  fi
done
# The other tests (conformance.onnx_backend) through ctest.
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -LE '^gtest$' \
  -E '^install\.find_package_consumer$' || status=1
exit "$status"
