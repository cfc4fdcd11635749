"""refold.Session: inputs and outputs, every way of calling run, zero-copy input, both memory
formats, threads, profile, errors, close."""

import threading

import numpy as np
import pytest

import refold
from conftest import export


def test_describes_its_inputs_and_outputs(repvgg_path):
    session = refold.Session(repvgg_path)
    (x,) = session.inputs
    assert x == refold.ValueInfo("input", (1, 3, 32, 32), "float32")
    assert x.name == "input" and x.shape == (1, 3, 32, 32) and x.dtype == "float32"
    assert len(session.outputs) == 1 and session.outputs[0].dtype == "float32"
    assert session.threads is None
    assert session.report()["op_counts_after"]["Conv"] == 3
    assert "->" in session.report_text()


def test_run_forms_agree_with_the_unoptimized_model(repvgg_path, rng):
    x = rng.standard_normal((1, 3, 32, 32), dtype=np.float32)
    reference = refold.Session(repvgg_path, optimize=False).run(None, {"input": x})[0]
    session = refold.Session(repvgg_path, verify=True)
    out_name = session.outputs[0].name
    by_name = session.run(None, {"input": x})
    by_position = session.run(None, [x])
    chosen = session.run([out_name], {"input": x})
    assert isinstance(by_name, list) and len(by_name) == 1
    assert isinstance(by_name[0], np.ndarray) and by_name[0].dtype == np.float32
    assert by_name[0].shape == (1, 8, 16, 16)
    assert np.abs(by_name[0] - reference).max() <= refold.MODEL_TOLERANCE * max(
        1.0, np.abs(reference).max())
    np.testing.assert_array_equal(by_position[0], by_name[0])
    np.testing.assert_array_equal(chosen[0], by_name[0])
    # Lists and other array-likes go through numpy.asarray.
    np.testing.assert_array_equal(session.run(None, {"input": x.tolist()})[0], by_name[0])


class Identity:
    """An ONNX model whose output is its input, to see where the output's memory is."""

    @staticmethod
    def model():
        import torch

        class Id(torch.nn.Module):
            def forward(self, x):
                return x.clone()  # exported as an Identity node

        return export(Id(), torch.zeros(1, 3, 8, 8))


def data_pointer(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_contiguous_float32_input_is_not_copied(rng):
    torch = pytest.importorskip("torch")
    session = refold.Session(Identity.model(), optimize=False)
    x = rng.standard_normal((1, 3, 8, 8), dtype=np.float32)
    (y,) = session.run(None, {"x": x})
    # The output is the input's own memory: nothing was copied on the way in or out.
    assert data_pointer(y) == data_pointer(x)
    np.testing.assert_array_equal(y, x)
    t = torch.from_numpy(x.copy())
    (z,) = session.run(None, [t])
    assert data_pointer(z) == t.data_ptr()
    g = t.clone().requires_grad_()  # read through .detach(), still without a copy
    (w,) = session.run(None, [g])
    assert data_pointer(w) == g.data_ptr()
    # The result keeps the input's memory alive after the caller drops it.
    del x
    assert np.isfinite(y).all()


def test_channels_last_torch_tensor_in_correct_values_out():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                                 torch.nn.Conv2d(8, 4, 1)).eval()
    x = torch.randn(2, 3, 9, 7)
    session = refold.Session(export(module, x, dynamic_axes={"x": {0: "N"}}))
    with torch.no_grad():
        expected = module(x).numpy()
    for layout in (torch.contiguous_format, torch.channels_last):
        xl = x.contiguous(memory_format=layout)
        (y,) = session.run(None, {"x": xl})
        assert y.shape == expected.shape
        np.testing.assert_allclose(y, expected, atol=1e-4, rtol=1e-4)
    # An NHWC input travels as NHWC: an identity model hands back the same strides.
    identity = refold.Session(Identity.model(), optimize=False)
    xl = torch.randn(1, 3, 8, 8).contiguous(memory_format=torch.channels_last)
    (y,) = identity.run(None, [xl])
    # (A size-1 dim's stride means nothing; DLPack writers normalize it.)
    assert [s for s, n in zip(y.strides, y.shape) if n > 1] == [
        s * 4 for s, n in zip(xl.stride(), xl.shape) if n > 1]
    assert data_pointer(y) == xl.data_ptr()
    np.testing.assert_array_equal(y, xl.numpy())


