#!/usr/bin/env python3
"""Writes tests/data/onnx_dynamo/: small models exported by PyTorch's default exporter
(`torch.onnx.export(..., dynamo=True)`, IR 10, opset 18+), the op forms it writes that the
TorchScript exporter does not — ReduceMean/ReduceSum with axes as an input, Split with
num_outputs, Gelu and LayerNormalization as ops, BatchNormalization left unfolded, Resize with
scales, SiLU and HardSwish as they decompose — in the CNN blocks real models use them in.

Needs PyPI's torch ≥ 2.9 and onnxscript (bench/zoo/setup.sh's venv), not Debian's torch 1.13:

    python=$(bench/zoo/setup.sh); $python tests/data/make_dynamo_models.py

Not run by CI: the folders are committed (each model < 1 MB) and tested by
tests/onnx/dynamo_exports_test.cpp. Per model, tests/data/onnx_dynamo/<name>/ is an ONNX test
folder (model.onnx, test_data_set_0/input_0.pb, output_0.pb: PyTorch's eval-mode output), and
EXPECTED.json holds per model the IR version and opset written, the op counts of the export
("before") and the most each op may keep after `refold optimize` ("after").
"""

import json
import pathlib
import sys

import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = pathlib.Path(__file__).resolve().parent / "onnx_dynamo"


def randomize(module: nn.Module) -> nn.Module:
    """Every BatchNorm with random statistics, as in a trained network."""
    g = torch.Generator().manual_seed(0)
    for m in module.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.BatchNorm1d)):
            c = m.num_features
            m.running_mean.copy_(torch.rand(c, generator=g) - 0.5)
            m.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
            m.bias.data.copy_(torch.rand(c, generator=g) - 0.5)
    return module.eval()


def conv_bn(cin, cout, k, stride=1, groups=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                         nn.BatchNorm2d(cout))


class SqueezeExcite(nn.Module):
    """MobileNetV3/EfficientNet: conv → BN → HardSwish → SE (ReduceMean, 1×1s, Sigmoid, Mul)."""

    def __init__(self, c=16):
        super().__init__()
        self.stem = conv_bn(3, c, 3, 2)
        self.dw = conv_bn(c, c, 3, groups=c)
        self.reduce = nn.Conv2d(c, c // 4, 1)
        self.expand = nn.Conv2d(c // 4, c, 1)
        self.head = nn.Conv2d(c, 8, 1)

    def forward(self, x):
        x = F.hardswish(self.stem(x))
        y = F.silu(self.dw(x))
        s = y.mean((2, 3), keepdim=True)
        s = torch.sigmoid(self.expand(F.relu(self.reduce(s))))
        return self.head(y * s) + x.sum(1, keepdim=True)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt: depthwise 7×7, channels-last LayerNorm, Linear → GELU → Linear, layer scale."""

    def __init__(self, c=16):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 4, 4)
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.fc1 = nn.Linear(c, 4 * c)
        self.fc2 = nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 0.5))

    def forward(self, x):
        x = self.stem(x)
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y)), approximate="tanh")) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class SplitAttention(nn.Module):
    """YOLO C2f's chunk and LeViT-style attention: Split num_outputs, MatMul, Softmax."""

    def __init__(self, c=16):
        super().__init__()
        self.stem = conv_bn(3, c, 3, 2)
        self.qkv = nn.Conv2d(c, 3 * c, 1)
        self.out = nn.Conv2d(2 * c, c, 1)

    def forward(self, x):
        x = F.silu(self.stem(x))
        n, c, h, w = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=1)
        q, k, v = (t.flatten(2) for t in (q, k, v))
        a = torch.softmax(q.transpose(1, 2) @ k / c ** 0.5, dim=-1)
        y = (v @ a.transpose(1, 2)).reshape(n, c, h, w)
        return self.out(torch.cat([x, y], 1))


class RepVGGUnet(nn.Module):
    """Two RepVGG blocks in training form (3×3 + 1×1 + identity, each with BN, which the dynamo
    exporter leaves unfolded), then nearest and bilinear upsampling back to the input size."""

    def __init__(self, c=8):
        super().__init__()
        self.down = conv_bn(3, c, 3, 2)
        self.b3, self.b1, self.bid = conv_bn(c, c, 3), conv_bn(c, c, 1), nn.BatchNorm2d(c)
        self.c3, self.c1 = conv_bn(c, c, 3), conv_bn(c, c, 1)
        self.head = nn.Conv2d(c, 4, 3, padding=1)

    def forward(self, x):
        x = F.relu(self.down(x))
        x = F.relu(self.b3(x) + self.b1(x) + self.bid(x))
        x = F.relu(self.c3(x) + self.c1(x))
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        return F.interpolate(self.head(x), scale_factor=1.0, mode="bilinear", align_corners=False)


# name → (module, input shape, the most of each op after refold optimize).
MODELS = {
    "se_hardswish": (SqueezeExcite, (1, 3, 32, 32), {"BatchNormalization": 0, "Conv": 5}),
    "convnext_layernorm_gelu": (ConvNeXtBlock, (1, 3, 32, 32),
                                {"LayerNormalization": 1, "Gelu": 1, "Mul": 0}),
    "split_attention": (SplitAttention, (1, 3, 16, 16), {"BatchNormalization": 0, "Split": 1}),
    "repvgg_resize": (RepVGGUnet, (1, 3, 32, 32),
                      {"BatchNormalization": 0, "Conv": 4, "Add": 0}),
}


def op_counts(model: onnx.ModelProto) -> dict:
    counts = {}
    for n in model.graph.node:
        counts[n.op_type] = counts.get(n.op_type, 0) + 1
    return dict(sorted(counts.items()))


def main() -> int:
    if not hasattr(torch.onnx, "export") or tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 9):
        print(f"needs torch >= 2.9 (the dynamo exporter), have {torch.__version__}", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    expected = {}
    for name, (cls, shape, after) in MODELS.items():
        module = randomize(cls())
        x = torch.randn(*shape)
        with torch.no_grad():
            y = module(x)
            program = torch.onnx.export(module, (x,), dynamo=True, external_data=False)
        model = program.model_proto
        onnx.checker.check_model(model)
        folder = OUT / name
        (folder / "test_data_set_0").mkdir(parents=True, exist_ok=True)
        data = model.SerializeToString()
        assert len(data) < 1 << 20, f"{name}: {len(data)} bytes, over 1 MB"
        (folder / "model.onnx").write_bytes(data)
        inputs = [i.name for i in model.graph.input]
        assert len(inputs) == 1, inputs
        tensor = onnx.numpy_helper.from_array(x.numpy(), inputs[0])
        (folder / "test_data_set_0" / "input_0.pb").write_bytes(tensor.SerializeToString())
        out = onnx.numpy_helper.from_array(y.numpy(), model.graph.output[0].name)
        (folder / "test_data_set_0" / "output_0.pb").write_bytes(out.SerializeToString())
        opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        expected[name] = {"ir_version": model.ir_version, "opset": opset,
                          "before": op_counts(model), "after": after}
        print(f"{name}: IR {model.ir_version}, opset {opset}, {len(data)} bytes, "
              f"{sum(expected[name]['before'].values())} nodes")
    (OUT / "EXPECTED.json").write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
