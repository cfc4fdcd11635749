"""refold.optimize: paths and bytes in, the report, verification, and refusals that write nothing."""

import pathlib

import pytest

import refold


def test_optimize_a_file_writes_it_and_reports_as_the_cli(repvgg_path, tmp_path):
    dst = tmp_path / "fast.onnx"
    report = refold.optimize(repvgg_path, dst)
    assert dst.is_file()
    assert report.op_counts_before["Conv"] == 6
    assert report.op_counts_before["BatchNormalization"] == 2
    assert report.op_counts_after["Conv"] == 3
    assert "BatchNormalization" not in report.op_counts_after
    assert "Add" not in report.op_counts_after
    assert report.max_error is not None and report.max_error <= refold.MODEL_TOLERANCE
    text = str(report)
    assert text.startswith(f"{repvgg_path} -> {dst}")
    assert "verify: max |OUT - IN|" in text and text.rstrip().endswith("ok")
    assert report.layout["convs"] == 3 and report.layout["channels_last_weights"] == 3
    assert "NHWC" in report.layout_plan
    names = [p["pass"] for p in report.passes]
    assert names[0] == "constant-folding" and "reparameterize" in names
    d = report.to_dict()
    assert d["op_counts_after"] == report.op_counts_after
    assert d["verify"]["max_abs_error"] == report.max_error
    assert d["verify"]["file_checked"] is True
    assert "reparameterize" in report.to_string(verbose=True)


def test_optimize_bytes_gives_the_model_back_as_bytes(repvgg_path, tmp_path):
    report = refold.optimize(repvgg_path.read_bytes(), verify=True)
    assert report.op_counts_after["Conv"] == 3
    model = report.model
    assert isinstance(model, bytes) and len(model) > 100
    session = refold.Session(model, optimize=False)
    assert [v.name for v in session.inputs] == ["input"]
    report.save(tmp_path / "saved.onnx")
    assert (tmp_path / "saved.onnx").read_bytes() == model


def test_optimize_without_verify_and_with_passes_disabled(repvgg_path):
    report = refold.optimize(repvgg_path, verify=False, disable=["reparameterize", "layout"])
    assert report.max_error is None
    assert report.op_counts_after["Conv"] == 6
    assert report.layout["channels_last_weights"] == 0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda p, d: refold.optimize(b"not an onnx file", d), "<bytes>"),
        (lambda p, d: refold.optimize(p.parent / "missing.onnx", d), "missing.onnx"),
        (lambda p, d: refold.optimize(p, d, disable=["no-such-pass"]), "no-such-pass"),
        (lambda p, d: refold.optimize(p, d, input_shapes={"nope": [1, 3, 32, 32]}), "nope"),
        (lambda p, d: refold.optimize(p, d, input_shapes={"input": [1, 4, 32, 32]}),
         "dim 1 is 4, but the model declares 3"),
        (lambda p, d: refold.optimize(p, d, input_shapes={"input": "1x3"}),
         "expected a sequence of ints"),
        (lambda p, d: refold.optimize(42, d), "expected a path"),
    ],
)
def test_refusals_are_refold_errors_and_write_nothing(repvgg_path, tmp_path, call, message):
    dst = tmp_path / "out.onnx"
    with pytest.raises(refold.Error, match=None) as info:
        call(repvgg_path, dst)
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)
    assert not dst.exists()
