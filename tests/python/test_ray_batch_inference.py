"""examples/ray_batch_inference.py on a local Ray instance: a few hundred generated inputs, every
output checked against a single-process run — nothing lost, nothing duplicated. Skipped where
Ray is not installed (scripts/python-tests.sh installs it when REFOLD_TEST_RAY=1)."""

import importlib.util
import pathlib

import numpy as np
import pytest

import refold

ray = pytest.importorskip("ray")
EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "ray_batch_inference.py"


def load_example():
    spec = importlib.util.spec_from_file_location("ray_batch_inference", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_input_once_and_equal_to_a_single_process_run(repvgg_path, tmp_path):
    example = load_example()
    rng = np.random.default_rng(3)
    for i in range(240):
        np.save(tmp_path / f"sample_{i:03d}.npy", rng.standard_normal((3, 32, 32), dtype=np.float32))
    paths = example.list_inputs(tmp_path)
    assert len(paths) == 240
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        results = example.run(str(repvgg_path), paths, batch_size=32, workers=2)
    finally:
        ray.shutdown()
    assert sorted(results) == paths  # each input exactly once
    reference = refold.Session(repvgg_path, threads=1)
    for p in paths:
        x = np.load(p)[None]
        (expected,) = reference.run(None, [x])
        np.testing.assert_allclose(results[p][None], expected, rtol=0, atol=1e-6)
