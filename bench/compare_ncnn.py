#!/usr/bin/env python3
"""refold against ncnn (PyPI `ncnn` + `pnnx`) on timm models, side by side in one run.

    python=$(bench/zoo/setup.sh)                                       # once
    $python bench/compare_ncnn.py --refold build/tools/refold/refold repvgg_a0 mobileone_s0

For each model, pnnx converts the same timm module twice (batch 1, 3x224x224): its training form
and timm's hand-made deploy form (reparameterize_model; pnnx, like the other converters, merges
no branches itself). refold runs the zoo's TorchScript export of the training form
(bench/zoo/models/<name>.ts17.onnx, bench/zoo/export.py), optimized, its NHWC model back to
back (`refold bench --variant optimized-nhwc`). Rounds interleave the three, the order rotating;
each engine runs --runs/--rounds times per round, in a process of its own, 2 threads; the
median of its per-round medians. Weights are random: the time does not depend on their values.
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np


def convert(name, work):
    """pnnx's ncnn files for the training and the deploy form: {form: (param, bin)}."""
    import pnnx
    import timm
    import torch
    from timm.utils.model import reparameterize_model

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    x = torch.randn(1, 3, 224, 224)
    files = {}
    for form, module in (("train", model), ("deploy", reparameterize_model(model).eval())):
        stem = work / f"{name}_{form}"
        param, weights = pathlib.Path(f"{stem}.ncnn.param"), pathlib.Path(f"{stem}.ncnn.bin")
        if not param.exists():
            pnnx.export(module, f"{stem}.pt", (x,))
        files[form] = (param, weights)
    return files


def ncnn_runner(param, weights, threads):
    import ncnn

    net = ncnn.Net()
    net.opt.num_threads = threads
    net.opt.use_vulkan_compute = False
    net.load_param(str(param))
    net.load_model(str(weights))
    inputs, outputs = net.input_names(), net.output_names()
    x = ncnn.Mat(np.random.default_rng(0).standard_normal((3, 224, 224), np.float32))

    def run():
        ex = net.create_extractor()
        ex.input(inputs[0], x)
        _, out = ex.extract(outputs[0])
        return out

    return run


def ncnn_median(param, weights, threads, runs):
    """ncnn in a process of its own (`--worker`): its OpenMP threads keep spinning after a run,
    and spinning threads beside refold's cost refold a scheduler slice per barrier
    (docs/threads.md)."""
    done = subprocess.run([sys.executable, __file__, "--worker", str(param), str(weights),
                           str(threads), str(runs)], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def worker(param, weights, threads, runs):
    run = ncnn_runner(param, weights, threads)
    for _ in range(3):
        run()
    ms = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        ms.append((time.perf_counter() - start) * 1e3)
    print(statistics.median(ms))


def refold_median(refold, path, threads, runs):
    done = subprocess.run([refold, "bench", str(path), "--threads", str(threads), "--runs",
                           str(runs), "--json", "--variant", "optimized-nhwc"],
                          capture_output=True, text=True, check=True)
    return float(json.loads(done.stdout)["optimized_nhwc_ms_median"])


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--refold", default="build/tools/refold/refold")
    parser.add_argument("--zoo", default="bench/zoo/models")
    parser.add_argument("--work", default="/tmp/refold-ncnn")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    per_round = max(1, -(-args.runs // args.rounds))
    print("| model | ncnn, training form ms | ncnn, deploy form ms | refold, training-form ONNX ms "
          "| refold / ncnn deploy |")
    print("|---|---|---|---|---|")
    for name in args.models:
        files = convert(name, work)
        onnx = pathlib.Path(args.zoo) / f"{name}.ts17.onnx"
        medians = {"train": [], "deploy": [], "refold": []}
        order = list(medians)
        for r in range(args.rounds):
            for engine in order[r % len(order):] + order[:r % len(order)]:
                time.sleep(0.2)  # the previous process's threads are gone
                if engine == "refold":
                    medians[engine].append(refold_median(args.refold, onnx, args.threads,
                                                         per_round))
                else:
                    medians[engine].append(ncnn_median(*files[engine], args.threads, per_round))
        train, deploy, ours = (statistics.median(medians[k]) for k in order)
        print(f"| {name} | {train:.2f} | {deploy:.2f} | {ours:.2f} | {ours / deploy:.2f} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
