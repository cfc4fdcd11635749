#!/usr/bin/env python3
"""Runs refold on the model zoo written by bench/zoo/export.py and tabulates what works.

    $python bench/zoo/export.py                  # once (python=$(bench/zoo/setup.sh))
    $python bench/zoo/run.py                     # every model, every form
    $python bench/zoo/run.py --only resnet18 --forms ts17,deploy --time
    options: --models DIR (bench/zoo/models)  --refold BIN  --work DIR  --timeout 300
             --time --threads 2 --runs 20 --rounds 5   --md FILE  --json FILE

For each model of the manifest and each exported form present (<name>.<form>.onnx):
  1. `refold optimize FILE -o WORK/<name>.<form>.opt.onnx --verify --json`: success, refold's
     own verification (max error against the input model on random inputs), the first error line
     (a file with symbolic input dims also gets --input-shape, the saved input's shape);
  2. `refold run` of the optimized file on the model's saved input (graph input name read from
     the file), compared with PyTorch's output: pass when max|diff| <= 1e-4 * max(1, max|golden|).
     Some models (random weights, deep stacks, box decoders with outputs in the hundreds) amplify
     float32 rounding past that bound whoever runs them; export.py's float64 run of the same
     module is the exact answer, and a file past the bound whose output is no further from it
     than ROUNDING_FACTOR × PyTorch's own float32 output is reported "pass (float32 rounding)".
     When that fails (or optimize did), the original file is also run with --no-optimize, to tell
     refold's importer/kernels from its optimization passes; when a number is wrong, the first
     node whose output departs from ONNX Runtime's is searched for (first_divergence);
  3. node counts per op type: the optimized file vs the deploy form (vs the original file when the
     model has no deploy form); Constant nodes are left out of the table's totals;
  4. with --time: ONNX Runtime (CPUExecutionProvider, ORT_ENABLE_ALL) and OpenVINO (CPU, latency
     hint, f32) on the same original file, and `refold bench FILE --json --variant
     optimized-nhwc` (its optimized NHWC model's median, back to back as the peers run theirs),
     all with --threads threads, interleaved in --rounds rounds; medians and ratios, and per
     round refold's median over the faster peer's in that round (the median over rounds is the
     `refold/faster` column, and its geometric mean over the models the speed target's figure).
Writes a markdown table (also printed) to bench/zoo/results.md and every detail to
bench/zoo/results.json. One model's failure never stops the run: it is recorded, with the first
error line of refold's stderr, and the next one goes on. Each refold call times out after 300 s.
"""

import argparse
import collections
import datetime
import json
import math
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
FORMS = ("ts17", "ts17bn", "dynamo", "dynamic", "deploy")  # every form export.py writes
REFOLD_WAIT_S = 30  # the binary may be rebuilt under us: wait this long when it is missing
REFOLD_ATTEMPTS = 10


# ----------------------------------------------------------------------------------------------
# refold, in a subprocess

class Refold:
    def __init__(self, binary, timeout, folders=()):
        self.binary = pathlib.Path(binary)
        self.timeout = timeout
        self.folders = [f"{folder}/" for folder in folders]  # left out of error lines

    def __call__(self, *args):
        """Runs `refold ARGS`; returns dict(rc, stdout, stderr, seconds, error). rc is None when
        it timed out or could not start; error is the first error line (None on success)."""
        command = [str(self.binary), *map(str, args)]
        for _ in range(REFOLD_ATTEMPTS):
            if not self.binary.exists():  # being rebuilt
                print(f"    {self.binary} missing, waiting {REFOLD_WAIT_S} s …", flush=True)
                time.sleep(REFOLD_WAIT_S)
                continue
            start = time.perf_counter()
            try:
                done = subprocess.run(command, capture_output=True, text=True,
                                      timeout=self.timeout)
            except subprocess.TimeoutExpired as e:
                return dict(rc=None, stdout=text_of(e.stdout), stderr=text_of(e.stderr),
                            seconds=self.timeout, error=f"timed out after {self.timeout} s")
            except OSError as e:  # e.g. "Text file busy" while the linker writes it
                print(f"    {command[0]}: {e}, waiting {REFOLD_WAIT_S} s …", flush=True)
                time.sleep(REFOLD_WAIT_S)
                continue
            seconds = time.perf_counter() - start
            error = None if done.returncode == 0 else first_error_line(done)
            for folder in self.folders if error else ():
                error = error.replace(folder, "")
            return dict(rc=done.returncode, stdout=done.stdout, stderr=done.stderr,
                        seconds=round(seconds, 2), error=error)
        return dict(rc=None, stdout="", stderr="", seconds=0,
                    error=f"{self.binary} unusable after {REFOLD_ATTEMPTS} attempts")

    def version(self):
        done = self("--version")
        return (done["stdout"] or done["stderr"] or "").strip() or None


