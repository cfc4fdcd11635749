#!/usr/bin/env bash
# README command 2: install dependencies, build, check formatting, run every test.
#   1. Release build + ctest in build/ (includes conformance.onnx_backend, the ONNX backend tests)
#   2. clang ASan+UBSan build + ctest in build-asan/ (scripts/sanitize.sh)
#   3. each libFuzzer target for REFOLD_FUZZ_SECONDS (default 60) from fuzz/corpus/ (scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/check-format.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
scripts/sanitize.sh build-asan
scripts/fuzz.sh build-asan "${REFOLD_FUZZ_SECONDS:-60}"
