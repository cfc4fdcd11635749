#!/usr/bin/python3
"""Writes the ONNX test models under tests/data/onnx/ (issue 5, "Tests").

Run with Debian's interpreter and python3-torch / python3-onnx (PyTorch 1.13, onnx 1.12, CPU):

    /usr/bin/python3 tests/data/make_onnx_models.py
    /usr/bin/python3 tests/data/make_onnx_models.py --large tests/data/onnx_large/repvgg_a0_train.onnx

Not run by CI: the folders are committed and run by `refold test tests/data/onnx/*/`.

Each model is a small *training-form* network (eval mode, every BatchNorm's running_mean,
running_var, weight and bias randomized as RepVGG's own check does) built from the block
definitions of make_reparam_goldens.py (restatements of the public reference implementations,
with their child and parameter names), exported by torch.onnx.export the way a user exports:
do_constant_folding and training mode at their defaults, so the exporter folds each conv's *own*
BatchNormalization into the Conv and leaves the multi-branch structure (the Adds, the identity
BN, the BN after a sum, after an AveragePool or after a ConvTranspose) for refold to merge. One
model (`repvgg_bn_unfolded`) is exported with training=TrainingMode.PRESERVE, which skips the
exporter's eval peephole, so every Conv → BatchNormalization pair stays unfolded.

Per model, tests/data/onnx/<name>/ is an ONNX test folder (the layout of the onnx node tests):
    model.onnx
    test_data_set_0/input_0.pb     TensorProto, bound to graph input 0 by position
    test_data_set_0/output_0.pb    PyTorch's eval-mode output (float32), graph output 0, …
and tests/data/onnx/EXPECTED.json holds, per model, the op counts of the exported graph
("before"), the minimal counts after optimization ("after", derived by hand below: see EXPECTED),
and the minimal number of layout permutes of the planned NHWC layout ("layout").

--large OUT.onnx writes RepVGG-A0 in training form instead (real widths, 1×3×224×224, opset 13;
36,454,814 bytes with torch 1.13) and OUT.expected.json beside it (the same entry format).
Not committed (36 MB): whatever needs it makes it. bench/compare_peers.py calls --large itself
when no model is given; by hand, write it to tests/data/onnx_large/ (ignored by git) or /tmp.

Self-checks before anything is written: onnx.checker on each export (these files are ours, not
untrusted input); the exported Conv / BatchNormalization / Add counts equal the hand-derived
ones in EXPECTED; the float32 PyTorch output is within docs/testing.md's re-parameterization
tolerance of a float64 run of the same model; the model switched to its deployed form (the
references' switch_to_deploy) gives the same output within that tolerance and exports with
exactly the op counts EXPECTED demands after optimization; total size < 1 MB. With
--verify-ort (needs onnxruntime, e.g. the benchmark venv of bench/compare_peers.py) each
exported model is also run by ONNX Runtime and compared with PyTorch's output.
Deterministic: a fixed seed per model (crc32 of its name), one thread.
"""

import argparse
import collections
import copy
import io
import json
import pathlib
import shutil
import sys
import zlib

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# The reference blocks, with the references' own child and parameter names.
from make_reparam_goldens import (  # noqa: E402
    ACBlock, Conv, DiverseBranchBlock, MobileOneBlock, QARepVGGBlock, RepConv, RepVGGBlock,
    randomize)

OUT_DIR = HERE / "onnx"
SIZE_LIMIT = 1024 * 1024  # the committed folders stay under 1 MB in total
REPARAM_TOL = 1e-4  # docs/testing.md: max|a - b| <= 1e-4 * max(1, max|ref|)
COUNTED = ("Conv", "ConvTranspose", "BatchNormalization", "Add")


# ----------------------------------------------------------------------------------------------
# The models

class Seq(nn.Sequential):
    pass


class RepVGGA0(nn.Module):
    """DingXiaoH/RepVGG create_RepVGG_A0 (training form, no SE): a = 0.75, b = 2.5,
    stage0 3→48 s2; stage1 2×48; stage2 4×96; stage3 14×192; stage4 1×1280; each stage's first
    block stride 2; gap, flatten (the reference's out.view), linear 1280→1000."""

    def __init__(self):
        super().__init__()
        a, b = 0.75, 2.5
        self.stage0 = RepVGGBlock(3, min(64, int(64 * a)), stride=2)
        in_c = min(64, int(64 * a))
        for s, (n, w) in enumerate(zip((2, 4, 14, 1), (int(64 * a), int(128 * a), int(256 * a),
                                                        int(512 * b)))):
            blocks = []
            for i in range(n):
                blocks.append(RepVGGBlock(in_c, w, stride=2 if i == 0 else 1))
                in_c = w
            setattr(self, f"stage{s + 1}", nn.Sequential(*blocks))
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.linear = nn.Linear(in_c, 1000)

    def forward(self, x):
        for s in range(5):
            x = getattr(self, f"stage{s}")(x)
        x = self.gap(x)
        return self.linear(x.view(x.size(0), -1))


