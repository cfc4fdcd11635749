#!/usr/bin/env python3
"""Peak resident memory of refold and ONNX Runtime on the same ONNX files, each engine in a
fresh process of its own.

    python=$(bench/zoo/setup.sh)
    $python bench/compare_memory.py --refold-build build    # python/refold + the build's extension
    $python bench/compare_memory.py --refold-package DIR    # or an installed package's directory
    options: --models DIR (bench/zoo/models)  --form ts17  --only a,b  --threads 2  --runs 10
             --repeats 3  --md FILE  --json FILE

Per model and engine, a child process imports the engine and numpy, reads its resident set
(VmRSS), makes the session (refold.Session: load and optimize; onnxruntime.InferenceSession with
ORT_ENABLE_ALL on the CPU provider, its default arena), runs the model's saved input `--runs`
times and reads its high-water mark (VmHWM) and its resident set again. "model MB" is the peak
minus the resident set after the imports: what loading, optimizing and running the model cost at
their highest, without the interpreter and the engine's own code, which differ between the two;
"steady MB" is the resident set after the runs minus that after the imports: what the loaded
model keeps while it serves. Both children are the same Python, so the
totals are comparable too. The median of --repeats runs per engine, the engines alternating.
refold's package is given as its directory, or assembled from the sources' python/refold and a
build's extension module, so that it runs on this interpreter's numpy and nothing else of
refold's build venv.
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ENGINES = ("refold", "onnxruntime")


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(engine, path, input_path, threads, runs):
    import numpy as np
    if engine == "refold":
        import refold
    else:
        import onnxruntime as ort
    x = np.load(input_path)
    after_import = status_kb("VmRSS")
    if engine == "refold":
        session = refold.Session(path, threads=threads)
        run = lambda: session.run(None, [x])  # noqa: E731
    else:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feeds = {session.get_inputs()[0].name: x}
        run = lambda: session.run(None, feeds)  # noqa: E731
    for _ in range(runs):
        run()
    print(json.dumps({"after_import_kb": after_import, "peak_kb": status_kb("VmHWM"),
                      "after_runs_kb": status_kb("VmRSS")}))


def measure(engine, path, input_path, args, package_dir):
    env = dict(os.environ)
    if engine == "refold":
        env["PYTHONPATH"] = package_dir + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, __file__, "--child", engine, str(path), str(input_path),
         str(args.threads), str(args.runs)],
        capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return {"error": lines[-1] if lines else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--refold-package", help="the directory of refold's Python package")
    parser.add_argument("--refold-build", help="a build folder with python/_refold*.so")
    parser.add_argument("--models", default=str(HERE / "zoo" / "models"))
    parser.add_argument("--form", default="ts17")
    parser.add_argument("--only", default="")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--md")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.child:
        engine, path, input_path, threads, runs = args.child
        child(engine, path, input_path, int(threads), int(runs))
        return 0
    # A directory holding only the package: refold imports from it, nothing else of its venv.
    holder = pathlib.Path(tempfile.mkdtemp(prefix="refold-package-"))
    if args.refold_package:
        if not (pathlib.Path(args.refold_package) / "__init__.py").exists():
            parser.error("--refold-package must name refold's package directory (__init__.py)")
        os.symlink(pathlib.Path(args.refold_package).resolve(), holder / "refold")
    elif args.refold_build:
        modules = list((pathlib.Path(args.refold_build) / "python").glob("_refold*.so"))
        if not modules:
            parser.error(f"no python/_refold*.so in {args.refold_build} (build with Python on)")
        package = holder / "refold"
        package.mkdir()
        for source in [*(HERE.parent / "python" / "refold").iterdir(), modules[0]]:
            if source.is_file():
                os.symlink(source.resolve(), package / source.name)
    else:
        parser.error("give --refold-build BUILD or --refold-package DIR")
    holder = str(holder)

    models = pathlib.Path(args.models)
    only = {m for m in args.only.split(",") if m}
    names = sorted(p.name[:-len(f".{args.form}.onnx")] for p in models.glob(f"*.{args.form}.onnx"))
    rows = []
    for name in names:
        if only and name not in only:
            continue
        path, input_path = models / f"{name}.{args.form}.onnx", models / f"{name}.input.npy"
        if not input_path.exists():
            continue
        samples = {engine: [] for engine in ENGINES}
        errors = {}
        for r in range(args.repeats):
            for engine in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
                m = measure(engine, path, input_path, args, holder)
                if "error" in m:
                    errors[engine] = m["error"]
                else:
                    samples[engine].append(m)
        row = {"model": name, "errors": errors}
        for engine, ms in samples.items():
            if ms:
                row[engine] = {
                    "peak_mb": statistics.median(m["peak_kb"] for m in ms) / 1024,
                    "model_mb": statistics.median(m["peak_kb"] - m["after_import_kb"]
                                                  for m in ms) / 1024,
                    "steady_mb": statistics.median(m["after_runs_kb"] - m["after_import_kb"]
                                                   for m in ms) / 1024,
                }
        if "refold" in row and "onnxruntime" in row:
            row["model_ratio"] = row["refold"]["model_mb"] / row["onnxruntime"]["model_mb"]
            row["steady_ratio"] = row["refold"]["steady_mb"] / row["onnxruntime"]["steady_mb"]
        rows.append(row)
        print(json.dumps(row), flush=True)

    lines = ["| model | refold model MB | ORT model MB | refold / ORT | refold steady MB | "
             "ORT steady MB | refold / ORT | refold peak MB | ORT peak MB |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        cell = lambda e, k: f"{row[e][k]:.1f}" if e in row else "error"  # noqa: E731
        ratio = lambda k: f"{row[k]:.2f}" if k in row else "—"  # noqa: E731
        lines.append(f"| {row['model']} | {cell('refold', 'model_mb')} | "
                     f"{cell('onnxruntime', 'model_mb')} | {ratio('model_ratio')} | "
                     f"{cell('refold', 'steady_mb')} | {cell('onnxruntime', 'steady_mb')} | "
                     f"{ratio('steady_ratio')} | "
                     f"{cell('refold', 'peak_mb')} | {cell('onnxruntime', 'peak_mb')} |")
    for key, what in (("model_ratio", "model MB (peak)"), ("steady_ratio", "steady MB")):
        ratios = [row[key] for row in rows if key in row]
        if ratios:
            lines.append(f"\ngeometric mean of refold / ORT {what}: "
                         f"{statistics.geometric_mean(ratios):.2f}; "
                         f"{sum(r > 1 for r in ratios)} of {len(ratios)} models above 1")
    table = "\n".join(lines)
    print(table)
    if args.md:
        pathlib.Path(args.md).write_text(table + "\n")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
