#!/usr/bin/env bash
# Configures and builds refold in ./build (Release, warnings as errors, benchmarks and examples
# included). Unity build (several .cpp files per compiler run: a cold build in a fraction of the
# time) unless REFOLD_UNITY_BUILD=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DREFOLD_WERROR=ON \
  -DREFOLD_UNITY_BUILD="${REFOLD_UNITY_BUILD:-ON}" >/dev/null
cmake --build build