class NchwOps(nn.Module):
    """Convs with ops between them whose meaning depends on the axis order: a Concat of two conv
    branches and a Softmax over channels (both remappable to NHWC), a Transpose of H and W
    (remappable), a ShuffleNet channel shuffle (Reshape 5-d, Transpose, Reshape: a fence), a
    Flatten of a feature map (a fence) as a second output, and GlobalAveragePool → Flatten → Gemm
    (1×1 spatial: NCHW and NHWC are the same bytes)."""

    def __init__(self):
        super().__init__()
        self.stem = Conv(3, 8, 3, 1, act=nn.ReLU())          # Conv(+BN folded), Relu
        self.branch_a = nn.Conv2d(8, 8, 1)                      # Conv with bias
        self.branch_b = Conv(8, 8, 3, 1, act=nn.ReLU())        # Conv(+BN folded), Relu
        self.down = Conv(16, 16, 3, 2, act=nn.ReLU())          # 16×16 → 8×8
        self.head = Conv(16, 16, 3, 1, act=nn.ReLU())
        self.gap = nn.AdaptiveAvgPool2d(1)                      # → GlobalAveragePool
        self.fc = nn.Linear(16, 10)                             # → Gemm

    def forward(self, x):
        x = self.stem(x)
        x = torch.cat([self.branch_a(x), self.branch_b(x)], dim=1)
        x = torch.softmax(x, dim=1)
        x = x.transpose(2, 3)
        x = self.down(x)
        n, c, h, w = x.shape
        x = x.reshape(n, 2, c // 2, h, w).transpose(1, 2).reshape(n, c, h, w)  # channel shuffle
        x = self.head(x)
        logits = self.fc(torch.flatten(self.gap(x), 1))
        return logits, torch.flatten(x, 1)


class ConvTransposeBN(nn.Module):
    """A stem conv, then ConvTranspose2d (groups 2, stride (2, 1), output_padding (1, 0), no
    bias) → BatchNorm2d → ReLU: the decoder pattern whose BN the exporter does not fold."""

    def __init__(self):
        super().__init__()
        self.stem = Conv(3, 8, 3, 1, act=nn.ReLU())
        self.up = nn.ConvTranspose2d(8, 8, 3, stride=(2, 1), padding=1, output_padding=(1, 0),
                                     groups=2, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.bn(self.up(self.stem(x))))


class ConvTransposeAffine(nn.Module):
    """ConvTranspose2d (groups 2, stride 2) then a learned per-channel scale and shift
    (x * scale + shift with [1, C, 1, 1] parameters, as a decoder's affine layer writes it):
    exported as ConvTranspose → Mul → Add with constants, which refold folds into the
    ConvTranspose."""

    def __init__(self):
        super().__init__()
        self.stem = Conv(3, 8, 3, 1, act=nn.ReLU())
        self.up = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.scale = nn.Parameter(0.5 + torch.rand(1, 6, 1, 1))
        self.shift = nn.Parameter(torch.randn(1, 6, 1, 1))
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.up(self.stem(x)) * self.scale + self.shift)

    def switch_to_deploy(self):
        scale = self.scale.detach().reshape(-1)
        up = self.up
        up.weight.data = conv_transpose_scaled(up, scale)
        up.bias.data = up.bias.detach() * scale + self.shift.detach().reshape(-1)
        self.forward = lambda x: self.act(self.up(self.stem(x)))


class LinearBN(nn.Module):
    """LeViT's Linear_BN (timm levit.py): a Linear without bias, then BatchNorm1d over the
    flattened tokens, `self.bn(self.c(x).flatten(0, 1)).reshape_as(x)`. Exported as MatMul →
    Flatten(axis 2) → BatchNormalization (2-d: it normalizes the features) → Reshape(Shape)."""

    def __init__(self, a, b):
        super().__init__()
        self.c = nn.Linear(a, b, bias=False)
        self.bn = nn.BatchNorm1d(b)

    def forward(self, x):
        x = self.c(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)

    def switch_to_deploy(self):
        bn = self.bn
        scale = bn.weight / (bn.running_var + bn.eps).sqrt()
        fused = nn.Linear(self.c.in_features, self.c.out_features)
        fused.weight.data = self.c.weight.detach() * scale[:, None]
        fused.bias.data = (bn.bias - bn.running_mean * scale).detach()
        self.c, self.bn = fused, nn.Identity()


