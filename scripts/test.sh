#!/usr/bin/env bash
# README command 2: install dependencies, build, check formatting, run every test.
#   1. Release build + ctest in build/ (includes conformance.onnx_backend, the ONNX backend
#      tests, and the fuzz regression cases)
#   With REFOLD_SANITIZERS=1 also (not yet in CI: a clang ASan+UBSan build of the whole suite
#   costs ~25 more minutes on 2 cores; see issue 6's note):
#   2. clang ASan+UBSan build + ctest in build-asan/ (scripts/sanitize.sh)
#   3. each libFuzzer target for REFOLD_FUZZ_SECONDS (default 60) from fuzz/corpus/ (scripts/fuzz.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/check-format.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
if [[ "${REFOLD_SANITIZERS:-0}" == "1" ]]; then
  scripts/sanitize.sh build-asan
  scripts/fuzz.sh build-asan "${REFOLD_FUZZ_SECONDS:-60}"
fi
