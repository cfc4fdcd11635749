#!/usr/bin/python3
"""refold vs its peers on one ONNX model, side by side in one run (issue 5, performance targets).

    # once: a venv on Debian's interpreter (it keeps python3-torch / -onnx / -numpy) with the
    # two benchmark-only peers from PyPI (never test dependencies):
    /usr/bin/python3 -m venv --system-site-packages /tmp/peers-venv
    /tmp/peers-venv/bin/pip install onnxruntime openvino

    /tmp/peers-venv/bin/python bench/compare_peers.py                 # RepVGG-A0, training form
    /tmp/peers-venv/bin/python bench/compare_peers.py MODEL.onnx --torch none
    options: --refold build/tools/refold/refold  --threads 2  --runs 30  --rounds 6
             --warmup 5  --json OUT.json
    /usr/bin/python3 bench/compare_peers.py --self-test   # the JSON parsing only, no peers

Without MODEL, RepVGG-A0 in training form (real widths, batch 1, 224²) is written to
/tmp/refold_peers/repvgg_a0_train.onnx by `tests/data/make_onnx_models.py --large` (the same
model as tests/data/onnx_large/repvgg_a0_train.onnx), and PyTorch runs the very same
nn.Module (same seed, same weights) in eager mode.

Engines, each with default optimizations and the same thread count (2):
  pytorch      eager on the training-form nn.Module, channels_last model and input, no_grad,
               torch.set_num_threads(2) (only for the built-in model: --torch repvgg_a0)
  onnxruntime  InferenceSession on the file, CPUExecutionProvider, default graph optimizations
               (ORT_ENABLE_ALL), intra_op_num_threads=2, inter_op_num_threads=1
  openvino     core.compile_model(file, "CPU") with INFERENCE_NUM_THREADS=2 and
               INFERENCE_PRECISION_HINT=f32 (refold is compared in f32; on a bf16-capable CPU
               OpenVINO may otherwise pick bf16), everything else default
  refold       `refold bench MODEL --json --threads 2 --batch 1` in a subprocess; its JSON's
               `optimized_nhwc_ms_median` (any key naming optimized, nhwc and median is taken
               when the exact one is missing); refold times itself, so its figure is the median
               of its per-round medians.

Interleaving: after every engine's warm-up, `--rounds` rounds; in each round every engine runs
runs/rounds timed inferences (the order rotates each round), with a 50 ms pause between engines
so a peer's spinning worker threads are idle before the next one starts. Medians (and p90) are
over all ≥ 20 timed runs of an engine. Before timing, the engines' outputs on one input are
compared (max |a - b| against PyTorch, or against ONNX Runtime without PyTorch).

The table gives each engine's median, p90 and its ratio to PyTorch eager, then the issue's
targets: refold ≤ 0.6× PyTorch, and faster than ONNX Runtime and OpenVINO. A missing peer (not
installed, refold binary absent, refold bench failing) is a row that says why; the others run.
"""

import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAKE_MODELS = ROOT / "tests" / "data" / "make_onnx_models.py"
DEFAULT_MODEL = pathlib.Path("/tmp/refold_peers/repvgg_a0_train.onnx")
REFOLD_KEY = "optimized_nhwc_ms_median"


# ----------------------------------------------------------------------------------------------
# Inputs

def onnx_inputs(path, seed):
    """Random float inputs for the graph inputs that are not initializers (dynamic dims → 1)."""
    import onnx
    model = onnx.load(str(path), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1
                for d in value.type.tensor_type.shape.dim]
        if value.type.tensor_type.elem_type != 1:
            raise SystemExit(f"input '{value.name}': only float inputs are supported here")
        feeds[value.name] = rng.standard_normal(dims).astype(np.float32)
    return feeds


# ----------------------------------------------------------------------------------------------
# Engines: each is (name, run() -> list of np arrays) or an error string

def make_pytorch(kind, feeds, threads):
    if kind == "none":
        return "not run (--torch none: no nn.Module for this file)"
    import torch
    sys.path.insert(0, str(MAKE_MODELS.parent))
    import make_onnx_models as models  # the generator's own model and seed
    torch.set_num_threads(threads)
    model, _ = models.build("repvgg_a0_train", models.RepVGGA0)
    model = model.to(memory_format=torch.channels_last)
    (x,) = feeds.values()
    x = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)

    def run():
        with torch.no_grad():
            return [model(x).numpy()]
    return run


def make_onnxruntime(path, feeds, threads):
    try:
        import onnxruntime as ort
    except ImportError as e:
        return f"not installed ({e.name}): pip install onnxruntime"
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def run():
        return session.run(None, feeds)
    return run


