#!/usr/bin/python3
"""RepVGG-A0 deploy form: refold vs PyTorch eager, same network, weights, input and threads,
timed in the same run (issue 3, target 2: refold NHWC f32 <= 0.85x PyTorch channels_last).

  /usr/bin/python3 bench/compare_torch.py --bench build-d-bench/bench/repvgg_a0_bench

1. `repvgg_a0_bench --export=DIR` writes refold's deploy weights (state_dict names, e.g.
   stage1.0.rbr_reparam.weight) and an input with refold's output for it.
2. The same net is built in PyTorch from those names (22 x [Conv2d 3x3 pad 1 + ReLU], the first
   block of each stage stride 2, AdaptiveAvgPool2d(1), Flatten, Linear), loaded with the weights
   (safetensors parsed here with json + numpy: an 8-byte little-endian header size, a JSON header,
   raw little-endian data), converted to channels_last, run under torch.no_grad(); its output
   is compared with refold's.
3. Timing, interleaved in rounds: PyTorch `--reps` repetitions, then refold's benchmark binary
   (subprocess, Google Benchmark, `--reps` repetitions, its median), then the next round. One
   PyTorch repetition = mean time per forward over >= --min-time seconds, as Google Benchmark
   measures a repetition. Prints each side's median (and p90 for PyTorch) and the ratio
   refold / PyTorch.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "BF16": None}


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[base + begin:base + end]
        if info["dtype"] == "BF16":  # widen: bf16 is the top half of a float32
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=np.dtype(DTYPES[info["dtype"]]).newbyteorder("<"))
        tensors[name] = torch.from_numpy(arr.reshape(info["shape"]).copy())
    return tensors


def build_torch_model(weights):
    """The deploy net from refold's state_dict names."""
    pattern = re.compile(r"^(stage\d)(?:\.(\d+))?\.rbr_reparam\.weight$")
    convs = []
    for name in weights:
        m = pattern.match(name)
        if m:
            stage = int(m.group(1)[5:])
            index = int(m.group(2)) if m.group(2) is not None else 0
            convs.append((stage, index, name[: -len(".weight")]))
    convs.sort()
    layers = []
    state = {}
    for stage, index, prefix in convs:
        w = weights[prefix + ".weight"]
        conv = torch.nn.Conv2d(w.shape[1], w.shape[0], 3, stride=2 if index == 0 else 1, padding=1)
        state[f"{len(layers)}.weight"] = w
        state[f"{len(layers)}.bias"] = weights[prefix + ".bias"]
        layers += [conv, torch.nn.ReLU()]
    lw = weights["linear.weight"]
    layers += [torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
               torch.nn.Linear(lw.shape[1], lw.shape[0])]
    state[f"{len(layers) - 1}.weight"] = lw
    state[f"{len(layers) - 1}.bias"] = weights["linear.bias"]
    model = torch.nn.Sequential(*layers)
    model.load_state_dict(state)
    return model.eval(), len(convs)


def p90(values):
    s = sorted(values)
    return s[max(math.ceil(0.9 * len(s)), 1) - 1]


def time_torch(model, x, reps, min_time):
    times = []
    with torch.no_grad():
        for _ in range(reps):
            n, start = 0, time.perf_counter()
            while True:
                model(x)
                n += 1
                elapsed = time.perf_counter() - start
                if elapsed >= min_time:
                    break
            times.append(elapsed / n * 1e3)
    return times


def time_refold(bench, layout, batch, threads, reps):
    name = f"RepVGG_A0_deploy/f32/{layout}/batch:{batch}/threads:{threads}"
    out = subprocess.run(
        [bench, f"--benchmark_filter=^{name}/", f"--benchmark_repetitions={reps}",
         "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    rows = {b["aggregate_name"]: b for b in json.loads(out)["benchmarks"]
            if b.get("run_type") == "aggregate"}
    return rows["median"]["real_time"], rows["p90"]["real_time"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build-d-bench/bench/repvgg_a0_bench")
    ap.add_argument("--workdir", default="/tmp/refold_compare_torch")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--min-time", type=float, default=0.5)
    args = ap.parse_args()

    subprocess.run([args.bench, f"--export={args.workdir}"], check=True, capture_output=True)
    weights = load_safetensors(os.path.join(args.workdir, "repvgg_a0_deploy.safetensors"))
    io = load_safetensors(os.path.join(args.workdir, "repvgg_a0_io.safetensors"))
    model, n_convs = build_torch_model(weights)
    torch.set_num_threads(args.threads)
    model = model.to(memory_format=torch.channels_last)
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {n_convs} convs, "
          f"batch {args.batch}, channels_last, no_grad")

    with torch.no_grad():
        y = model(io["input"].contiguous(memory_format=torch.channels_last))
    ref = io["output"]
    diff = (y - ref).abs().max().item()
    bound = 1e-4 * max(1.0, ref.abs().max().item())
    print(f"outputs: max|torch - refold| = {diff:.3g} (max|refold| {ref.abs().max().item():.3g}; "
          f"{'within' if diff <= bound else 'OUTSIDE'} 1e-4*max(1, max|ref|) = {bound:.3g})")

    x = torch.randn(args.batch, 3, 224, 224).contiguous(memory_format=torch.channels_last)
    with torch.no_grad():
        for _ in range(3):
            model(x)
    torch_times, refold_medians, refold_p90s = [], [], []
    for r in range(args.rounds):
        t = time_torch(model, x, args.reps, args.min_time)
        m, p = time_refold(args.bench, "nhwc", args.batch, args.threads, args.reps)
        torch_times += t
        refold_medians.append(m)
        refold_p90s.append(p)
        print(f"round {r + 1}: torch median {np.median(t):.2f} ms (p90 {p90(t):.2f}), "
              f"refold nhwc median {m:.2f} ms (p90 {p:.2f}), ratio refold/torch "
              f"{m / np.median(t):.3f}")
    tm = float(np.median(torch_times))
    rm = float(np.median(refold_medians))
    print(f"overall: torch channels_last median {tm:.2f} ms, refold NHWC median {rm:.2f} ms, "
          f"ratio refold/torch {rm / tm:.3f} (target <= 0.85)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
