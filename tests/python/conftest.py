"""Fixtures of the Python package's tests: the committed ONNX test models and small torch
modules exported in the test (tests/data/onnx/README.md lists the models)."""

import io
import pathlib

import numpy as np
import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "onnx"


@pytest.fixture
def repvgg_path() -> pathlib.Path:
    """3 RepVGG blocks in training form (Conv 6, BN 2, Add 5 → Conv 3), input [1, 3, 32, 32]."""
    return DATA / "repvgg" / "model.onnx"


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


def export(module, *example, **options) -> bytes:
    """`module` (in eval mode) as ONNX bytes, through torch's TorchScript exporter."""
    import torch

    buffer = io.BytesIO()
    module = module.eval()
    names = ["x"] if len(example) == 1 else [f"x{i}" for i in range(len(example))]
    with torch.no_grad():
        torch.onnx.export(module, example, buffer, opset_version=17, input_names=names, **options)
    return buffer.getvalue()
