#!/usr/bin/python3
"""Writes the PyTorch parity goldens under tests/data/goldens/ (see tests/data/README.md).

Run with Debian's interpreter and python3-torch (PyTorch 1.13, CPU):

    /usr/bin/python3 tests/data/make_goldens.py

Not run by CI: the goldens are committed and read by tests/golden/pytorch_parity_test.cpp.

One safetensors file per case and dtype, `<case>_<f32|bf16>.safetensors`, holding
  input (and input2 for add/mul/cat), the parameters under PyTorch's names (weight, bias,
  running_mean, running_var, num_batches_tracked, or a whole model.state_dict()), and output,
plus a __metadata__ map (str -> str) with everything the C++ test needs to re-run the case:
  case, op, dtype ("float32"/"bfloat16") and the op's options with torch.nn.functional's names.
Value formats: a pair is "h,w"; conv padding is "same", "valid", "h,w" or "top,left,bottom,right"
(asymmetric, run in torch as F.pad + conv); booleans are "1"/"0"; an absent option means
PyTorch's default; lists are comma-separated; `layers` (op "module") is a JSON description of
the nn.Sequential, one object per layer with the constructor's keyword arguments.
Memory-format facts observed in torch, for 4-d outputs: `output_contiguous` (contiguous inputs)
and `output_channels_last` (input and every 4-d parameter/operand channels_last); for the
convolutions also `output_channels_last_input_only` / `output_channels_last_weight_only`.

bfloat16 (`<case>_bf16`): inputs and parameters are the float32 values rounded to bf16 in
torch; `output` is float32: torch's float32 result on exactly those bf16 values. docs/testing.md's
policy compares a bf16 result with the fp32 reference (5e-2 + 2e-2·|ref|), and torch's own bf16
kernels cannot serve as that reference here: on a CPU without AVX-512 PyTorch 1.13 runs bf16
conv2d on its slow path, which accumulates in bf16 and lands up to ~0.2 from the exact result
(outside the tolerance; the script prints every such case), and it has no CPU bf16
conv_transpose2d at all ("slow_conv_transpose2d_out_cpu" not implemented for 'BFloat16').

Self-checks before anything is written: the safetensors writer round-trips, channels_last inputs
give the same values as contiguous ones, and every output matches a float64 recomputation within
the tolerance policy of docs/testing.md (so a golden never demands more than refold promises).
"""

import json
import math
import pathlib
import struct
import sys
import warnings
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

OUT_DIR = pathlib.Path(__file__).resolve().parent / "goldens"
SIZE_LIMIT = 5 * 1024 * 1024  # issue 2: committed goldens stay under 5 MB
CL = torch.channels_last

# docs/testing.md tolerance policy: (atol, rtol).
TOL_F32 = (1e-4, 1e-4)
TOL_BF16 = (5e-2, 2e-2)

# ----------------------------------------------------------------------------------------------
# safetensors (no Python package on Debian 12): 8-byte little-endian header length N, N bytes
# of JSON padded with spaces to a multiple of 8, then the raw little-endian tensor bytes,
# contiguous from offset 0 in header order.

_ST_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.int64: "I64"}


def _raw_bytes(t):
    t = t.detach().contiguous()  # logical row-major order, as safetensors stores it
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    if t.dtype == torch.float32:
        return t.numpy().astype("<f4").tobytes()
    if t.dtype == torch.int64:
        return t.numpy().astype("<i8").tobytes()
    raise ValueError(f"unsupported dtype {t.dtype}")