def make_openvino(path, feeds, threads, precision):
    try:
        import openvino as ov
    except ImportError as e:
        return f"not installed ({e.name}): pip install openvino"
    core = ov.Core()
    compiled = core.compile_model(str(path), "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                     "INFERENCE_PRECISION_HINT": precision})
    request = compiled.create_infer_request()
    names = [port.get_any_name() for port in compiled.inputs]
    ordered = [feeds[n] for n in names]

    def run():
        request.infer(ordered)
        return [request.get_output_tensor(i).data.copy() for i in range(len(compiled.outputs))]
    return run


def parse_refold_json(text):
    """The JSON object refold printed (tolerant: text around it, several objects, nesting).
    Returns (median ms, p90 ms or None, the whole object) or (None, None, why)."""
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text[match.start():])
        except ValueError:
            continue
        median = find_number(obj, REFOLD_KEY, ("optimized", "nhwc", "median"))
        if median is not None:
            p90 = find_number(obj, REFOLD_KEY.replace("median", "p90"),
                              ("optimized", "nhwc", "p90"))
            return median, p90, obj
    return None, None, f"no '{REFOLD_KEY}' in refold's output: {text[-300:]!r}"


def find_number(obj, exact, words):
    """obj[exact] at the top level, else the first number (depth first) whose key path, e.g.
    "results.optimized.nhwc.median_ms", contains every word (any case)."""
    if isinstance(obj, dict) and isinstance(obj.get(exact), (int, float)) and \
            not isinstance(obj.get(exact), bool):
        return float(obj[exact])

    def walk(value, path):
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return float(value) if all(w in path.lower() for w in words) else None
        items = value.items() if isinstance(value, dict) else \
            enumerate(value) if isinstance(value, list) else ()
        for key, item in items:
            found = walk(item, f"{path}.{key}")
            if found is not None:
                return found
        return None
    return walk(obj, "")


def run_refold(binary, path, threads, timeout):
    command = [str(binary), "bench", str(path), "--json", "--threads", str(threads),
               "--batch", "1"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, None, f"{' '.join(command)}: {e}"
    if done.returncode != 0:
        return None, None, (f"{' '.join(command)} exited {done.returncode}: "
                            f"{(done.stderr or done.stdout).strip()[-300:]}")
    return parse_refold_json(done.stdout)


# ----------------------------------------------------------------------------------------------

def percentile(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def max_error(a, b):
    return max(float(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)).max())
               for x, y in zip(a, b))


