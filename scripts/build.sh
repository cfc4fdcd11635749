#!/usr/bin/env bash
# Configures and builds refold (Release, warnings as errors).
#   scripts/build.sh [all|cli] [BUILD_DIR] [--configure-only]      (default: all build)
#     all   the library, the CLI, the tests, the benchmarks and the examples (scripts/test.sh)
#     cli   only the library and the `refold` CLI (scripts/demo.sh): no test dependency needed
# Both use the same build dir and flags, so `all` after `cli` reuses the library's objects.
# Unity build (several .cpp files per compiler run: a cold build in a fraction of the time) unless
# REFOLD_UNITY_BUILD=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
what=all
build=build
configure_only=0
for arg in "$@"; do
  case "$arg" in
    all | cli) what=$arg ;;
    --configure-only) configure_only=1 ;;
    -*) echo "build.sh: unknown option '$arg'" >&2; exit 2 ;;
    *) build=$arg ;;
  esac
done
extras=ON target=all
if [[ "$what" == cli ]]; then extras=OFF target=refold_cli; fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DREFOLD_WERROR=ON \
  -DREFOLD_UNITY_BUILD="${REFOLD_UNITY_BUILD:-ON}" -DREFOLD_BUILD_TESTS=$extras \
  -DREFOLD_BUILD_BENCHMARKS=$extras -DREFOLD_BUILD_EXAMPLES=$extras >/dev/null
((configure_only)) && exit 0
cmake --build "$build" --target "$target"
