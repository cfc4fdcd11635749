"""Checks that the files refold writes are standard ONNX that stock runtimes serve: every model
in tests/data/onnx is optimized by refold, then loaded and run by ONNX Runtime and OpenVINO (the
backends of Triton and KServe), and each output is compared with PyTorch's saved output.

    python bench/serving_check.py        # in a venv with refold, onnx, onnxruntime, openvino

docs/serving.md records the result.
"""

import pathlib
import sys

import numpy as np
import onnx
from onnx import numpy_helper

import refold

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "onnx"


def runtimes():
    import onnxruntime as ort
    import openvino as ov

    core = ov.Core()

    def run_ort(path, feeds):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return session.run(None, feeds)

    def run_ov(path, feeds):
        compiled = core.compile_model(str(path), "CPU")
        result = compiled(feeds)
        return [result[o] for o in compiled.outputs]

    return {"onnxruntime": run_ort, "openvino": run_ov}


def main() -> int:
    failures = 0
    out_dir = pathlib.Path("/tmp/refold_serving_check")
    out_dir.mkdir(exist_ok=True)
    for folder in sorted(p for p in DATA.iterdir() if (p / "model.onnx").is_file()):
        model = onnx.load(folder / "model.onnx")
        names = [i.name for i in model.graph.input
                 if i.name not in {t.name for t in model.graph.initializer}]
        data = folder / "test_data_set_0"
        feeds = {n: numpy_helper.to_array(onnx.load_tensor(data / f"input_{k}.pb"))
                 for k, n in enumerate(names)}
        expected = [numpy_helper.to_array(onnx.load_tensor(p))
                    for p in sorted(data.glob("output_*.pb"))]
        optimized = out_dir / f"{folder.name}.onnx"
        report = refold.optimize(folder / "model.onnx", optimized)
        onnx.checker.check_model(str(optimized))
        line = [f"{folder.name}: Conv {report.op_counts_before.get('Conv', 0)} -> "
                f"{report.op_counts_after.get('Conv', 0)}"]
        for name, run in runtimes().items():
            got = run(optimized, feeds)
            err = max(float(np.abs(g - e).max()) for g, e in zip(got, expected))
            scale = max(1.0, max(float(np.abs(e).max()) for e in expected))
            ok = err <= refold.MODEL_TOLERANCE * scale
            failures += not ok
            line.append(f"{name} max|diff| {err:.2g} {'ok' if ok else 'FAIL'}")
        print("; ".join(line))
    print(f"{'all ok' if failures == 0 else f'{failures} failed'} (onnx.checker passed on every file)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
