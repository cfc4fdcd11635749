"""Batch inference with refold inside Ray Data: one refold.Session per worker, built once.

    python examples/ray_batch_inference.py MODEL.onnx INPUT_DIR OUTPUT_DIR [--num-cpus 2]

INPUT_DIR holds `.npy` tensors (one sample each, the model's input shape without the batch dim,
or with a batch dim of 1) or images (`.png`, `.jpg`: resized to the model's H×W, scaled to
[0, 1], channels first; needs Pillow). Each result is written as OUTPUT_DIR/<name>.npy (the
model's first output for that sample).

Ray Data reads the files in parallel, groups them into batches and hands each batch to a
RefoldPredictor actor: each actor builds its Session once (optimizing the model once per
worker) with as many kernel threads as Ray gave it CPUs, then runs every batch it receives.
"""

import argparse
import pathlib
import sys
from typing import Dict, List

import numpy as np

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp"}


def list_inputs(folder: pathlib.Path) -> List[str]:
    files = sorted(p for p in folder.iterdir() if p.suffix == ".npy" or p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise SystemExit(f"{folder}: no .npy or image files")
    return [str(p) for p in files]


def read_sample(path: str, shape) -> np.ndarray:
    """One sample as float32 [C, H, W] (or the model's per-sample shape)."""
    p = pathlib.Path(path)
    if p.suffix == ".npy":
        x = np.load(p).astype(np.float32, copy=False)
        return x[0] if x.ndim == len(shape) else x
    from PIL import Image  # images only

    height, width = shape[2], shape[3]
    image = Image.open(p).convert("RGB").resize((width, height))
    return np.asarray(image, dtype=np.float32).transpose(2, 0, 1) / 255.0


class RefoldPredictor:
    """A Ray Data callable class: __init__ runs once per worker, __call__ once per batch."""

    def __init__(self, model: str):
        import ray
        import refold

        cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1)
        self.session = refold.Session(model, threads=max(1, int(cpus)))
        (self.input,) = self.session.inputs
        batch = self.input.shape[0] if self.input.shape else None
        # A model exported with a fixed batch (often 1) runs the batch in pieces of that size.
        self.piece = batch if isinstance(batch, int) else None

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        x = np.ascontiguousarray(np.stack(batch["data"]).astype(np.float32, copy=False))
        step = self.piece or len(x)
        outputs = [self.session.run(None, {self.input.name: x[i:i + step]})[0]
                   for i in range(0, len(x), step)]
        return {"path": batch["path"], "output": np.concatenate(outputs)}


def run(model: str, paths: List[str], batch_size: int = 16, workers: int = 2) -> Dict[str, np.ndarray]:
    """Path → the model's first output for that sample, computed by Ray Data (ray.init first)."""
    import ray
    import refold

    shape = refold.Session(model, optimize=False).inputs[0].shape
    dataset = ray.data.from_items([{"path": p} for p in paths])
    dataset = dataset.map(lambda row: {"path": row["path"], "data": read_sample(row["path"], shape)})
    results = dataset.map_batches(
        RefoldPredictor,
        fn_constructor_kwargs={"model": model},
        batch_size=batch_size,
        batch_format="numpy",
        concurrency=workers,
        num_cpus=1,
    )
    out: Dict[str, np.ndarray] = {}
    for row in results.iter_rows():
        if row["path"] in out:
            raise RuntimeError(f"{row['path']}: computed twice")
        out[row["path"]] = row["output"]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("input_dir", type=pathlib.Path)
    parser.add_argument("output_dir", type=pathlib.Path)
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the local Ray instance")
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args(argv)

    import ray

    paths = list_inputs(args.input_dir)
    ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    try:
        results = run(args.model, paths, args.batch_size, workers=args.num_cpus)
    finally:
        ray.shutdown()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for path, y in results.items():
        np.save(args.output_dir / (pathlib.Path(path).stem + ".npy"), y)
    print(f"{len(results)} of {len(paths)} inputs -> {args.output_dir}")
    return 0 if len(results) == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
