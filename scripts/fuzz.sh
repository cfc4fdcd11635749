#!/usr/bin/env bash
# Runs each libFuzzer target for SECONDS (default 60), the three at the same time, from its committed
# seed corpus fuzz/corpus/<target>/; prints each target's stats; fails when any target hits a crash,
# sanitizer report, leak, timeout (10 s for one input) or out-of-memory (2 GiB). The build dir is
# the sanitizer build (scripts/sanitize.sh configures it with REFOLD_BUILD_FUZZERS=ON, the same
# flags as here); the fuzz targets are built here if needed.
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS]          (default: build-asan 60)
# A crash leaves BUILD_DIR/fuzz/artifacts/<target>/crash-<sha1>. To make it a regression test:
#   BUILD_DIR/fuzz/<target> -minimize_crash=1 -runs=10000 -exact_artifact_path=small.bin crash-…
#   cp small.bin tests/data/fuzz_regressions/<target>/<what>.bin   (tests/fuzz/ loads each file)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-asan}
seconds=${2:-60}
targets=(onnx_load_fuzzer safetensors_fuzzer optimize_run_fuzzer)

if [[ ! -f "$build/CMakeCache.txt" ]] || ! grep -q '^REFOLD_BUILD_FUZZERS:BOOL=ON' "$build/CMakeCache.txt"; then
  scripts/sanitize.sh "$build" --configure-only  # the one sanitizer configuration
fi
cmake --build "$build" --target refold_fuzzers

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# The targets run at the same time (wall time SECONDS, not 3 x SECONDS); each writes its own log.
declare -A pids
for t in "${targets[@]}"; do
  work="$build/fuzz/corpus/$t"          # grows as the fuzzer finds inputs; the seeds stay as committed
  artifacts="$build/fuzz/artifacts/$t"
  mkdir -p "$work" "$artifacts"
  echo "fuzz: $t for ${seconds}s"
  "$build/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "fuzz/corpus/$t" \
    >"$build/fuzz/$t.log" 2>&1 &
  pids[$t]=$!
done
status=0
for t in "${targets[@]}"; do
  artifacts="$build/fuzz/artifacts/$t"
  if wait "${pids[$t]}"; then
    echo "fuzz: $t passed: $(grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' \
      "$build/fuzz/$t.log" | tr '\n' ' ')"
  else
    status=1
    tail -n 60 "$build/fuzz/$t.log"
    echo "fuzz: $t FAILED; reproducer(s): $(ls "$artifacts")"
  fi
done
exit "$status"
