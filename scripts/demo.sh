#!/usr/bin/env bash
# README command 1: install what the library and the CLI need, build only those, run `refold demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
scripts/build.sh cli
build/tools/refold/refold demo
