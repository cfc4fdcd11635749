#!/usr/bin/env bash
# Fails when a C++ file differs from what clang-format (the checked-in .clang-format) makes it.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.h' '*.cpp')
if ((${#files[@]} == 0)); then exit 0; fi
clang-format --dry-run --Werror "${files[@]}"
echo "check-format: ${#files[@]} files formatted"
