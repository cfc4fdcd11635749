"""refold.from_torch on a re-parameterizable module built here, and `python -m refold`."""

import copy
import subprocess
import sys

import numpy as np
import pytest

import refold

torch = pytest.importorskip("torch")


class RepVGGBlock(torch.nn.Module):
    """3×3 conv + BN, 1×1 conv + BN, and a BN identity branch, summed, then ReLU."""

    def __init__(self, channels):
        super().__init__()
        self.dense = torch.nn.Sequential(torch.nn.Conv2d(channels, channels, 3, padding=1,
                                                         bias=False),
                                         torch.nn.BatchNorm2d(channels))
        self.point = torch.nn.Sequential(torch.nn.Conv2d(channels, channels, 1, bias=False),
                                         torch.nn.BatchNorm2d(channels))
        self.identity = torch.nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.dense(x) + self.point(x) + self.identity(x))


def randomized(module):
    """Every BatchNorm with random statistics, as a trained network has."""
    torch.manual_seed(0)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return module


def test_from_torch_reparameterizes_verifies_and_leaves_the_module_alone():
    module = randomized(torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1),
                                            torch.nn.ReLU(), RepVGGBlock(8), RepVGGBlock(8)))
    module.train()  # as a user might hand it over
    state = copy.deepcopy(module.state_dict())
    x = torch.randn(1, 3, 16, 16)
    session = refold.from_torch(module, x)
    # One conv per block (the exporter already folded the stem's and branches' BN into convs).
    assert session.report()["op_counts_after"]["Conv"] == 3
    assert "BatchNormalization" not in session.report()["op_counts_after"]
    module.eval()
    with torch.no_grad():
        expected = module(x).numpy()
    (y,) = session.run(None, {"input": x})
    assert np.abs(y - expected).max() <= refold.MODEL_TOLERANCE * max(1.0, np.abs(expected).max())
    # Never modified: same parameters and buffers; the mode restored by the caller only.
    for k, v in module.state_dict().items():
        assert torch.equal(v, state[k]), k
    channels_last = x.contiguous(memory_format=torch.channels_last)
    np.testing.assert_allclose(session.run(None, [channels_last])[0], y, atol=1e-5)


def test_from_torch_several_inputs_and_outputs():
    class TwoInTwoOut(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

        def forward(self, a, b):
            y = self.conv(a) + b
            return y, torch.sigmoid(y)

    module = TwoInTwoOut()
    a, b = torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)
    session = refold.from_torch(module, (a, b))
    assert [v.name for v in session.inputs] == ["input0", "input1"]
    y, s = session.run(None, [a, b])
    with torch.no_grad():
        ey, es = module(a, b)
    np.testing.assert_allclose(y, ey.numpy(), atol=1e-4)
    np.testing.assert_allclose(s, es.numpy(), atol=1e-4)


def test_from_torch_refuses_what_is_not_tensors():
    with pytest.raises(refold.Error, match="example_inputs must be a tensor"):
        refold.from_torch(torch.nn.ReLU(), [1, 2])


def test_python_m_refold_runs_the_cli(repvgg_path, tmp_path):
    run = subprocess.run([sys.executable, "-m", "refold", "--version"], capture_output=True,
                         text=True, check=True)
    assert run.stdout.strip() == f"refold {refold.__version__}"
    out = tmp_path / "fast.onnx"
    run = subprocess.run([sys.executable, "-m", "refold", "optimize", str(repvgg_path), "-o",
                          str(out), "--verify"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "verify: max |OUT - IN|" in run.stdout and out.is_file()
    run = subprocess.run([sys.executable, "-m", "refold", "optimize", str(tmp_path / "none.onnx"),
                          "-o", str(out)], capture_output=True, text=True)
    assert run.returncode == 1
    assert run.stderr.startswith("refold: error: ") and "none.onnx" in run.stderr


def test_help_and_stubs_are_there():
    assert "Session" in refold.__doc__
    assert "thread-safe" in refold.Session.__doc__ or "several threads" in refold.Session.__doc__
    assert "dlpack" in refold.Session.run.__doc__
    import importlib.resources

    files = importlib.resources.files("refold")
    assert (files / "py.typed").is_file()
    assert (files / "_refold.pyi").is_file()
