#!/usr/bin/env bash
# README command 2, and CI (.ci/run): install dependencies, check formatting, then
#   1. Release build in build/ (scripts/build.sh) + ctest: every test, including
#      conformance.onnx_backend (the ONNX backend tests), the examples and the fuzz regression cases;
#      then scripts/check-deps.py: every file the demo's, the tests' and the sanitizer build's
#      configure and the Release build used comes from a package scripts/install-deps.sh installs
#   2. the Python package: pip install . into a venv (reusing build/'s objects), then its pytest
#      suite against the installed package (scripts/python-tests.sh)
#   3. clang ASan+UBSan build of the whole test suite and the libFuzzer targets in build-asan/,
#      then every test there (scripts/sanitize.sh); any sanitizer report fails
#   4. each libFuzzer target for REFOLD_FUZZ_SECONDS (default 60), the three at once (scripts/fuzz.sh)
# REFOLD_SANITIZERS=0 skips 3 and 4 (a quicker local run). Both builds are unity builds
# (REFOLD_UNITY_BUILD=OFF switches that off). Each stage prints its wall and CPU time. A fresh clone
# on 2 cores without ccache (CPU seconds; wall is about half on a quiet machine): Release build
# ~900, Release ctest ~95, ASan build ~800, ASan tests ~190, fuzz 60 s wall: about 18 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

# CPU seconds (user+sys) of this shell's finished children: /proc/PID/stat fields 16-17, in ticks.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' "/proc/$$/stat"; }
# stage NAME COMMAND...: runs COMMAND and prints how long it took, also when it fails.
stage() {
  local name=$1 t0=$SECONDS c0 rc=0
  shift
  c0=$(cpu_seconds)
  echo "test.sh: stage '${name}'"
  "$@" || rc=$?
  echo "test.sh: stage '${name}' took $((SECONDS - t0)) s wall, $(($(cpu_seconds) - c0)) s CPU" \
    "(user+sys)$( ((rc == 0)) || echo ", FAILED with exit code ${rc}")"
  return "$rc"
}

stage install-deps scripts/install-deps.sh
stage check-format scripts/check-format.sh
stage release-build scripts/build.sh
stage release-ctest ctest --test-dir build --output-on-failure -j "$(nproc)"
stage check-deps /usr/bin/python3 scripts/check-deps.py --build-dir build
stage python-tests scripts/python-tests.sh build
if [[ "${REFOLD_SANITIZERS:-1}" != "0" ]]; then
  stage asan-build scripts/sanitize.sh build-asan --build-only
  stage asan-tests scripts/sanitize.sh build-asan --test-only
  stage fuzz scripts/fuzz.sh build-asan "${REFOLD_FUZZ_SECONDS:-60}"
fi
echo "test.sh: all stages took ${SECONDS} s wall, $(cpu_seconds) s CPU (user+sys)"
