#!/usr/bin/env bash
# Runs the ONNX backend tests (Debian's libonnx-testdata: node/, pytorch-converted/,
# pytorch-operator/, simple/) through `refold test`, skipping what tests/conformance/SKIPPED.md
# lists, prints pass/fail/skip per op type and `N passed, M failed, K skipped`, and fails when a
# test not in SKIPPED.md fails.
#   scripts/conformance.sh [BUILD_DIR]      (default: build; needs BUILD_DIR/tools/refold/refold)
# A test counts once for each op type its model holds (tests/conformance/test_ops.txt).
# Refresh the skip list with tests/conformance/update_skipped.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
refold="$build/tools/refold/refold"
data=${REFOLD_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
skipped=tests/conformance/SKIPPED.md
ops=tests/conformance/test_ops.txt
[[ -x "$refold" ]] || { echo "conformance: no $refold; build refold_cli first" >&2; exit 2; }
[[ -d "$data/node" ]] || { echo "conformance: no $data/node; run scripts/install-deps.sh" >&2; exit 2; }

dirs=()
for suite in node pytorch-converted pytorch-operator simple; do
  for d in "$data/$suite"/*/; do [[ -f "$d/model.onnx" ]] && dirs+=("$d"); done
done

results=$(mktemp)
trap 'rm -f "$results"' EXIT
status=0
"$refold" test -v --skip-list "$skipped" "${dirs[@]}" >"$results" || status=$?

# Per op type: PASS/FAIL/SKIP lines joined with the test's op types (unknown: from the name).
awk -v ops="$ops" '
  BEGIN { while ((getline line < ops) > 0) { n = split(line, f, " "); key = f[1]; types[key] = "";
          for (i = 2; i <= n; ++i) types[key] = types[key] " " f[i] } }
  /^(PASS|FAIL|SKIP) / {
    name = $2; sub(/:$/, "", name)
    list = (name in types && types[name] != "") ? types[name] : " (" name ")"
    n = split(substr(list, 2), op_of, " ")
    for (i = 1; i <= n; ++i) { seen[op_of[i]] = 1; count[op_of[i], $1]++ }
  }
  END {
    printf "%-28s %6s %6s %6s\n", "op type", "pass", "fail", "skip"
    for (op in seen) printf "%-28s %6d %6d %6d\n", op, count[op, "PASS"], count[op, "FAIL"], count[op, "SKIP"] | "sort"
  }' "$results"
echo
grep '^FAIL ' "$results" || true
tail -1 "$results"

# Known failures that pass now: say so, so that SKIPPED.md gets refreshed.
known=$(sed -n '/^## Known failures/,$s/^- `\([^`]*\)`.*/\1/p' "$skipped")
if [[ -n "$known" ]]; then
  declare -A dir_of
  for d in "${dirs[@]}"; do n=${d%/}; dir_of[${n##*/}]=$d; done
  fixed=()
  while read -r name; do
    d=${dir_of[$name]:-}
    if [[ -n "$d" ]] && "$refold" test "$d" >/dev/null 2>&1; then fixed+=("$name"); fi
  done <<<"$known"
  if ((${#fixed[@]})); then
    echo "conformance: ${#fixed[@]} known failures pass now (run tests/conformance/update_skipped.sh): ${fixed[*]}"
  fi
fi
exit "$status"