def encode_safetensors(tensors, metadata):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        raw = _raw_bytes(t)
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def decode_safetensors(data):
    """Only for the round-trip self-check of encode_safetensors."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    metadata = header.pop("__metadata__", {})
    out, end = {}, 0
    for name, info in header.items():
        begin, stop = info["data_offsets"]
        assert begin == end, "tensors must be contiguous from offset 0"
        end = stop
        chunk = bytearray(body[begin:stop])
        if info["dtype"] == "BF16":
            t = torch.frombuffer(chunk, dtype=torch.int16).view(torch.bfloat16)
        elif info["dtype"] == "F32":
            t = torch.frombuffer(chunk, dtype=torch.float32)
        else:
            t = torch.frombuffer(chunk, dtype=torch.int64)
        out[name] = t.reshape(info["shape"])
    assert end == len(body), "buffer must end with the last tensor"
    return out, metadata


# ----------------------------------------------------------------------------------------------
# helpers

def pair(v):
    h, w = (v, v) if isinstance(v, int) else v
    return f"{h},{w}"


def flag(b):
    return "1" if b else "0"


def ints(values):
    return ",".join(str(v) for v in values)


def to_cl(t):
    return t.contiguous(memory_format=CL) if t is not None and t.dim() == 4 else t


def is_cl(t):
    return t.is_contiguous(memory_format=CL)


def close(actual, expected, tol):
    atol, rtol = tol
    a, e = actual.double(), expected.double()
    return bool(torch.all((a - e).abs() <= atol + rtol * e.abs()))


def max_err(actual, expected):
    return float((actual.double() - expected.double()).abs().max())


def seed_for(name):
    """A per-case seed, so adding a case never changes the others' values."""
    torch.manual_seed(zlib.crc32(name.encode("utf-8")))


# ----------------------------------------------------------------------------------------------
# op cases. Each builder returns (tensors in float32, options metadata, fn) where
# fn(tensors) -> output runs the op on the given tensors (any dtype and layout).
# Tensor roles: everything except `output` is an input of fn.