def text_of(data):
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def first_error_line(done):
    """The first stderr line that says 'error', else its first line (else stdout's last)."""
    lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
    for line in lines:
        if "error" in line.lower():
            return line
    if lines:
        return lines[0]
    tail = [ln.strip() for ln in done.stdout.splitlines() if ln.strip()]
    return tail[-1] if tail else f"exit status {done.returncode}, no output"


def parse_json(text):
    """The first JSON object in text (refold may print other lines around it), or None."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError:
        return None


# ----------------------------------------------------------------------------------------------
# ONNX files

def graph_io(path):
    """(input names that are not initializers, output names) of an ONNX file."""
    model = onnx.load(str(path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    return ([v.name for v in model.graph.input if v.name not in initializers],
            [v.name for v in model.graph.output])


def op_counts(path):
    """{op type: node count} of the main graph (domain-qualified outside the default domain)."""
    model = onnx.load(str(path), load_external_data=False)
    counts = collections.Counter(
        n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
        for n in model.graph.node)
    return dict(sorted(counts.items()))


def input_shape_args(path, shape):
    """`--input-shape NAME=1x3x224x224` (the saved input's shape) when the file's input has a
    symbolic or unknown dim, which refold's optimize --verify and bench need; else nothing."""
    model = onnx.load(str(path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        if any(not d.HasField("dim_value") for d in value.type.tensor_type.shape.dim):
            return ["--input-shape", f"{value.name}={'x'.join(map(str, shape))}"]
    return []


def opset(path):
    model = onnx.load(str(path), load_external_data=False)
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)


# A file is within float32 rounding when its output is no further from the float64 run than this
# many times PyTorch's float32 output is: two float32 computations of an ill-conditioned model,
# each as far from the exact answer as PyTorch's, can differ by twice that.
ROUNDING_FACTOR = 2.0


def compare(output, golden, golden64=None):
    if output.shape != golden.shape:
        return dict(ok=False, error=f"output shape {list(output.shape)} != golden "
                                    f"{list(golden.shape)}")
    diff = float(np.abs(output.astype(np.float64) - golden.astype(np.float64)).max())
    tolerance = 1e-4 * max(1.0, float(np.abs(golden).max()))
    result = dict(ok=bool(diff <= tolerance), max_abs_diff=diff, tolerance=tolerance)
    if golden64 is not None:
        error64 = float(np.abs(output.astype(np.float64) - golden64).max())
        pytorch_error = float(np.abs(golden.astype(np.float64) - golden64).max())
        result.update(error_vs_float64=error64, pytorch_float32_error=pytorch_error,
                      within_float32_rounding=bool(error64 <= ROUNDING_FACTOR * pytorch_error))
    return result


# ----------------------------------------------------------------------------------------------
# One model, one form

def run_against_golden(refold, model_path, input_path, golden, out_dir, optimize=True,
                       golden64=None):
    """`refold run` on the saved input; its output compared with the golden (and the float64
    run, when there is one)."""
    (input_name, *_), output_names = graph_io(model_path)
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    args = ["run", model_path, "-i", f"{input_name}={input_path}", "-o", out_dir]
    done = refold(*args, *([] if optimize else ["--no-optimize"]))
    result = dict(input_name=input_name, seconds=done["seconds"], error=done["error"])
    if done["error"]:
        result["ok"] = False
        return result
    written = out_dir / f"{output_names[0]}.npy"
    if not written.exists():  # a name refold had to change: take the only file
        files = sorted(out_dir.glob("*.npy"))
        if len(files) != 1:
            result.update(ok=False, error=f"no {written.name} among {[f.name for f in files]}")
            return result
        written = files[0]
    result.update(compare(np.load(written), golden, golden64))
    return result


def first_divergence(refold, path, input_path, work, stem):
    """Where refold, running `path` as imported, first departs from ONNX Runtime: every node
    output is made a graph output, both run on the saved input, and the first node (graph order)
    whose output differs by more than 1e-3·max(1, max|ORT|) is returned with its inputs' shapes.
    A looser bound than the golden's, so that rounding grown along the way is not taken for it."""
    import onnxruntime as ort
    model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    typed = {v.name: v for v in model.graph.value_info}
    outputs = {v.name for v in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in outputs:
                model.graph.output.append(typed.get(name) or onnx.ValueInfoProto(name=name))
                outputs.add(name)
    probe = work / f"{stem}.all.onnx"
    out_dir = work / f"{stem}.all.out"
    try:
        onnx.save(model, str(probe))
        session = ort.InferenceSession(str(probe), providers=["CPUExecutionProvider"])
        feeds = {session.get_inputs()[0].name: np.load(input_path)}
        reference = dict(zip((o.name for o in session.get_outputs()), session.run(None, feeds)))
        shutil.rmtree(out_dir, ignore_errors=True)
        out_dir.mkdir(parents=True)
        (input_name, *_), _ = graph_io(probe)
        done = refold("run", probe, "-i", f"{input_name}={input_path}", "-o", out_dir,
                      "--no-optimize")
        if done["error"]:
            return dict(error=f"refold run of the probe: {done['error']}")
        written = {}  # refold prints "NAME: float32[1, 16] ... -> PATH" for each output
        for line in done["stdout"].splitlines():
            match = re.match(r"^(.*): \S+\[[^\]]*\].* -> (.*)$", line)
            if match:
                written[match.group(1)] = match.group(2)
        for node in model.graph.node:
            for name in node.output:
                if not name or name not in written or name not in reference:
                    continue
                got, want = np.load(written[name]), reference[name]
                shapes = {i: list(reference[i].shape) for i in node.input if i in reference}
                where = dict(node=node.name, op_type=node.op_type, output=name,
                             inputs=list(node.input), input_shapes=shapes,
                             attributes=describe_attributes(node))
                if got.shape != want.shape:
                    return dict(where, error=f"shape {list(got.shape)} != ONNX Runtime's "
                                             f"{list(want.shape)}")
                if want.size == 0:
                    continue
                diff = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
                bound = 1e-3 * max(1.0, float(np.abs(want).max()))
                if diff > bound:
                    return dict(where, max_abs_diff=diff, bound=bound)
        return dict(node=None, note="no node output differs from ONNX Runtime's")
    except Exception as e:  # noqa: BLE001 — a diagnosis, never a reason to stop
        return dict(error=f"{type(e).__name__}: {str(e).strip()[:300]}")
    finally:
        probe.unlink(missing_ok=True)
        shutil.rmtree(out_dir, ignore_errors=True)


def describe_attributes(node):
    described = {}
    for attribute in node.attribute:
        value = onnx.helper.get_attribute_value(attribute)
        text = repr(value.decode() if isinstance(value, bytes) else value)
        described[attribute.name] = text if len(text) <= 80 else text[:77] + "..."
    return described


def check(refold, models_dir, work, name, entry, form):
    """Everything run.py knows about one exported file (a dict, never raises for refold)."""
    path = models_dir / entry["files"][form]
    optimized = work / f"{name}.{form}.opt.onnx"
    optimized.unlink(missing_ok=True)
    input_path = models_dir / entry["input"]
    golden = np.load(models_dir / entry["golden"])
    golden64 = np.load(models_dir / entry["golden64"]) if entry.get("golden64") else None
    record = dict(model=name, form=form, file=path.name, opset=opset(path))

    shape_args = input_shape_args(path, entry["input_shape"])
    done = refold("optimize", path, "-o", optimized, "--verify", "--json", *shape_args)
    report = parse_json(done["stdout"]) or {}
    record["optimize"] = dict(ok=done["rc"] == 0 and optimized.exists(), error=done["error"],
                              input_shape_args=shape_args or None,
                              seconds=done["seconds"], verify=report.get("verify"),
                              layout=report.get("layout"), passes=report.get("passes"),
                              stderr_tail=done["stderr"][-2000:] if done["error"] else None)

    if optimized.exists():
        record["run"] = run_against_golden(refold, optimized, input_path, golden,
                                           work / f"{name}.{form}.out", golden64=golden64)
    if not record.get("run", {}).get("ok"):
        # Diagnosis: does refold run the file as imported, without its passes?
        noopt = run_against_golden(refold, path, input_path, golden,
                                   work / f"{name}.{form}.noopt.out", optimize=False)
        record["run_unoptimized"] = noopt
        # A wrong number: find the first node that computes it, in the file as imported when
        # that is already wrong, else in refold's optimized file.
        if not noopt.get("error") and not noopt.get("ok"):
            record["divergence"] = dict(file=path.name, **first_divergence(
                refold, path, input_path, work, f"{name}.{form}"))
        elif noopt.get("ok") and "max_abs_diff" in record.get("run", {}):
            record["divergence"] = dict(file=optimized.name, **first_divergence(
                refold, optimized, input_path, work, f"{name}.{form}.opt"))

    deploy = entry["files"].get("deploy")
    reference = models_dir / deploy if deploy else path
    record["op_counts"] = dict(original=op_counts(path),
                               reference_form="deploy" if deploy else form,
                               reference=op_counts(reference),
                               refold=op_counts(optimized) if optimized.exists() else None)
    return record


# ----------------------------------------------------------------------------------------------
# Timing (--time)

def make_onnxruntime(path, x, threads):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {session.get_inputs()[0].name: x}
    return lambda: session.run(None, feeds)


def make_openvino(path, x, threads):
    import openvino as ov
    compiled = ov.Core().compile_model(str(path), "CPU", {
        "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32"})  # refold runs f32: no bf16 on a bf16-capable CPU
    request = compiled.create_infer_request()
    return lambda: request.infer([x])


def time_form(refold, path, x, threads, runs, rounds, warmup=3):
    """Interleaved rounds of ONNX Runtime, OpenVINO and `refold bench` on one file; in each round
    every engine runs runs/rounds times back to back (refold: one `bench --variant
    optimized-nhwc` call), the order rotating."""
    per_round = max(1, -(-runs // rounds))
    engines, errors = {}, {}
    for engine, make in (("onnxruntime", make_onnxruntime), ("openvino", make_openvino)):
        try:
            engines[engine] = make(path, x, threads)
            for _ in range(warmup):
                engines[engine]()
        except Exception as e:  # noqa: BLE001 — a peer that cannot run the file is a result
            errors[engine] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
            engines.pop(engine, None)
    samples = {engine: [] for engine in engines}
    refold_medians = []
    round_medians = []  # per round: engine → its median in that round
    order = list(engines) + ["refold"]
    for r in range(rounds):
        round_medians.append({})
        for engine in order[r % len(order):] + order[:r % len(order)]:
            time.sleep(0.05)  # let the previous engine's spinning threads go idle
            if engine == "refold":
                if "refold" in errors:
                    continue
                # Its optimized NHWC model alone, back to back, as the peers run theirs.
                done = refold("bench", path, "--threads", threads, "--runs", per_round, "--json",
                              "--variant", "optimized-nhwc", *input_shape_args(path, x.shape))
                report = parse_json(done["stdout"]) or {}
                ms = report.get("optimized_nhwc_ms_median")
                if done["error"] or ms is None:
                    errors["refold"] = done["error"] or "no optimized_nhwc_ms_median in its JSON"
                else:
                    refold_medians.append(float(ms))
                    round_medians[-1]["refold"] = float(ms)
                continue
            times = []
            for _ in range(per_round):
                start = time.perf_counter()
                engines[engine]()
                times.append((time.perf_counter() - start) * 1e3)
            samples[engine] += times
            round_medians[-1][engine] = statistics.median(times)
    medians = {engine: statistics.median(v) for engine, v in samples.items() if v}
    if refold_medians:
        medians["refold"] = statistics.median(refold_medians)  # median of its per-call medians
    ratios = {f"refold/{peer}": medians["refold"] / medians[peer]
              for peer in ("onnxruntime", "openvino") if "refold" in medians and peer in medians}
    # On a host whose speed drifts, the fair figure compares neighbours: each round's refold
    # median over the faster peer's in that same round, the median over rounds.
    per_round_ratios = [m["refold"] / min(m[p] for p in engines) for m in round_medians
                        if "refold" in m and engines and all(p in m for p in engines)]
    if per_round_ratios:
        ratios["refold/faster"] = statistics.median(per_round_ratios)
    return dict(median_ms=medians, ratios=ratios, errors=errors, runs_per_engine=per_round * rounds)


# ----------------------------------------------------------------------------------------------
# Report

def fmt(value, spec=".2g"):
    return "—" if value is None else format(value, spec)


def node_total(counts):
    """Nodes that compute: Constant nodes (data the TorchScript exporter leaves inline) are not
    counted, so that files differing only in how they store constants compare equal."""
    return sum(n for op, n in counts.items() if op != "Constant")


def status(record):
    if not record["optimize"]["ok"]:
        return "FAIL optimize"
    run = record.get("run", {})
    if run.get("error"):
        return "FAIL run"
    if run.get("ok"):
        return "pass"
    return "pass (float32 rounding)" if run.get("within_float32_rounding") else "FAIL mismatch"


def describe_divergence(d):
    text = f"first divergence from ONNX Runtime in {d['file']}: "
    if not d.get("node"):
        return text + (d.get("error") or d.get("note"))
    return text + (f"{d['op_type']} '{d['node']}' → `{d['output']}`, inputs {d['input_shapes']}, "
                   f"attributes {d['attributes']}: "
                   + (d.get("error") or f"max\\|diff\\| {fmt(d.get('max_abs_diff'))}"))


def float64_cell(run):
    """refold's distance to the float64 run, and PyTorch float32's in parentheses."""
    if "error_vs_float64" not in run:
        return "—"
    return f"{fmt(run['error_vs_float64'])} ({fmt(run['pytorch_float32_error'])})"


def speed_target(records):
    """The speed target's two figures over the timed records: the geometric mean of refold's
    time over the faster peer's (per-round ratios, the median over rounds) and the models above
    1.05."""
    ratios = {f"{r['model']} {r['form']}": r["timing"]["ratios"]["refold/faster"]
              for r in records if "refold/faster" in r.get("timing", {}).get("ratios", {})}
    if not ratios:
        return []
    geomean = math.exp(sum(math.log(q) for q in ratios.values()) / len(ratios))
    above = [f"{name} ({q:.2f})" for name, q in ratios.items() if q > 1.05]
    return ["", f"refold / faster of ONNX Runtime and OpenVINO (per round): geometric mean "
                f"**{geomean:.3f}** over {len(ratios)} model/form pairs; above 1.05: "
                + (", ".join(above) if above else "none") + "."]


def markdown(records, export_errors, header, timed):
    columns = ["model", "form", "opset", "optimize", "verify max err", "max\\|diff\\| vs golden",
               "tolerance", "vs float64 (PyTorch's)", "result", "nodes: original → refold (deploy)"]
    if timed:
        columns += ["ORT ms", "OpenVINO ms", "refold ms", "refold/ORT", "refold/OV",
                    "refold/faster (per round)"]
    lines = [*header, "", "| " + " | ".join(columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    for r in records:
        verify = (r["optimize"].get("verify") or {}).get("max_abs_error")
        run = r.get("run", {})
        ops = r["op_counts"]
        nodes = f"{node_total(ops['original'])} → " + (
            f"{node_total(ops['refold'])}" if ops["refold"] is not None else "—")
        if ops["reference_form"] == "deploy":
            nodes += f" ({node_total(ops['reference'])})"
        cells = [r["model"], r["form"], str(r["opset"]),
                 "ok" if r["optimize"]["ok"] else "FAIL", fmt(verify),
                 fmt(run.get("max_abs_diff")), fmt(run.get("tolerance")), float64_cell(run),
                 status(r), nodes]
        if timed:
            t = r.get("timing", {})
            m, q = t.get("median_ms", {}), t.get("ratios", {})
            cells += [fmt(m.get("onnxruntime"), ".2f"), fmt(m.get("openvino"), ".2f"),
                      fmt(m.get("refold"), ".2f"), fmt(q.get("refold/onnxruntime"), ".2f"),
                      fmt(q.get("refold/openvino"), ".2f"), fmt(q.get("refold/faster"), ".2f")]
        lines.append("| " + " | ".join(cells) + " |")
    if timed:
        lines += speed_target(records)

    lines += reparam_target(records)

    rounding = [r for r in records if status(r) == "pass (float32 rounding)"]
    if rounding:
        lines += ["", "## Past the tolerance, within float32 rounding", "",
                  f"max\\|diff\\| from the float64 run at most {ROUNDING_FACTOR:g}× PyTorch "
                  "float32's own:", ""]
        for r in rounding:
            run = r["run"]
            lines.append(f"- **{r['model']} {r['form']}**: max\\|diff\\| "
                         f"{fmt(run['max_abs_diff'])} > tolerance {fmt(run['tolerance'])}; from "
                         f"float64 {fmt(run['error_vs_float64'])}, PyTorch float32 "
                         f"{fmt(run['pytorch_float32_error'])}")
    failures = [r for r in records if status(r).startswith("FAIL")]
    if failures:
        lines += ["", "## Failures (first error line of refold's stderr)", ""]
        for r in failures:
            run, noopt = r.get("run", {}), r.get("run_unoptimized")
            why = r["optimize"]["error"] if not r["optimize"]["ok"] else (
                run.get("error") or f"max|diff| {fmt(run.get('max_abs_diff'))} > tolerance "
                                    f"{fmt(run.get('tolerance'))}")
            lines.append(f"- **{r['model']} {r['form']}** ({status(r)}): `{why}`")
            if noopt is not None:
                lines.append("  - as imported (`--no-optimize`): " + (
                    f"`{noopt['error']}`" if noopt.get("error") else
                    f"runs, max\\|diff\\| {fmt(noopt.get('max_abs_diff'))} "
                    f"({'pass' if noopt.get('ok') else 'FAIL'})"))
            if r.get("divergence") is not None:
                lines.append("  - " + describe_divergence(r["divergence"]))
    timing_errors = [f"- **{r['model']} {r['form']}** {engine}: `{error}`" for r in records
                     for engine, error in r.get("timing", {}).get("errors", {}).items()]
    if timing_errors:
        lines += ["", "## Timing errors", "", *timing_errors]
    if export_errors:
        lines += ["", "## Export errors (bench/zoo/export.py)", ""]
        lines += [f"- **{name} {form}**: `{error}`" for (name, form), error in export_errors]

    diffs = []
    for r in records:
        ops = r["op_counts"]
        if ops["refold"] is None:
            continue
        keys = sorted(set(ops["refold"]) | set(ops["reference"]))
        changed = [f"{k} {ops['refold'].get(k, 0)} vs {ops['reference'].get(k, 0)}" for k in keys
                   if ops["refold"].get(k, 0) != ops["reference"].get(k, 0) and k != "Constant"]
        if changed:
            diffs.append(f"- **{r['model']} {r['form']}** (refold vs {ops['reference_form']}): "
                         + ", ".join(changed))
    if diffs:
        lines += ["", "## Op counts where refold's optimized graph differs from the reference",
                  "", *diffs]

    larger = [r for r in records if r["op_counts"]["refold"] is not None
              and r["op_counts"]["reference_form"] == "deploy"
              and node_total(r["op_counts"]["refold"]) > node_total(r["op_counts"]["reference"])]
    if larger:
        lines += ["", "## Larger than the deploy form: why refold kept nodes (its optimize "
                      "notes, names shortened, most frequent first)", ""]
        for r in larger:
            lines.append(f"- **{r['model']} {r['form']}**:")
            lines += [f"  - {n}× `{note}`" for note, n in kept_reasons(r)[:6]]
    return "\n".join(lines) + "\n"


TARGET_OPS = ("Conv", "BatchNormalization", "Add", "Sub", "Mul")


def reparam_target(records):
    """The re-parameterization target (issue 14): on every model with a deploy form, each
    training form's optimized graph has no more Conv, BatchNormalization, Add, Sub or Mul nodes
    than the deploy form."""
    rows = [r for r in records if r["op_counts"]["reference_form"] == "deploy"
            and r["form"] != "deploy" and r["op_counts"]["refold"] is not None]
    if not rows:
        return []
    short = {"BatchNormalization": "BN"}
    head = ["model", "form"] + [f"{short.get(op, op)}: train → refold (deploy)" for op in TARGET_OPS]
    lines = ["", "## Re-parameterization: op counts against the deploy form", "",
             "Training form → refold's optimized graph (the authors' deploy form); **bold** where "
             "refold has more than the deploy form.", "",
             "| " + " | ".join(head + ["≤ deploy"]) + " |", "|" + "|".join("---" for _ in head) + "|---|"]
    for r in rows:
        ops = r["op_counts"]
        cells, ok = [r["model"], r["form"]], True
        for op in TARGET_OPS:
            train, mine, deploy = (ops[k].get(op, 0) for k in ("original", "refold", "reference"))
            more = mine > deploy
            ok = ok and not more
            cells.append(f"{train} → {'**' if more else ''}{mine}{'**' if more else ''} ({deploy})")
        lines.append("| " + " | ".join(cells + ["yes" if ok else "no"]) + " |")
    return lines


def kept_reasons(record):
    """refold's "kept …" notes of one optimize run, counted, with node names shortened to their
    last path component and numbers made '#' ('/stem/Constant_output_0' → 'Constant_output_#')."""
    def shorten(match):
        return "'" + re.sub(r"\d+", "#", match.group(1)) + "'"
    notes = [re.sub(r"'(?:[^'/]*/)*([^'/]*)'", shorten, note.splitlines()[0])
             for p in record["optimize"].get("passes") or [] for note in p.get("notes", [])
             if note.startswith("kept")]
    return collections.Counter(notes).most_common()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=str(HERE / "models"), help="export.py's folder")
    parser.add_argument("--only", help="comma-separated model names (default: the manifest's)")
    parser.add_argument("--forms", default=",".join(FORMS),
                        help="comma-separated, among ts17, ts17bn, dynamo, dynamic, deploy")
    parser.add_argument("--refold", default=str(ROOT / "build" / "tools" / "refold" / "refold"))
    parser.add_argument("--work", help="folder for refold's files (default: MODELS/refold)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per refold call")
    parser.add_argument("--time", action="store_true", help="also time ORT, OpenVINO, refold")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=20, help="timed runs per engine")
    parser.add_argument("--rounds", type=int, default=5, help="interleaving rounds")
    parser.add_argument("--md", default=str(HERE / "results.md"))
    parser.add_argument("--json", default=str(HERE / "results.json"))
    args = parser.parse_args()

    models_dir = pathlib.Path(args.models)
    manifest = json.loads((models_dir / "manifest.json").read_text())
    models = manifest["models"]
    names = [n.strip() for n in args.only.split(",")] if args.only else list(models)
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    work = pathlib.Path(args.work) if args.work else models_dir / "refold"
    work.mkdir(parents=True, exist_ok=True)
    refold = Refold(args.refold, args.timeout,
                    folders=(models_dir.resolve(), work.resolve(), models_dir, work))

    records, export_errors = [], []
    for name in names:
        entry = models.get(name)
        if entry is None:
            print(f"{name}: not in {models_dir / 'manifest.json'}, skipped")
            continue
        export_errors += [((name, form), error) for form, error in entry.get("errors", {}).items()]
        for form in forms:
            if form not in entry.get("files", {}):
                continue
            print(f"{name} {form} …", flush=True)
            try:
                record = check(refold, models_dir, work, name, entry, form)
            except Exception as e:  # noqa: BLE001 — a bug here must not stop the other models
                record = dict(model=name, form=form, file=entry["files"][form], opset=None,
                              optimize=dict(ok=False, error=f"run.py: {type(e).__name__}: {e}"),
                              op_counts=dict(original={}, reference={}, reference_form=form,
                                             refold=None))
            if args.time:
                x = np.load(models_dir / entry["input"])
                try:
                    record["timing"] = time_form(refold, models_dir / entry["files"][form], x,
                                                 args.threads, args.runs, args.rounds)
                except Exception as e:  # noqa: BLE001
                    record["timing"] = dict(errors={"run.py": f"{type(e).__name__}: {e}"})
            print(f"  {status(record)}"
                  + (f": {record['optimize']['error']}" if not record["optimize"]["ok"] else
                     f", max|diff| {fmt(record.get('run', {}).get('max_abs_diff'))}"
                     + (f": {record['run']['error']}" if record.get("run", {}).get("error")
                        else "")), flush=True)
            records.append(record)

    version = refold.version()
    header = [
        "# refold on the model zoo (bench/zoo/run.py)", "",
        f"{datetime.datetime.now().isoformat(timespec='seconds')}; refold: {version}; "
        f"torch {manifest['versions'].get('torch')}, timm {manifest['versions'].get('timm')}, "
        f"ultralytics {manifest['versions'].get('ultralytics')}; pass: max|diff| vs PyTorch "
        f"≤ 1e-4·max(1, max|golden|); pass (float32 rounding): past that, but no further from "
        f"the module's float64 run (export.py's golden64) than {ROUNDING_FACTOR:g}× PyTorch "
        f"float32's own distance to it; verify: refold optimize --verify's own max error; "
        f"nodes (Constant nodes not counted): the exported file, refold's optimized file and, "
        f"in parentheses, the deploy form (timm reparameterize_model / ultralytics fuse)."
        + (f" Times: medians, {args.threads} threads, batch 1." if args.time else "")]
    table = markdown(records, export_errors, header, args.time)
    print()
    print(table)
    pathlib.Path(args.md).write_text(table)
    pathlib.Path(args.json).write_text(json.dumps(dict(
        refold=dict(binary=str(refold.binary), version=version), versions=manifest["versions"],
        python=sys.version.split()[0], cpus=os.cpu_count(), time=args.time,
        records=records, export_errors={f"{n} {f}": e for (n, f), e in export_errors}),
        indent=2) + "\n")
    passed = sum(status(r) == "pass" for r in records)
    rounding = sum(status(r) == "pass (float32 rounding)" for r in records)
    print(f"{passed} of {len(records)} model/form pairs pass"
          + (f", {rounding} more within float32 rounding" if rounding else "")
          + f"; wrote {args.md} and {args.json}")


if __name__ == "__main__":
    main()