def self_test():
    """The tolerant parsing of refold's JSON, on the shapes it may take (--self-test)."""
    cases = [
        ('[====] 100%\n{"optimized_nhwc_ms_median": 12.5, "optimized_nhwc_ms_p90": 13}\n',
         (12.5, 13.0)),
        ('{"runs": [{"form": "imported", "NCHW_median_ms": 20},'
         ' {"Optimized_NHWC_median_ms": 9}]}', (9.0, None)),
        ('{"optimized": {"nhwc": {"median_ms": 3, "p90_ms": 4}}, "imported": {"nchw": '
         '{"median_ms": 7}}}', (3.0, 4.0)),
        ('log {not json}\n{"a": 1}\n{"optimized_nhwc_ms_median": 5}', (5.0, None)),
        ('{"optimized_nhwc_ms_median": true}', (None, None)),
        ("no json at all", (None, None)),
    ]
    for text, expected in cases:
        got = parse_refold_json(text)[:2]
        assert got == expected, f"parse_refold_json({text!r}) = {got}, expected {expected}"
    print(f"self-test: {len(cases)} passed, 0 failed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", nargs="?", help="ONNX file (default: RepVGG-A0, generated)")
    parser.add_argument("--refold", default=str(ROOT / "build" / "tools" / "refold" / "refold"),
                        help="refold binary (default: build/tools/refold/refold)")
    parser.add_argument("--torch", choices=("repvgg_a0", "none"),
                        help="PyTorch eager model (default: repvgg_a0 for the generated model, "
                             "none for a given file)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=30, help="timed runs per engine (>= 20)")
    parser.add_argument("--rounds", type=int, default=6, help="interleaving rounds")
    parser.add_argument("--warmup", type=int, default=5, help="untimed runs per engine first")
    parser.add_argument("--ov-precision", default="f32", help="OpenVINO INFERENCE_PRECISION_HINT")
    parser.add_argument("--refold-timeout", type=float, default=600, help="seconds per call")
    parser.add_argument("--json", metavar="OUT", help="also write the results as JSON")
    args = parser.parse_args()
    if args.runs < 20:
        parser.error("--runs must be at least 20")
    rounds = max(1, min(args.rounds, args.runs))
    per_round = -(-args.runs // rounds)

    if args.model:
        path = pathlib.Path(args.model)
        torch_kind = args.torch or "none"
    else:
        path = DEFAULT_MODEL
        torch_kind = args.torch or "repvgg_a0"
        if not path.exists():
            print(f"generating {path} (make_onnx_models.py --large) …", flush=True)
            subprocess.run([sys.executable, str(MAKE_MODELS), "--large", str(path)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not path.exists():
        raise SystemExit(f"{path}: no such file")
    feeds = onnx_inputs(path, seed=0)
    if torch_kind != "none" and len(feeds) != 1:
        raise SystemExit("--torch repvgg_a0 needs a model with one input")

    engines = {
        "pytorch": make_pytorch(torch_kind, feeds, args.threads),
        "onnxruntime": make_onnxruntime(path, feeds, args.threads),
        "openvino": make_openvino(path, feeds, args.threads, args.ov_precision),
    }
    refold = pathlib.Path(args.refold)
    errors = {name: e for name, e in engines.items() if isinstance(e, str)}
    runners = {name: e for name, e in engines.items() if not isinstance(e, str)}
    if not refold.exists():
        errors["refold"] = f"binary not found: {refold} (--refold PATH)"

    # Same input, same function: compare outputs before timing anything.
    outputs = {name: run() for name, run in runners.items()}
    reference = "pytorch" if "pytorch" in outputs else next(iter(outputs), None)
    checks = {}
    for name, out in outputs.items():
        if name != reference:
            checks[name] = max_error(out, outputs[reference])
            scale = max(float(np.abs(o).max()) for o in outputs[reference])
            print(f"{name} vs {reference}: max |a - b| = {checks[name]:.3g} "
                  f"(max |{reference}| = {scale:.3g})")

    for run in runners.values():
        for _ in range(args.warmup):
            run()

    load_before = os.getloadavg()[0]
    samples = {name: [] for name in runners}
    refold_medians, refold_p90s, refold_reports = [], [], []
    order = list(runners) + ([] if "refold" in errors else ["refold"])
    for r in range(rounds):
        rotated = order[r % len(order):] + order[:r % len(order)] if order else []
        for name in rotated:
            time.sleep(0.05)  # let the previous engine's worker threads go idle
            if name == "refold":
                ms, p90, report = run_refold(refold, path, args.threads, args.refold_timeout)
                if ms is None:
                    errors["refold"] = report
                    order.remove("refold")
                else:
                    refold_medians.append(ms)
                    refold_p90s.append(p90 if p90 is not None else ms)
                    refold_reports.append(report)
                continue
            run = runners[name]
            for _ in range(per_round):
                start = time.perf_counter()
                run()
                samples[name].append((time.perf_counter() - start) * 1e3)
        print(f"round {r + 1}/{rounds} done", flush=True)

    results = {}
    for name, values in samples.items():
        results[name] = dict(median_ms=statistics.median(values), p90_ms=percentile(values, 0.9),
                             runs=len(values))
    if refold_medians and "refold" not in errors:
        results["refold"] = dict(median_ms=statistics.median(refold_medians),
                                 p90_ms=statistics.median(refold_p90s), runs=len(refold_medians),
                                 note="medians over the refold bench calls of its own median "
                                      "and p90 (its median where it printed no p90); runs = "
                                      "calls")
    torch_ms = results.get("pytorch", {}).get("median_ms")
    load = (load_before, os.getloadavg()[0])

    print()
    print(f"model: {path}  threads: {args.threads}  batch: 1  timed runs per engine: "
          f"{rounds * per_round} in {rounds} interleaved rounds")
    print(f"load average (1 min): {load[0]:.2f} before, {load[1]:.2f} after, on "
          f"{os.cpu_count()} CPUs")
    if max(load) > max(1, (os.cpu_count() or 1) - args.threads) + 0.5:
        print("WARNING: the machine was busy; times are inflated (PyTorch's OpenMP threads, "
              "which spin while waiting, suffer most): compare ratios, rerun when idle")
    header = f"{'engine':<14}{'median ms':>11}{'p90 ms':>10}{'runs':>6}{'vs PyTorch':>12}  note"
    print(header)
    print("-" * len(header))
    for name in ("pytorch", "onnxruntime", "openvino", "refold"):
        if name in results:
            res = results[name]
            ratio = f"{res['median_ms'] / torch_ms:.2f}x" if torch_ms else "n/a"
            res["ratio_vs_pytorch"] = res["median_ms"] / torch_ms if torch_ms else None
            note = f"output max |err| vs {reference} {checks[name]:.2g}" if name in checks else ""
            if name == "refold":
                note = "optimized NHWC f32 (refold bench --json)"
            print(f"{name:<14}{res['median_ms']:>11.2f}{res['p90_ms']:>10.2f}{res['runs']:>6}"
                  f"{ratio:>12}  {note}")
        else:
            print(f"{name:<14}{'-':>11}{'-':>10}{'-':>6}{'-':>12}  {errors.get(name, '')}")

    targets = {}
    if "refold" in results:
        ms = results["refold"]["median_ms"]
        if torch_ms:
            targets["refold <= 0.6x pytorch"] = ms <= 0.6 * torch_ms
        for peer in ("onnxruntime", "openvino"):
            if peer in results:
                targets[f"refold faster than {peer}"] = ms < results[peer]["median_ms"]
        print()
        for what, ok in targets.items():
            print(f"target: {what}: {'met' if ok else 'NOT met'}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            dict(model=str(path), threads=args.threads, load_average=load, results=results,
                 errors=errors, output_check=checks, targets=targets,
                 refold_reports=refold_reports),
            indent=2) + "\n")


if __name__ == "__main__":
    main()
