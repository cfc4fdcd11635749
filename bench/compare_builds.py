#!/usr/bin/env python3
"""Two or more refold builds (or environments) on one model, alternating, for a noisy host.

    python3 bench/compare_builds.py MODEL ROUNDS RUNS LABEL=[ENV:VALUE,...]@BINARY ...
    e.g.  python3 bench/compare_builds.py bench/zoo/models/resnet18.ts17.onnx 12 10 \\
              old=@/work/wt-old/build/tools/refold/refold new=@build/tools/refold/refold
    extra `refold bench` arguments: BENCH_EXTRA="--input-shape input=8x3x224x224"

Each round runs `BINARY bench MODEL --threads 2 --runs RUNS --variant optimized-nhwc --json`
once per arm, the order reversed every other round, and keeps each call's median. Reported per
arm: the median and minimum of those medians, and the median over rounds of the per-round ratio
to the first arm — on a host whose speed drifts between calls, the ratio of neighbours is the
fair comparison.
"""

import json
import os
import statistics
import subprocess
import sys


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    model, rounds, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    arms = []
    for arg in sys.argv[4:]:
        label, _, spec = arg.partition("=")
        envs, _, binary = spec.rpartition("@")
        env = dict(os.environ)
        for pair in filter(None, envs.split(",")):
            key, _, value = pair.partition(":")
            env[key] = value
        arms.append((label, binary, env))
    extra = os.environ.get("BENCH_EXTRA", "").split()
    medians = {label: [] for label, _, _ in arms}
    for r in range(rounds):
        for label, binary, env in (arms if r % 2 == 0 else arms[::-1]):
            done = subprocess.run(
                [binary, "bench", model, "--threads", "2", "--runs", str(runs), "--variant",
                 "optimized-nhwc", "--json", *extra], capture_output=True, text=True, env=env)
            if done.returncode != 0:
                sys.exit(f"{label}: {done.stderr.strip() or done.stdout.strip()}")
            medians[label].append(json.loads(done.stdout)["optimized_nhwc_ms_median"])
    base = arms[0][0]
    for label, values in medians.items():
        ratio = statistics.median(a / b for a, b in zip(values, medians[base]))
        print(f"{label:10s} median {statistics.median(values):8.3f} ms  min {min(values):8.3f}  "
              f"ratio vs {base} {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