def conv_case(in_ch, out_ch, kernel, hw, n=2, stride=1, padding=0, dilation=1, groups=1,
              bias=True):
    x = torch.randn(n, in_ch, *hw)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    fan_in = in_ch // groups * kh * kw
    w = torch.randn(out_ch, in_ch // groups, kh, kw) / math.sqrt(fan_in)
    tensors = {"input": x, "weight": w}
    if bias:
        tensors["bias"] = torch.randn(out_ch)
    meta = {"op": "conv2d", "stride": pair(stride), "dilation": pair(dilation),
            "groups": str(groups), "bias": flag(bias)}
    if isinstance(padding, str):
        meta["padding"] = padding
    elif isinstance(padding, tuple) and len(padding) == 4:
        meta["padding"] = ints(padding)  # top, left, bottom, right
    else:
        meta["padding"] = pair(padding)

    def fn(t):
        inp, pad = t["input"], padding
        if isinstance(padding, tuple) and len(padding) == 4:
            top, left, bottom, right = padding
            inp, pad = F.pad(inp, (left, right, top, bottom)), 0
        return F.conv2d(inp, t["weight"], t.get("bias"), stride=stride, padding=pad,
                        dilation=dilation, groups=groups)
    return tensors, meta, fn


def conv_transpose_case(in_ch, out_ch, kernel, hw, n=2, stride=1, padding=0,
                        output_padding=0, groups=1, dilation=1, bias=True):
    x = torch.randn(n, in_ch, *hw)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    # PyTorch's ConvTranspose2d weight layout: [in, out/groups, kh, kw].
    w = torch.randn(in_ch, out_ch // groups, kh, kw) / math.sqrt(in_ch // groups * kh * kw)
    tensors = {"input": x, "weight": w}
    if bias:
        tensors["bias"] = torch.randn(out_ch)
    meta = {"op": "conv_transpose2d", "stride": pair(stride), "padding": pair(padding),
            "output_padding": pair(output_padding), "groups": str(groups),
            "dilation": pair(dilation), "bias": flag(bias)}

    def fn(t):
        return F.conv_transpose2d(t["input"], t["weight"], t.get("bias"), stride=stride,
                                  padding=padding, output_padding=output_padding,
                                  groups=groups, dilation=dilation)
    return tensors, meta, fn


def batch_norm_case(channels, hw, n=2, eps=1e-5, affine=True):
    x = torch.randn(n, channels, *hw)
    # Randomized running statistics (as RepVGG's own check does): the defaults 0/1 would hide
    # a kernel that ignores them.
    tensors = {"input": x, "running_mean": torch.randn(channels),
               "running_var": torch.rand(channels) + 0.5,
               "num_batches_tracked": torch.tensor(5, dtype=torch.int64)}
    if affine:
        tensors["weight"] = torch.randn(channels)
        tensors["bias"] = torch.randn(channels)
    meta = {"op": "batch_norm", "eps": repr(eps), "affine": flag(affine)}

    def fn(t):
        return F.batch_norm(t["input"], t["running_mean"], t["running_var"], t.get("weight"),
                            t.get("bias"), training=False, eps=eps)
    return tensors, meta, fn


ACTIVATIONS = {
    "relu": F.relu, "relu6": F.relu6, "sigmoid": torch.sigmoid, "silu": F.silu,
    "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid,
}


def activation_case(op, negative_slope=None):
    # ×4 so that relu6, hardswish and hardsigmoid see both of their saturated ends.
    tensors = {"input": torch.randn(2, 13, 5, 5) * 4}
    meta = {"op": op}
    if op == "leaky_relu":
        meta["negative_slope"] = repr(negative_slope)
        return tensors, meta, lambda t: F.leaky_relu(t["input"], negative_slope)
    return tensors, meta, lambda t: ACTIVATIONS[op](t["input"])


def binary_case(op, shape_a, shape_b):
    tensors = {"input": torch.randn(*shape_a), "input2": torch.randn(*shape_b)}
    fn = (lambda t: t["input"] + t["input2"]) if op == "add" else (
        lambda t: t["input"] * t["input2"])
    return tensors, {"op": op}, fn


def max_pool_case(hw, kernel, stride=None, padding=0, dilation=1, ceil_mode=False, c=13):
    tensors = {"input": torch.randn(2, c, *hw)}
    meta = {"op": "max_pool2d", "kernel_size": pair(kernel), "padding": pair(padding),
            "dilation": pair(dilation), "ceil_mode": flag(ceil_mode)}
    if stride is not None:
        meta["stride"] = pair(stride)

    def fn(t):
        return F.max_pool2d(t["input"], kernel, stride, padding, dilation, ceil_mode=ceil_mode)
    return tensors, meta, fn


def avg_pool_case(hw, kernel, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                  divisor_override=None, c=13):
    tensors = {"input": torch.randn(2, c, *hw)}
    meta = {"op": "avg_pool2d", "kernel_size": pair(kernel), "padding": pair(padding),
            "ceil_mode": flag(ceil_mode), "count_include_pad": flag(count_include_pad)}
    if stride is not None:
        meta["stride"] = pair(stride)
    if divisor_override is not None:
        meta["divisor_override"] = str(divisor_override)

    def fn(t):
        return F.avg_pool2d(t["input"], kernel, stride, padding, ceil_mode=ceil_mode,
                            count_include_pad=count_include_pad,
                            divisor_override=divisor_override)
    return tensors, meta, fn


def adaptive_case(hw, output_size, c=13):
    tensors = {"input": torch.randn(2, c, *hw)}
    meta = {"op": "adaptive_avg_pool2d", "output_size": pair(output_size)}
    return tensors, meta, lambda t: F.adaptive_avg_pool2d(t["input"], output_size)


def linear_case(in_shape, out_features, bias=True):
    in_features = in_shape[-1]
    tensors = {"input": torch.randn(*in_shape),
               "weight": torch.randn(out_features, in_features) / math.sqrt(in_features)}
    if bias:
        tensors["bias"] = torch.randn(out_features)
    meta = {"op": "linear", "bias": flag(bias)}
    return tensors, meta, lambda t: F.linear(t["input"], t["weight"], t.get("bias"))


def flatten_case(shape, start_dim, end_dim):
    tensors = {"input": torch.randn(*shape)}
    meta = {"op": "flatten", "start_dim": str(start_dim), "end_dim": str(end_dim)}
    return tensors, meta, lambda t: torch.flatten(t["input"], start_dim, end_dim)


def cat_case(shape_a, shape_b, dim):
    tensors = {"input": torch.randn(*shape_a), "input2": torch.randn(*shape_b)}
    meta = {"op": "cat", "dim": str(dim)}
    return tensors, meta, lambda t: torch.cat([t["input"], t["input2"]], dim)


def pad_case(shape, pads, value=0.0):
    tensors = {"input": torch.randn(*shape)}
    meta = {"op": "pad", "pads": ints(pads), "value": repr(value)}
    return tensors, meta, lambda t: F.pad(t["input"], pads, mode="constant", value=value)


def pixel_shuffle_case(shape, factor):
    tensors = {"input": torch.randn(*shape)}
    meta = {"op": "pixel_shuffle", "upscale_factor": str(factor)}
    return tensors, meta, lambda t: F.pixel_shuffle(t["input"], factor)


OP_CASES = {
    # --- conv2d: groups 1/2/depthwise, odd channels, stride, dilation, every padding form
    "conv2d_k3_p1": lambda: conv_case(13, 19, 3, (7, 7), padding=1),
    "conv2d_groups2": lambda: conv_case(14, 10, 3, (7, 7), padding=1, groups=2),
    "conv2d_depthwise": lambda: conv_case(13, 13, 3, (7, 7), padding=1, groups=13),
    "conv2d_depthwise_multiplier2": lambda: conv_case(13, 26, 3, (6, 7), padding=1, groups=13),
    "conv2d_stride2": lambda: conv_case(13, 19, 3, (7, 7), stride=2, padding=1),
    "conv2d_stride_2x1_k3x2": lambda: conv_case(13, 19, (3, 2), (7, 6), stride=(2, 1),
                                                padding=(1, 0)),
    "conv2d_dilation2": lambda: conv_case(13, 19, 3, (7, 7), padding=2, dilation=2),
    "conv2d_pad_asymmetric": lambda: conv_case(13, 19, 3, (7, 6), padding=(2, 1, 0, 3)),
    "conv2d_same_odd_k3": lambda: conv_case(13, 19, 3, (7, 7), padding="same"),
    "conv2d_same_even_k4": lambda: conv_case(13, 19, 4, (7, 6), padding="same"),
    "conv2d_same_k2x3_dilation2": lambda: conv_case(13, 19, (2, 3), (7, 7), padding="same",
                                                    dilation=2),
    "conv2d_valid": lambda: conv_case(13, 19, 3, (7, 6), padding="valid"),
    "conv2d_no_bias": lambda: conv_case(13, 19, 3, (7, 7), padding=1, bias=False),
    "conv2d_k1_batch1": lambda: conv_case(19, 13, 1, (5, 5), n=1),
    # --- conv_transpose2d
    "conv_transpose2d_stride2_outpad1": lambda: conv_transpose_case(
        13, 19, 3, (5, 5), stride=2, padding=1, output_padding=1),
    "conv_transpose2d_groups2": lambda: conv_transpose_case(14, 10, 3, (5, 5), stride=2,
                                                            padding=1, groups=2),
    "conv_transpose2d_dilation2": lambda: conv_transpose_case(13, 7, 3, (5, 5), padding=1,
                                                              dilation=2),
    "conv_transpose2d_stride_3x2": lambda: conv_transpose_case(
        13, 19, (3, 4), (4, 5), stride=(3, 2), padding=(1, 0), output_padding=(2, 1)),
    "conv_transpose2d_depthwise_no_bias": lambda: conv_transpose_case(
        13, 13, 2, (5, 5), stride=2, groups=13, bias=False),
    # --- batch_norm (inference)
    "batch_norm": lambda: batch_norm_case(13, (5, 5)),
    "batch_norm_eps1e-3_19ch": lambda: batch_norm_case(19, (4, 3), eps=1e-3),
    "batch_norm_no_affine": lambda: batch_norm_case(13, (5, 5), affine=False),
    # --- activations
    "relu": lambda: activation_case("relu"),
    "relu6": lambda: activation_case("relu6"),
    "leaky_relu": lambda: activation_case("leaky_relu", 0.01),
    "leaky_relu_0.2": lambda: activation_case("leaky_relu", 0.2),
    "sigmoid": lambda: activation_case("sigmoid"),
    "silu": lambda: activation_case("silu"),
    "hardswish": lambda: activation_case("hardswish"),
    "hardsigmoid": lambda: activation_case("hardsigmoid"),
    # --- add / mul, NumPy broadcasting
    "add_same_shape": lambda: binary_case("add", (2, 13, 5, 5), (2, 13, 5, 5)),
    "add_broadcast_channel": lambda: binary_case("add", (2, 13, 5, 5), (1, 13, 1, 1)),
    "add_broadcast_lower_rank": lambda: binary_case("add", (2, 13, 5, 5), (5,)),
    "add_broadcast_first_operand": lambda: binary_case("add", (2, 1, 5, 5), (2, 13, 5, 5)),
    "mul_broadcast_channel": lambda: binary_case("mul", (2, 13, 5, 5), (13, 1, 1)),
    "mul_broadcast_both": lambda: binary_case("mul", (2, 13, 1, 5), (1, 1, 5, 1)),
    # --- max_pool2d
    "max_pool2d_k3_s2_p1": lambda: max_pool_case((7, 7), 3, 2, 1),
    "max_pool2d_default_stride": lambda: max_pool_case((6, 7), 2),
    # ceil_mode: the last window starts inside the input and hangs into the padding (6 → 4).
    "max_pool2d_ceil_window_in_padding": lambda: max_pool_case((6, 6), 3, 2, 1, ceil_mode=True),
    # ceil_mode: the extra window would start in the right padding, so it is dropped (5 → 3).
    "max_pool2d_ceil_drop_last": lambda: max_pool_case((5, 5), 2, 2, 1, ceil_mode=True),
    "max_pool2d_ceil_no_pad": lambda: max_pool_case((6, 7), 3, 2, 0, ceil_mode=True),
    "max_pool2d_dilation2": lambda: max_pool_case((7, 7), 3, 1, 1, dilation=2),
    "max_pool2d_k3x2_s2x1": lambda: max_pool_case((7, 6), (3, 2), (2, 1), (1, 0)),
    # --- avg_pool2d
    "avg_pool2d_include_pad": lambda: avg_pool_case((7, 7), 3, 2, 1),
    "avg_pool2d_exclude_pad": lambda: avg_pool_case((7, 7), 3, 2, 1, count_include_pad=False),
    # ceil_mode windows past the padding: the divisor counts only input + padding cells.
    "avg_pool2d_ceil_include_pad": lambda: avg_pool_case((6, 6), 3, 2, 1, ceil_mode=True),
    "avg_pool2d_ceil_exclude_pad": lambda: avg_pool_case((6, 6), 3, 2, 1, ceil_mode=True,
                                                         count_include_pad=False),
    "avg_pool2d_ceil_no_pad": lambda: avg_pool_case((6, 7), 3, 2, 0, ceil_mode=True),
    "avg_pool2d_divisor_override": lambda: avg_pool_case((7, 7), 3, 2, 1, divisor_override=4),
    "avg_pool2d_default_stride_k2x3": lambda: avg_pool_case((6, 7), (2, 3)),
    # --- adaptive_avg_pool2d
    "adaptive_avg_pool2d_7_to_3": lambda: adaptive_case((7, 7), 3),
    "adaptive_avg_pool2d_5_to_1": lambda: adaptive_case((5, 5), 1),
    "adaptive_avg_pool2d_7x5_to_3x2": lambda: adaptive_case((7, 5), (3, 2)),
    # --- linear
    "linear": lambda: linear_case((4, 19), 7),
    "linear_no_bias": lambda: linear_case((3, 13), 5, bias=False),
    "linear_4d_input": lambda: linear_case((2, 3, 5, 19), 7),
    # --- flatten
    "flatten_1_to_end": lambda: flatten_case((2, 13, 3, 3), 1, -1),
    "flatten_2_to_3": lambda: flatten_case((2, 13, 3, 4), 2, 3),
    "flatten_0_to_1": lambda: flatten_case((2, 13, 3, 4), 0, 1),
    # --- cat
    "cat_dim1": lambda: cat_case((2, 5, 4, 4), (2, 8, 4, 4), 1),
    "cat_dim3": lambda: cat_case((2, 5, 4, 3), (2, 5, 4, 6), 3),
    "cat_dim_minus2": lambda: cat_case((2, 5, 3, 4), (2, 5, 2, 4), -2),
    # --- pad (F.pad, constant)
    "pad_asymmetric": lambda: pad_case((2, 5, 4, 4), (1, 2, 0, 3)),
    "pad_negative_crop": lambda: pad_case((2, 5, 5, 6), (-1, 2, -2, 1), 0.5),
    "pad_channels": lambda: pad_case((2, 5, 3, 3), (0, 0, 1, 0, 1, 2), -1.0),
    "pad_last_dim_only": lambda: pad_case((2, 5, 3, 3), (2, 1)),
    # --- pixel_shuffle
    "pixel_shuffle_3": lambda: pixel_shuffle_case((2, 18, 3, 3), 3),
    "pixel_shuffle_2": lambda: pixel_shuffle_case((1, 12, 4, 5), 2),
}

# ----------------------------------------------------------------------------------------------
# module cases: an nn.Sequential built from a JSON layer list (the same list the C++ test reads)

def build_layer(spec):
    kind, kw = spec["type"], {k: v for k, v in spec.items() if k != "type"}
    if kind == "Sequential":
        return nn.Sequential(*[build_layer(s) for s in kw["layers"]])
    for key in ("kernel_size", "stride", "padding", "dilation", "output_padding",
                "output_size"):
        if isinstance(kw.get(key), list):
            kw[key] = tuple(kw[key])
    return getattr(nn, kind)(**kw)


def randomize_bn(model):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn_like(m.running_mean))
            m.running_var.copy_(torch.rand_like(m.running_var) + 0.5)
            m.weight.data.copy_(torch.randn_like(m.weight))
            m.bias.data.copy_(torch.randn_like(m.bias))
            m.num_batches_tracked.fill_(3)  # non-zero, so loading it is observable


MODULE_CASES = {
    # The seed's own example (convert_conv2d_weight_memory_format's docstring): N=2, C=8, 4×4
    # input of randint(1, 10), nn.Sequential(nn.Conv2d(8, 4, 3)).
    "module_seed_example": {
        "input": lambda: torch.randint(1, 10, (2, 8, 4, 4)).float(),
        "layers": [{"type": "Conv2d", "in_channels": 8, "out_channels": 4, "kernel_size": 3}],
    },
    # A small CNN whose state_dict has nested names ("0.1.running_var", …) and BN's
    # num_batches_tracked (int64, 0-d): proves state_dict loading by name.
    "module_small_cnn": {
        "input": lambda: torch.randn(2, 3, 9, 9),
        "layers": [
            {"type": "Sequential", "layers": [
                {"type": "Conv2d", "in_channels": 3, "out_channels": 13, "kernel_size": 3,
                 "padding": 1},
                {"type": "BatchNorm2d", "num_features": 13},
                {"type": "ReLU"}]},
            {"type": "MaxPool2d", "kernel_size": 2, "ceil_mode": True},
            {"type": "Conv2d", "in_channels": 13, "out_channels": 19, "kernel_size": 3,
             "stride": 2, "padding": 1, "bias": False},
            {"type": "BatchNorm2d", "num_features": 19, "eps": 1e-3},
            {"type": "ReLU6"},
            {"type": "Conv2d", "in_channels": 19, "out_channels": 19, "kernel_size": 3,
             "padding": "same", "groups": 19},
            {"type": "Hardswish"},
            {"type": "AvgPool2d", "kernel_size": 3, "stride": 1, "padding": 1,
             "count_include_pad": False},
            {"type": "SiLU"},
            {"type": "AdaptiveAvgPool2d", "output_size": 1},
            {"type": "Flatten"},
            {"type": "Linear", "in_features": 19, "out_features": 5},
        ],
    },
    # The remaining module types: Identity, LeakyReLU, Sigmoid, Hardsigmoid, PixelShuffle,
    # ConvTranspose2d (float32-computed bf16 golden, see the module docstring).
    "module_zoo": {
        "input": lambda: torch.randn(1, 4, 5, 5),
        "layers": [
            {"type": "Conv2d", "in_channels": 4, "out_channels": 8, "kernel_size": 1},
            {"type": "Identity"},
            {"type": "LeakyReLU", "negative_slope": 0.1},
            {"type": "PixelShuffle", "upscale_factor": 2},
            {"type": "ConvTranspose2d", "in_channels": 2, "out_channels": 6, "kernel_size": 3,
             "stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
            {"type": "Sigmoid"},
            {"type": "Conv2d", "in_channels": 6, "out_channels": 5, "kernel_size": [3, 2],
             "dilation": 2, "padding": "valid"},
            {"type": "Hardsigmoid"},
            {"type": "MaxPool2d", "kernel_size": 3, "stride": 2, "padding": 1,
             "ceil_mode": True},
        ],
    },
}


def module_case(name):
    spec = MODULE_CASES[name]
    x = spec["input"]()
    model = build_layer({"type": "Sequential", "layers": spec["layers"]})
    randomize_bn(model)
    model.eval()
    tensors = {"input": x}
    for key, value in model.state_dict().items():
        tensors[key] = value.detach().clone()
    meta = {"op": "module", "layers": json.dumps(spec["layers"], separators=(",", ":"))}

    def fn(t, round_to=None):
        # Loads the (possibly converted) tensors by name, as the C++ test does, keeping the
        # given layouts (channels_last weights). `round_to` rounds every leaf module's output
        # to that dtype: how refold, which computes each op in double and rounds once,
        # behaves layer by layer.
        m = build_layer({"type": "Sequential", "layers": spec["layers"]})
        m.to(t["input"].dtype)
        m.load_state_dict({k: v for k, v in t.items() if k != "input"})
        params = dict(m.named_parameters())
        for key, value in t.items():
            if key in params and value.dim() == 4:
                params[key].data = value
        if round_to is not None:
            for leaf in m.modules():
                if not list(leaf.children()):
                    leaf.register_forward_hook(
                        lambda _m, _i, out: out.to(round_to).to(out.dtype))
        m.eval()
        return m(t["input"])
    return tensors, meta, fn


# ----------------------------------------------------------------------------------------------
# generation

def run(fn, tensors, **kwargs):
    with torch.no_grad():
        return fn(tensors, **kwargs)


def cast(tensors, dtype):
    return {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tensors.items()}


def like_refold(fn, tensors, op, dtype):
    """What refold's reference computes: each op in float64 on the stored values, rounded once
    to `dtype` (for a model, after every layer)."""
    kwargs = {"round_to": dtype} if op == "module" else {}
    return run(fn, cast(tensors, torch.float64), **kwargs).to(dtype)


def make_variant(name, tensors32, meta, fn, dtype, native_bf16_off):
    op = meta["op"]
    tensors = cast(tensors32, dtype)  # bf16: the float32 values rounded once, in torch
    # The golden output is torch's float32 result on the stored values (see the docstring).
    out = run(fn, cast(tensors, torch.float32))
    tol = TOL_F32 if dtype == torch.float32 else TOL_BF16

    # Self-check 1: the C++ test compares refold to `out` within docs/testing.md's tolerance; make
    # sure a correct refold (float64 math, one rounding per op) meets that bar.
    expected = like_refold(fn, tensors, op, dtype)
    if not close(expected, out, tol):
        sys.exit(f"{name} {dtype}: a float64 recomputation is {max_err(expected, out):.3g} away")

    # Diagnostic only: where torch's own bf16 kernels land outside the bf16 tolerance.
    if dtype == torch.bfloat16:
        try:
            native = run(fn, tensors)
            if not close(native, out, tol):
                native_bf16_off.append(f"{name} ({max_err(native, out):.3g})")
        except RuntimeError as error:
            native_bf16_off.append(f"{name} (unsupported: {str(error).splitlines()[0]})")

    meta = dict(meta)
    meta.update({"case": name, "dtype": "float32" if dtype == torch.float32 else "bfloat16"})

    # Memory-format facts (observed in float32), and self-check 2: channels_last inputs give
    # the same values.
    base = cast(tensors, torch.float32)
    if out.dim() == 4:
        meta["output_contiguous"] = flag(out.is_contiguous())
    if tensors["input"].dim() == 4:
        out_cl = run(fn, {k: to_cl(v) for k, v in base.items()})
        if not close(out_cl, out, TOL_F32):
            sys.exit(f"{name} {dtype}: channels_last differs by {max_err(out_cl, out):.3g}")
        if out.dim() == 4:
            meta["output_channels_last"] = flag(is_cl(out_cl))
        if op in ("conv2d", "conv_transpose2d"):
            only_in = dict(base, input=to_cl(base["input"]))
            only_w = dict(base, weight=to_cl(base["weight"]))
            meta["output_channels_last_input_only"] = flag(is_cl(run(fn, only_in)))
            meta["output_channels_last_weight_only"] = flag(is_cl(run(fn, only_w)))

    payload = dict(tensors)
    payload["output"] = out
    data = encode_safetensors(payload, meta)
    back, back_meta = decode_safetensors(data)  # self-check 3: the writer round-trips
    assert back_meta == meta and list(back) == list(payload)
    for key, value in payload.items():
        assert back[key].dtype == value.dtype and torch.equal(back[key], value.contiguous()), key
    return data


def main():
    torch.set_num_threads(1)  # deterministic reductions
    # padding="same" with an even kernel is exactly the case we want; torch warns it copies.
    warnings.filterwarnings("ignore", message="Using padding='same' with even kernel")
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    for old in OUT_DIR.glob("*.safetensors"):
        old.unlink()
    builders = {name: make for name, make in OP_CASES.items()}
    builders.update({name: (lambda n=name: module_case(n)) for name in MODULE_CASES})
    total, count, native_bf16_off = 0, 0, []
    for name, make in builders.items():
        for dtype, suffix in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            seed_for(name)  # both dtypes start from the same float32 values
            tensors32, meta, fn = make()
            data = make_variant(name, tensors32, meta, fn, dtype, native_bf16_off)
            (OUT_DIR / f"{name}_{suffix}.safetensors").write_bytes(data)
            total += len(data)
            count += 1
    if native_bf16_off:
        print("torch's native bf16 result is outside the bf16 tolerance (max |diff|) for:\n  "
              + "\n  ".join(native_bf16_off))
    print(f"wrote {count} goldens to {OUT_DIR}, {total} bytes ({total / 1024:.1f} KiB)")
    if total >= SIZE_LIMIT:
        sys.exit(f"goldens total {total} bytes, over the {SIZE_LIMIT}-byte limit")


if __name__ == "__main__":
    main()
