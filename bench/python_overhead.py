"""What refold.Session.run costs over the C++ Session::run it wraps, for one 1×3×224×224 input.

    build/python-venv/bin/python bench/python_overhead.py [--runs 2000] [--rounds 5]

(scripts/python-tests.sh makes that venv and installs the package.) The model is one Relu over
the input, so the C++ run is small and the difference is the binding's own cost: converting the
NumPy array (no copy for contiguous float32), releasing and retaking the GIL, wrapping the result.
Python and C++ timings alternate in rounds on the same session and input; medians are printed.
"""

import argparse
import io
import platform
import statistics
import subprocess
import time

import numpy as np

import refold


def relu_model() -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.onnx.export(torch.nn.ReLU(), torch.zeros(1, 3, 224, 224), buffer, opset_version=17,
                      input_names=["x"])
    return buffer.getvalue()


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        return f"{fields['Model name'].strip()}, family {fields['CPU family'].strip()}"
    except Exception:  # noqa: BLE001
        return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    session = refold.Session(relu_model(), threads=1)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    feeds = {"x": x}
    for _ in range(200):
        session.run(None, feeds)
    python, native = [], []
    for _ in range(args.rounds):
        for _ in range(args.runs):
            t0 = time.perf_counter()
            session.run(None, feeds)
            python.append(time.perf_counter() - t0)
        native += session._time_native(feeds, args.runs)
    p, n = statistics.median(python) * 1e6, statistics.median(native) * 1e6
    print(f"CPU: {cpu_name()}; refold {refold.__version__}; {args.rounds} rounds x {args.runs} runs")
    print(f"Session.run from Python: median {p:.1f} us; C++ Session::run: median {n:.1f} us; "
          f"overhead {p - n:.1f} us per call")


if __name__ == "__main__":
    main()