def test_other_dtypes_and_views(repvgg_path, rng):
    session = refold.Session(repvgg_path)
    x = rng.standard_normal((1, 3, 32, 32), dtype=np.float32)
    expected = session.run(None, [x])[0]
    # A reversed view (negative strides) and a strided view are read correctly.
    flipped = np.ascontiguousarray(x[:, :, ::-1, :])[:, :, ::-1, :]
    np.testing.assert_array_equal(session.run(None, [flipped])[0], expected)
    wide = np.zeros((1, 3, 32, 64), dtype=np.float32)
    wide[..., ::2] = x
    np.testing.assert_array_equal(session.run(None, [wide[..., ::2]])[0], expected)
    # float16 is held as float32.
    y16 = session.run(None, [x.astype(np.float16)])[0]
    assert y16.dtype == np.float32


@pytest.mark.parametrize(
    "inputs, message",
    [
        ({"input": np.zeros((1, 3, 32, 32))}, "input 'input': dtype float64 is not supported"),
        ({"input": np.zeros((1, 3, 31, 32), np.float32)},
         "input 'input' is declared [1, 3, 32, 32], given float32[1, 3, 31, 32]"),
        ({"input": np.zeros((1, 3, 32, 32), np.int64)}, "declared with element type 1, given 7"),
        ({}, "input 'input' is not given"),
        ({"input": np.zeros((1, 3, 32, 32), np.float32), "extra": np.zeros(1, np.float32)},
         "the model has no input 'extra' (inputs: input)"),
        ({"input": object()}, "input 'input': a object is not an array"),
        ([], "0 inputs given, the model takes 1"),
        (42, "inputs must be a dict"),
    ],
)
def test_bad_inputs_are_refold_errors(repvgg_path, inputs, message):
    session = refold.Session(repvgg_path)
    with pytest.raises(refold.Error) as info:
        session.run(None, inputs)
    assert message in str(info.value)


def test_bad_outputs_threads_and_a_closed_session(repvgg_path):
    session = refold.Session(repvgg_path)
    x = np.zeros((1, 3, 32, 32), np.float32)
    with pytest.raises(refold.Error, match="no output 'logits'"):
        session.run(["logits"], [x])
    with pytest.raises(refold.Error, match="not a str"):
        session.run("logits", [x])
    with pytest.raises(refold.Error, match=r"threads \(0\) must be >= 1"):
        refold.Session(repvgg_path, threads=0)
    with refold.Session(repvgg_path, threads=1) as s:
        assert s.threads == 1 and not s.closed
        s.run(None, [x])
    assert s.closed
    with pytest.raises(refold.Error, match="the session is closed"):
        s.run(None, [x])
    with pytest.raises(refold.Error, match="the session is closed"):
        s.inputs


def test_one_session_from_four_threads(repvgg_path, rng):
    session = refold.Session(repvgg_path, threads=1)
    inputs = [rng.standard_normal((1, 3, 32, 32), dtype=np.float32) for _ in range(4)]
    expected = [session.run(None, [x])[0] for x in inputs]
    results, errors = {}, []

    def work(i):
        try:
            for r in range(10):
                results[(i, r)] = session.run(None, [inputs[i]])[0]
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 40
    for (i, _), y in results.items():
        np.testing.assert_array_equal(y, expected[i])


def test_profile_times_every_node(repvgg_path):
    session = refold.Session(repvgg_path)
    p = session.profile({"input": np.ones((1, 3, 32, 32), np.float32)})
    assert [n["op_type"] for n in p["nodes"]].count("Conv") == 3
    assert p["flops"] > 0 and p["ms"] >= 0
    keys = {"name", "op_type", "flops", "ms", "bytes", "layout_in", "layout_out", "implementations"}
    assert all(keys <= set(n) for n in p["nodes"])
    conv = next(n for n in p["nodes"] if n["op_type"] == "Conv")
    assert conv["implementations"][0].startswith("conv2d: ")
    assert conv["layout_out"] == "NHWC" and conv["bytes"] > 0
    assert p["op_types"][0]["op_type"] == "Conv" and p["op_types"][0]["nodes"] == 3


class Square:
    """x · x as ONNX bytes (onnx is not a test dependency, so the bytes come from torch)."""

    @staticmethod
    def model():
        torch = pytest.importorskip("torch")

        class Square(torch.nn.Module):
            def forward(self, x):
                return x * x

        return export(Square(), torch.ones(1, 4, 32, 32))


def test_subnormal_results_flush_to_zero_unless_turned_off():
    session = refold.Session(Square.model(), optimize=False)
    x = np.full((1, 4, 32, 32), 1e-20, dtype=np.float32)  # x · x = 1e-40, subnormal
    assert refold.get_flush_denormal()
    try:
        (flushed,) = session.run(None, [x])
        assert not flushed.any()
        refold.set_flush_denormal(False)
        assert not refold.get_flush_denormal()
        (kept,) = session.run(None, [x])
        np.testing.assert_allclose(kept, np.float32(1e-40), rtol=1e-3)
    finally:
        refold.set_flush_denormal(True)
