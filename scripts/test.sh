#!/usr/bin/env bash
# README command 2: install dependencies, build, check formatting, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/check-format.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
