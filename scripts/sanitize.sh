#!/usr/bin/env bash
# Builds the whole test suite (and the libFuzzer targets) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/ (or $1), then runs ctest there. Any sanitizer report
# aborts the test that hit it (-fno-sanitize-recover=all), so any report fails this script.
#   scripts/sanitize.sh [BUILD_DIR] [--build-only | --test-only]
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
  cmake --build "$build"
fi
[[ "$what" == "--build-only" ]] && exit 0
# detect_leaks: a leak is a report too. halt_on_error/abort: the first report ends the test.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -E '^install\.find_package_consumer$'