class LinearBNHead(nn.Module):
    """Two LeViT Linear_BN with a Hardswish between, the tokens averaged, then a Linear with
    bias and a BatchNorm1d on its [N, C] output (exported as Gemm → BatchNormalization)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = LinearBN(8, 16), nn.Hardswish(), LinearBN(16, 8)
        self.head = nn.Linear(8, 10)
        self.head_bn = nn.BatchNorm1d(10)

    def forward(self, x):
        return self.head_bn(self.head(self.fc2(self.act(self.fc1(x))).mean(1)))

    def switch_to_deploy(self):
        bn = self.head_bn
        scale = bn.weight / (bn.running_var + bn.eps).sqrt()
        self.head.weight.data = self.head.weight.detach() * scale[:, None]
        self.head.bias.data = ((self.head.bias - bn.running_mean) * scale + bn.bias).detach()
        self.head_bn = nn.Identity()


class DBBPaddedConv(DiverseBranchBlock):
    """DiverseBranchBlock with the same parameters and the same function, written the way an
    export-friendly DBB writes BNAndPadLayer: the 1×1 conv before it takes the padding itself
    (a 1×1 conv of a zero border is 0, so conv → BN gives the BN's zero response, β − μ·γ/σ, on
    the border: exactly the value BNAndPadLayer writes there). Exports as Conv1×1(pads p) →
    Conv K×K(pads 0) and Conv1×1(pads p) → AveragePool(pads 0) → BatchNormalization, with no
    border-fill ScatterND chain."""

    def forward(self, x):
        if hasattr(self, "dbb_reparam"):
            return super().forward(x)
        p = self.kernel_size // 2

        def first(seq, conv_name, bn_layer):
            conv = getattr(seq, conv_name)
            kernel = conv.get_actual_kernel() if conv_name == "idconv1" else conv.weight
            return bn_layer.bn(F.conv2d(x, kernel, None, 1, p, 1, self.groups))

        out = self.dbb_origin(x)
        if hasattr(self, "dbb_1x1"):
            out = out + self.dbb_1x1(x)
        avg = self.dbb_avg
        if hasattr(avg, "conv"):
            out = out + avg.avgbn(avg.avg(first(avg, "conv", avg.bn)))
        else:
            out = out + avg.avgbn(avg.avg(x))
        seq = self.dbb_1x1_kxk
        name = "idconv1" if hasattr(seq, "idconv1") else "conv1"
        out = out + seq.bn2(seq.conv2(first(seq, name, seq.bn1)))
        return self.nonlinear(out)


def mobileone(in_c, out_c, k, stride=1, groups=1, branches=2):
    return MobileOneBlock(in_c, out_c, k, stride, k // 2, groups, branches)


def dbb(in_c, out_c, k, stride=1, groups=1, internal=None, cls=DiverseBranchBlock):
    return cls(in_c, out_c, k, stride, k // 2, groups, internal, nn.ReLU())


# name: (constructor, input shape, opset, export training mode or None for the default)
MODELS = {
    "repvgg": (lambda: Seq(RepVGGBlock(3, 8, stride=2), RepVGGBlock(8, 8), RepVGGBlock(8, 8)),
               (1, 3, 32, 32), 13, None),
    "repvgg_bn_unfolded": (lambda: Seq(RepVGGBlock(3, 8, stride=2), RepVGGBlock(8, 8),
                                       RepVGGBlock(8, 8)),
                           (1, 3, 32, 32), 13, torch.onnx.TrainingMode.PRESERVE),
    "repvgg_groups2": (lambda: Seq(RepVGGBlock(4, 8, stride=2, groups=2),
                                   RepVGGBlock(8, 8, groups=2), RepVGGBlock(8, 8, groups=2)),
                       (1, 4, 32, 32), 11, None),
    "acnet": (lambda: Seq(ACBlock(3, 8, 3, padding=1), nn.ReLU(),
                          ACBlock(8, 8, 3, stride=2, padding=1), nn.ReLU()),
              (1, 3, 16, 16), 17, None),
    "acnet_crop": (lambda: Seq(ACBlock(3, 8, 3, padding=0), nn.ReLU()), (1, 3, 16, 16), 13, None),
    "dbb": (lambda: Seq(dbb(3, 8, 3), dbb(8, 8, 3, stride=2, internal=16)),
            (1, 3, 16, 16), 13, None),
    "dbb_k5": (lambda: Seq(dbb(4, 4, 5, groups=4)), (1, 4, 10, 10), 17, None),
    "dbb_padded_conv": (lambda: Seq(dbb(3, 8, 3, cls=DBBPaddedConv),
                                    dbb(8, 8, 3, stride=2, internal=16, cls=DBBPaddedConv),
                                    dbb(8, 8, 3, groups=8, cls=DBBPaddedConv)),
                        (1, 3, 16, 16), 13, None),
    "mobileone": (lambda: Seq(mobileone(3, 8, 3, stride=2, branches=1),
                              mobileone(8, 8, 3, groups=8), mobileone(8, 16, 1),
                              mobileone(16, 16, 3, stride=2, groups=16), mobileone(16, 16, 1)),
                  (1, 3, 32, 32), 13, None),
    "qarepvgg": (lambda: Seq(QARepVGGBlock(3, 8, stride=2), QARepVGGBlock(8, 8),
                             QARepVGGBlock(8, 8)),
                 (1, 3, 32, 32), 13, None),
    "yolo_repconv": (lambda: Seq(Conv(3, 8, 3, 2), RepConv(8, 8, bn=True), RepConv(8, 16, s=2)),
                     (1, 3, 32, 32), 13, None),
    "convtranspose_bn": (ConvTransposeBN, (1, 3, 8, 8), 13, None),
    "convtranspose_affine": (ConvTransposeAffine, (1, 3, 6, 6), 13, None),
    "linear_bn": (LinearBNHead, (2, 5, 8), 13, None),
    "nchw_ops": (NchwOps, (1, 3, 16, 16), 13, None),
}

# ----------------------------------------------------------------------------------------------
# The expectations, by hand.
#
# "before": the op counts of each exported file, as written (BEFORE_COUNTED below is what
# torch 1.13 writes for Conv / BatchNormalization / Add; a torch that exports differently fails
# here loudly instead of silently changing the test).
# "after" / "ops_after": the minimal counts once every mergeable structure is merged. Rules:
#   - every block of RepVGG / QARepVGG / ACNet / DBB / MobileOne / RepConv becomes ONE Conv with
#     bias: its branches read the same tensor, agree on stride, dilation and groups, center in
#     the main kernel, and meet in Adds (the identity as x or BN(x), a BN after the sum; DBB's
#     1×1 → K×K and 1×1 → AvgPool → BN chains); so Conv = number of blocks (+ the plain Convs),
#     BatchNormalization = 0, Add = 0, and DBB's AveragePool / Pad / border-fill ops are gone;
#   - a BN after a ConvTranspose folds into it (BN folding into ConvTranspose);
#   - a plain Conv's bias stays in the Conv (no Add), Gemm keeps its bias;
#   - activations (Relu, Sigmoid·Mul = SiLU) stay as ops in the exported ONNX (fusion happens
#     inside refold's kernels; the exporter writes the parts back as standard ops);
#   - Constant nodes are not counted (constant folding may turn them into initializers).
# "ops_after" is checked here, not only reasoned: each model is switched to its deployed form
# with the references' own switch_to_deploy (plus a hand fold of the ConvTranspose's BN and
# YOLOv6's BN after rbr_reparam, which the exporter then folds), the deployed model must give
# the training model's output within docs/testing.md's re-parameterization tolerance, and its export
# must have exactly these op counts.
# "layout": the fewest activation permutes in the optimized graph when every Conv /
# ConvTranspose runs NHWC:
#   to_nhwc   NCHW → NHWC copies (the graph input at the first conv; again after a fence),
#   to_nchw   NHWC → NCHW copies before an op that needs NCHW order (a fence),
#   permutes  to_nhwc + to_nchw: the layout conversions the plan inserts. The data movement an
#             op makes by its own definition (a Transpose node's copy, in either layout) is not
#             a layout permute and not counted here, even where an implementation happens to
#             route it through Tensor::contiguous (and so through permute_count()),
#   nhwc_outputs  4-d graph outputs left NHWC (a writer that emits NCHW bytes permutes each one
#             once more; not counted in `permutes`, as PyTorch leaves a channels_last output so).
# Layout-agnostic (run NHWC as is): elementwise ops (Relu, Sigmoid, Mul, Add), BN, pools,
# AveragePool, Pad of H/W, Concat / Softmax on any axis (the axis is remapped), Transpose (the
# permutation is composed with the layout). Fences (need NCHW order): Reshape and Flatten of a
# tensor whose H·W > 1. A tensor with H = W = 1 is the same bytes in both layouts: no permute
# (GlobalAveragePool → Flatten/Reshape → Gemm needs none).

STRAIGHT = dict(to_nhwc=1, to_nchw=0, nhwc_outputs=1)  # conv stack: permute the input once

EXPECTED = {
    # 3 RepVGG blocks (3→8 s2 without identity; 8→8 ×2 with the BN identity).
    # Export: per block Conv3×3 and Conv1×1 with their BNs folded (bias), the identity as
    # BatchNormalization(x); Add(Add(Conv3×3, Conv1×1), BN(x)) → Relu.
    # before Conv 6, BN 2, Add 1 + 2 + 2 = 5 → after Conv 3 (one per block).
    "repvgg": dict(before={"Conv": 6, "BatchNormalization": 2, "Add": 5},
                   ops_after={"Conv": 3, "Relu": 3}, layout=STRAIGHT),
    # The same network exported with TrainingMode.PRESERVE: every conv's own BN stays
    # (Conv → BatchNormalization), so BN 6 + 2 identity = 8 before; the same minimal result.
    "repvgg_bn_unfolded": dict(before={"Conv": 6, "BatchNormalization": 8, "Add": 5},
                               ops_after={"Conv": 3, "Relu": 3}, layout=STRAIGHT),
    # RepVGG with groups 2 (4→8 s2, 8→8, 8→8), opset 11: the grouped identity kernel.
    "repvgg_groups2": dict(before={"Conv": 6, "BatchNormalization": 2, "Add": 5},
                           ops_after={"Conv": 3, "Relu": 3}, layout=STRAIGHT),
    # 2 ACBlocks (square 3×3 + 3×1 + 1×3, each BN folded by the exporter), opset 17:
    # Add(Add(square, ver), hor) per block, then Relu; before Conv 6, Add 4 → after Conv 2.
    "acnet": dict(before={"Conv": 6, "BatchNormalization": 0, "Add": 4},
                  ops_after={"Conv": 2, "Relu": 2}, layout=STRAIGHT),
    # 1 ACBlock with padding 0 (the reference's crop path): the 3×1 conv reads x[:, :, :, 1:-1]
    # and the 1×3 conv x[:, :, 1:-1, :] (two Slice ops on the input, opset 13); all three
    # windows still center, so after: one 3×3 Conv (pads 0), no Slice. Stretch: the matcher must
    # see a Conv on a centered crop of x as a Conv on x.
    "acnet_crop": dict(before={"Conv": 3, "BatchNormalization": 0, "Add": 2},
                       ops_after={"Conv": 1, "Relu": 1}, layout=STRAIGHT, stretch=True),
    # 2 DBBs, the reference code as is: 3→8 (idconv1 path: internal = in), 8→8 s2 (conv1 8→16).
    # Branches: K×K(+BN), 1×1(+BN), 1×1 → BNAndPad → AvgPool → BN, 1×1 (or idconv1) → BNAndPad
    # → K×K (pads 0) → BN. The exporter folds the BN straight after a conv whose weight is a
    # parameter (not idconv1's computed weight + I: that Conv → BN stays), keeps the AvgPool's
    # BN, and writes BNAndPad's four in-place border writes (out[:, :, 0:p, :] = v, …) as
    # Pad + ScatterND with a large Shape/Gather/Range/Expand/Where index computation (1683 nodes,
    # 16 ScatterND). Merging it needs the shape arithmetic constant-folded (the input's shape is
    # static) and the border fill recognised as "pad with the BN's zero response" (= the folded
    # 1×1 conv's bias, up to float32 rounding: the exporter computes the two by two formulas).
    # After: one Conv per block, no BN, no Add, no AveragePool, no Pad, no ScatterND.
    "dbb": dict(before={"Conv": 10, "BatchNormalization": 3, "Add": 54},
                ops_after={"Conv": 2, "Relu": 2}, layout=STRAIGHT),
    # One depthwise DBB around a 5×5 (groups = channels = 4), opset 17: no dbb_1x1, the avg
    # branch is AveragePool(5×5, pads 2) → BN on x; the 1×1 → K×K branch is conv1 4→8 (groups 4)
    # → BNAndPad with pad 2 (its four two-pixel-wide border writes as ScatterND: 415 nodes) →
    # conv2 5×5 8→4 (groups 4) → BN. Before: the exporter folds conv1's BN into it (its bias is
    # the pad value) and conv2's BN; Add 14 = 2 branch sums + the index arithmetic's. After: one
    # depthwise 5×5 Conv.
    "dbb_k5": dict(before={"Conv": 3, "BatchNormalization": 1, "Add": 14},
                   ops_after={"Conv": 1, "Relu": 1}, layout=STRAIGHT),
    # The same two DBBs with BNAndPad written as a padded 1×1 conv (DBBPaddedConv): per block
    # Conv K×K, Conv 1×1, Conv1×1(pads 1) → Pad(zeros, from the AvgPool export) → AveragePool
    # (pads 0) → BatchNormalization, Conv1×1(pads 1) → Conv K×K(pads 0) (block 1: idconv1's
    # Conv → BatchNormalization unfolded, see dbb); Add chain. Plus a third, depthwise DBB
    # (groups = out = 8): no dbb_1x1, the avg branch is AveragePool(pads 1, counting the padded
    # zeros) → BN on x itself, conv1 8→16 (groups 8) → BN → conv2 16→8 (groups 8) → BN.
    # After: one Conv per block.
    "dbb_padded_conv": dict(before={"Conv": 13, "BatchNormalization": 4, "Add": 8},
                            ops_after={"Conv": 3, "Relu": 3}, layout=STRAIGHT),
    # 5 MobileOne blocks: stem 3→8 s2 (1 branch + scale), depthwise 3×3 8→8 (2 branches, scale,
    # skip BN), pointwise 8→16 (2 branches, no scale for k = 1, no skip), depthwise 3×3 s2 (no
    # skip), pointwise 16→16 (2 branches + skip BN). Add chain: Add(Add(scale, skip), conv0),
    # conv1. After: 5 Conv.
    "mobileone": dict(before={"Conv": 12, "BatchNormalization": 2, "Add": 9},
                      ops_after={"Conv": 5, "Relu": 5}, layout=STRAIGHT),
    # 3 QARepVGG blocks: Conv3×3(+BN folded), Conv1×1 (no BN, no bias), identity x (no BN),
    # summed, then ONE BatchNormalization after the sum, Relu. After: 3 Conv (the BN after the
    # sum folds into the merged conv).
    "qarepvgg": dict(before={"Conv": 6, "BatchNormalization": 3, "Add": 5},
                     ops_after={"Conv": 3, "Relu": 3}, layout=STRAIGHT),
    # ultralytics Conv 3→8 s2 (Conv+BN+SiLU), RepConv 8→8 with the identity BN, RepConv 8→16
    # s2 (no identity); SiLU exports as Mul(x, Sigmoid(x)). After: 3 Conv, Sigmoid 3, Mul 3.
    "yolo_repconv": dict(before={"Conv": 5, "BatchNormalization": 1, "Add": 3},
                         ops_after={"Conv": 3, "Sigmoid": 3, "Mul": 3}, layout=STRAIGHT),
    # Stem Conv(+BN folded) + Relu, ConvTranspose (groups 2, stride (2, 1)) → BN → Relu: the
    # exporter does not fold a BN into ConvTranspose; refold does. After: ConvTranspose 1, BN 0.
    "convtranspose_bn": dict(before={"Conv": 1, "ConvTranspose": 1, "BatchNormalization": 1,
                                     "Add": 0},
                             ops_after={"Conv": 1, "ConvTranspose": 1, "Relu": 2},
                             layout=STRAIGHT),
    # Stem Conv + Relu, ConvTranspose (groups 2, stride 2) → Mul(scale [1, 6, 1, 1]) →
    # Add(shift [1, 6, 1, 1]) → Relu: both fold into the ConvTranspose (its weight's output
    # channels scaled per group, its bias scaled and shifted). After: Mul 0, Add 0.
    "convtranspose_affine": dict(before={"Conv": 1, "ConvTranspose": 1, "BatchNormalization": 0,
                                         "Add": 1},
                                 ops_after={"Conv": 1, "ConvTranspose": 1, "Relu": 2},
                                 layout=STRAIGHT),
    # LeViT-style tokens [2, 5, 8]: Linear_BN 8→16, Hardswish, Linear_BN 16→8, mean over the
    # tokens, Linear 8→10 → BatchNorm1d (Hardswish exports as Mul(x, HardSigmoid(x))). Export: per Linear_BN MatMul → Flatten(axis 2) →
    # BatchNormalization → Reshape(Shape(MatMul)); the head Gemm → BatchNormalization. After:
    # each Linear_BN's BN is its MatMul's scaled weight and an Add of the shift (the deployed
    # Linear with bias: MatMul + Add); the head's BN is in the Gemm. BN 3 → 0, Add 0 → 2. (The
    # Shape of the deployed form is constant-folded by refold; only the counted ops are checked.)
    # Layout: no conv, nothing to permute.
    "linear_bn": dict(before={"Conv": 0, "BatchNormalization": 3, "Add": 0},
                      ops_after={"MatMul": 2, "Add": 2, "Flatten": 2, "Shape": 2, "Reshape": 2,
                                 "HardSigmoid": 1, "Mul": 1, "ReduceMean": 1, "Gemm": 1},
                      layout=dict(to_nhwc=0, to_nchw=0, nhwc_outputs=0)),
    # 5 Convs (stem, two branches, down, head; BNs folded by the exporter, branch_a has a bias),
    # so nothing to merge: Conv 5, BN 0, Add 0 before and after.
    # Layout: input → stem: to_nhwc 1. Concat(axis 1) and Softmax(axis 1) remapped to the
    # channel axis of NHWC, Transpose(0,1,3,2) composed with the layout: no permute. down runs
    # NHWC; the channel shuffle's Reshape (1,16,8,8) → (1,2,8,8,8) splits C, which is not
    # contiguous in NHWC: to_nchw 1 (fence). Reshape, 5-d Transpose, Reshape run NCHW; head:
    # to_nhwc 1. head's output goes to GlobalAveragePool (NHWC fine; 1×1 output, so Flatten and
    # Gemm need no permute) and to Flatten of a 16×8×8 map (order-dependent): to_nchw 1.
    # Total 4; both graph outputs are 2-d (nhwc_outputs 0).
    "nchw_ops": dict(before={"Conv": 5, "BatchNormalization": 0, "Add": 0},
                     ops_after={"Conv": 5, "Relu": 4, "Concat": 1, "Softmax": 1, "Transpose": 2,
                                "Reshape": 2, "GlobalAveragePool": 1, "Flatten": 2, "Gemm": 1},
                     layout=dict(to_nhwc=2, to_nchw=2, nhwc_outputs=0)),
}

# RepVGG-A0 (--large): 22 blocks; 44 Convs, 17 identity BNs, 39 Adds exported → 22 Convs;
# GlobalAveragePool → Reshape (x.view, 1×1 spatial: no permute) → Gemm.
EXPECTED_LARGE = dict(before={"Conv": 44, "BatchNormalization": 17, "Add": 39},
                      ops_after={"Conv": 22, "Relu": 22, "GlobalAveragePool": 1, "Reshape": 1,
                                 "Gemm": 1},
                      layout=dict(to_nhwc=1, to_nchw=0, nhwc_outputs=0))


# ----------------------------------------------------------------------------------------------

def seeded(name):
    seed = zlib.crc32(name.encode("utf-8"))
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


def build(name, make):
    gen = seeded(name)
    model = make().eval()
    with torch.no_grad():
        randomize(model, gen)
        for m in model.modules():  # BatchNorm1d as randomize does BatchNorm2d (none elsewhere)
            if isinstance(m, nn.BatchNorm1d):
                for t, lo, hi in ((m.running_mean, -1, 1), (m.running_var, 0.5, 2),
                                  (m.weight, 0.5, 1.5), (m.bias, -1, 1)):
                    t.copy_(lo + (hi - lo) * torch.rand(t.shape, generator=gen))
    return model, gen


def export(model, x, opset, training, output_names):
    buffer = io.BytesIO()
    kwargs = dict(opset_version=opset, input_names=["input"], output_names=output_names)
    if training is not None:
        kwargs["training"] = training
    torch.onnx.export(model, x, buffer, **kwargs)
    return onnx.load_from_string(buffer.getvalue())


def op_counts(proto):
    return dict(sorted(collections.Counter(n.op_type for n in proto.graph.node).items()))


def within(actual, expected):
    scale = max(1.0, float(expected.double().abs().max()))
    return float((actual.double() - expected.double()).abs().max()) <= REPARAM_TOL * scale


def run(model, x):
    out = model(x)
    return out if isinstance(out, tuple) else (out,)


def conv_transpose_scaled(up, scale):
    """The ConvTranspose2d's weight with output channel c scaled by scale[c]: the weight is
    [in, out/groups, kh, kw] and output channel g·(out/groups) + j is column j of group g's
    rows."""
    groups, in_c, per_group = up.groups, up.in_channels, up.out_channels // up.groups
    weight = up.weight.detach().clone()
    for i in range(in_c):
        g = i // (in_c // groups)
        weight[i] *= scale[g * per_group:(g + 1) * per_group].reshape(-1, 1, 1)
    return weight


def fold_conv_transpose_bn(module):
    """ConvTransposeBN's BN folded into its ConvTranspose2d (what refold's pass does): each
    output channel scaled by its γ/σ; bias = β − μ·γ/σ."""
    up, bn = module.up, module.bn
    scale = bn.weight / (bn.running_var + bn.eps).sqrt()
    fused = nn.ConvTranspose2d(up.in_channels, up.out_channels, up.kernel_size, up.stride,
                               up.padding, up.output_padding, up.groups, bias=True)
    fused.weight.data = conv_transpose_scaled(up, scale)
    fused.bias.data = bn.bias - bn.running_mean * scale
    module.up, module.bn = fused, nn.Identity()


def deployed_op_counts(name, model, x, outputs, opset):
    """The model in its deployed form (the references' own switch_to_deploy), checked against
    the training form, exported, and its op counts (Constant not counted)."""
    for m in list(model.modules()):
        if hasattr(m, "switch_to_deploy"):
            m.switch_to_deploy()
        if isinstance(m, ConvTransposeBN):
            fold_conv_transpose_bn(m)
    with torch.no_grad():
        deployed = run(model, x)
    for i, (d, o) in enumerate(zip(deployed, outputs)):
        assert within(d, o), f"{name}: deployed output {i} differs from the training output"
    proto = export(model, x, opset, None, [f"d{i}" for i in range(len(outputs))])
    return {op: n for op, n in op_counts(proto).items() if op != "Constant"}


def make_model(name, make, shape, opset, training):
    model, gen = build(name, make)
    x = torch.randn(shape, generator=gen)
    with torch.no_grad():
        outputs = run(model, x)
        exact = run(copy.deepcopy(model).double(), x.double())  # float64, the same weights
    for i, (o, e) in enumerate(zip(outputs, exact)):
        assert within(o, e), f"{name}: float32 output {i} off the float64 run"
    output_names = ["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]
    proto = export(model, x, opset, training, output_names)
    onnx.checker.check_model(proto)  # our own export, not untrusted input
    assert proto.opset_import[0].version == opset, f"{name}: exported opset differs"
    files = {"model.onnx": proto.SerializeToString(),
             "test_data_set_0/input_0.pb": onnx.numpy_helper.from_array(
                 x.numpy(), "input").SerializeToString()}
    for i, (o, out_name) in enumerate(zip(outputs, output_names)):
        files[f"test_data_set_0/output_{i}.pb"] = onnx.numpy_helper.from_array(
            o.detach().numpy(), out_name).SerializeToString()
    after = deployed_op_counts(name, model, x, outputs, opset)
    return proto, files, x.numpy(), [o.detach().numpy() for o in outputs], after


def expectation(name, rule, proto, after, extra):
    """One EXPECTED.json entry; fails when the export or the deployed form disagrees with the
    hand-derived numbers in EXPECTED."""
    counts = op_counts(proto)
    before = {op: counts.get(op, 0) for op in COUNTED}
    for op, n in rule["before"].items():
        assert before[op] == n, f"{name}: exported {op} count {before[op]}, expected {n}"
    assert after == rule["ops_after"], \
        f"{name}: deployed form exports {after}, expected {rule['ops_after']}"
    ops = (set(counts) | set(after) | set(COUNTED)) - {"Constant"}
    layout = dict(rule["layout"])
    layout["permutes"] = layout["to_nhwc"] + layout["to_nchw"]
    return dict(extra, stretch=rule.get("stretch", False), before=before, before_all_ops=counts,
                after={op: after.get(op, 0) for op in sorted(ops)}, layout=layout)


def verify_with_ort(name, proto, x, outputs):
    import onnxruntime as ort  # only with --verify-ort: never a test dependency
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(proto.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    got = session.run(None, {"input": x})
    for i, (g, o) in enumerate(zip(got, outputs)):
        err = float(np.abs(g.astype(np.float64) - o).max())
        scale = max(1.0, float(np.abs(o).max()))
        assert err <= REPARAM_TOL * scale, f"{name}: ONNX Runtime output {i} off by {err}"
        print(f"  onnxruntime {name} output {i}: max |ort - torch| = {err:.3g}")


def write_large(path):
    model, gen = build("repvgg_a0_train", RepVGGA0)
    x = torch.randn((1, 3, 224, 224), generator=gen)
    with torch.no_grad():
        outputs = run(model, x)
    proto = export(model, x, 13, None, ["output"])
    after = deployed_op_counts("repvgg_a0_train", model, x, outputs, 13)
    entry = expectation("repvgg_a0_train", EXPECTED_LARGE, proto, after,
                        dict(opset=13, bn_folded_by_exporter=True, input_shape=[1, 3, 224, 224],
                             output_shapes=[[1, 1000]]))
    data = proto.SerializeToString()
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    path.with_suffix(".expected.json").write_text(json.dumps(entry, indent=2) + "\n")
    print(f"wrote {path} ({len(data)} bytes): "
          + ", ".join(f"{op} {entry['before'][op]} -> {entry['after'][op]}" for op in COUNTED))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--large", metavar="OUT.onnx",
                        help="write RepVGG-A0 (training form, 224², batch 1) there and stop")
    parser.add_argument("--verify-ort", action="store_true",
                        help="also run each model with onnxruntime (benchmark venv)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # deterministic reductions
    if args.large:
        write_large(args.large)
        return
    folders, expected = {}, {}
    for name, (make, shape, opset, training) in MODELS.items():
        proto, files, x, outputs, after = make_model(name, make, shape, opset, training)
        if args.verify_ort:
            verify_with_ort(name, proto, x, outputs)
        expected[name] = expectation(
            name, EXPECTED[name], proto, after,
            dict(opset=opset, bn_folded_by_exporter=training is None, input_shape=list(shape),
                 output_shapes=[list(o.shape) for o in outputs]))
        folders[name] = files
        ops = [n.op_type for n in proto.graph.node]
        print(f"{name}: opset {opset}, {sum(len(d) for d in files.values())} bytes, "
              f"{len(ops)} nodes: {ops if len(ops) <= 60 else op_counts(proto)}")
    total = sum(len(d) for f in folders.values() for d in f.values())
    assert total < SIZE_LIMIT, f"models total {total} bytes, over the {SIZE_LIMIT} limit"
    for old in OUT_DIR.glob("*/"):
        if (old / "model.onnx").exists():
            shutil.rmtree(old)
    for name, files in folders.items():
        for rel, data in files.items():
            path = OUT_DIR / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    (OUT_DIR / "EXPECTED.json").write_text(json.dumps(expected, indent=2) + "\n")
    print(f"wrote {len(folders)} models, {total} bytes, to {OUT_DIR}")


if __name__ == "__main__":
    main()
