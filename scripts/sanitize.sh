#!/usr/bin/env bash
# Builds the whole test suite (and the libFuzzer targets) with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/ (or $1), then runs ctest there. Any sanitizer report
# aborts the test that hit it (-fno-sanitize-recover=all), so any report fails this script.
#   scripts/sanitize.sh [BUILD_DIR]
# Excluded: install.find_package_consumer — it configures and builds a separate consumer project
# with the default compiler and no sanitizer flags against the sanitized static library, which
# cannot link (undefined __asan_*/__ubsan_* symbols); it checks packaging, not memory safety, and
# the Release run covers it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# -O1: sanitized code at -O0 is several times slower to run; -gline-tables-only: reports name
# file:line without full debug info's link time.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Sanitize \
  -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -gline-tables-only" -DREFOLD_SANITIZE=address,undefined \
  -DREFOLD_BUILD_FUZZERS=ON -DREFOLD_BUILD_BENCHMARKS=OFF -DREFOLD_BUILD_EXAMPLES=OFF \
  "${launcher[@]}" >/dev/null
cmake --build "$build"
# detect_leaks: a leak is a report too. halt_on_error/abort: the first report ends the test.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -E '^install\.find_package_consumer$'
