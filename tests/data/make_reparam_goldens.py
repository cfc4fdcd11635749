#!/usr/bin/python3
"""Writes the re-parameterization goldens under tests/data/reparam_goldens/ (issue 4).

Run with Debian's interpreter and python3-torch (PyTorch 1.13, CPU):

    /usr/bin/python3 tests/data/make_reparam_goldens.py

Not run by CI: the goldens are committed and read by tests/reparam/reparam_golden_test.cpp.

Each block is defined below as its public reference implementation defines it, restated
minimally (training form, get_equivalent_kernel_bias, the switch to the deployed form):
  RepVGGBlock         DingXiaoH/RepVGG, repvgg.py (no SE)
  QARepVGGBlock       meituan/YOLOv6, yolov6/layers/common.py
  ACBlock             DingXiaoH/ACNet, acnet/acb.py
  DiverseBranchBlock  DingXiaoH/DiverseBranchBlock, diversebranchblock.py + dbb_transforms.py
  MobileOneBlock      apple/ml-mobileone, mobileone.py (no SE)
  RepConv             ultralytics, nn/modules/conv.py (with its Conv)
The child and parameter names are the references' own: the C++ test loads these state_dicts by
name into refold's blocks.

One safetensors file per case, `<case>.safetensors`, holding
  state.<key>     the training-form state_dict, in the module's own order (BatchNorm statistics
                  randomized as RepVGG's own check does; DBB's zero-initialized
                  IdentityBasedConv1x1 weights made non-zero)
  input           a random input
  output          the training-form output (eval mode)
  fused_weight    the reference's get_equivalent_kernel_bias() (QARepVGG: with the BN after the
  fused_bias      sum folded in by the reference's own _fuse_extra_bn_tensor, as refold does)
  deploy.<key>    the deployed form's state_dict (refold's names; QARepVGG: rbr_reparam only)
  deploy_output   the output after the reference's switch to the deployed form
and a __metadata__ map: case, block (the class name) and config (JSON: the constructor's
arguments under refold's option names).

Self-checks before anything is written: the writer round-trips (make_goldens.decode_safetensors),
the deployed output equals the training output, and both float32 outputs are within the
re-parameterization tolerance (docs/testing.md) of a float64 run of the same block (so a golden
never demands more than refold promises). Deterministic: a fixed seed per case, one thread. Total size < 1 MB.
"""

import json
import pathlib
import sys
import zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from make_goldens import decode_safetensors, encode_safetensors  # noqa: E402  the shared writer

OUT_DIR = HERE / "reparam_goldens"
SIZE_LIMIT = 1024 * 1024  # issue 4: re-parameterization goldens stay under 1 MB
REPARAM_TOL = 1e-4  # docs/testing.md: max|a - b| <= 1e-4 * max(1, max|ref|)


# ----------------------------------------------------------------------------------------------
# Shared pieces of the references

def conv_bn(in_c, out_c, k, stride=1, padding=0, groups=1, dilation=1):
    """RepVGG / DBB / MobileOne's conv_bn: Sequential(conv without bias, bn)."""
    seq = nn.Sequential()
    seq.add_module("conv", nn.Conv2d(in_c, out_c, k, stride, padding, dilation, groups, bias=False))
    seq.add_module("bn", nn.BatchNorm2d(out_c))
    return seq


def fuse_bn(kernel, bn):
    """conv -> BN as (kernel * gamma / std, beta - mean * gamma / std)."""
    std = (bn.running_var + bn.eps).sqrt()
    return kernel * (bn.weight / std).reshape(-1, 1, 1, 1), bn.bias - bn.running_mean * bn.weight / std


def identity_tensor(channels, groups, k, like):
    """The identity as a k x k kernel per group: [i, i % (C/g), k//2, k//2] = 1."""
    input_dim = channels // groups
    value = np.zeros((channels, input_dim, k, k), dtype=np.float32)
    for i in range(channels):
        value[i, i % input_dim, k // 2, k // 2] = 1
    return torch.from_numpy(value).to(like.dtype)


def pad_to(kernel, k):
    p_h, p_w = (k - kernel.size(2)) // 2, (k - kernel.size(3)) // 2
    return F.pad(kernel, [p_w, p_w, p_h, p_h])


# ----------------------------------------------------------------------------------------------
# RepVGG (repvgg.py)

class RepVGGBlock(nn.Module):
    def __init__(self, in_c, out_c, kernel_size=3, stride=1, padding=1, groups=1):
        super().__init__()
        assert kernel_size == 3 and padding == 1
        self.in_channels, self.groups = in_c, groups
        self.nonlinearity = nn.ReLU()
        self.se = nn.Identity()
        self.rbr_identity = nn.BatchNorm2d(in_c) if out_c == in_c and stride == 1 else None
        self.rbr_dense = conv_bn(in_c, out_c, kernel_size, stride, padding, groups)
        self.rbr_1x1 = conv_bn(in_c, out_c, 1, stride, padding - kernel_size // 2, groups)

    def forward(self, x):
        if hasattr(self, "rbr_reparam"):
            return self.nonlinearity(self.se(self.rbr_reparam(x)))
        id_out = 0 if self.rbr_identity is None else self.rbr_identity(x)
        return self.nonlinearity(self.se(self.rbr_dense(x) + self.rbr_1x1(x) + id_out))

    def _fuse_bn_tensor(self, branch):
        if branch is None:
            return 0, 0
        if isinstance(branch, nn.Sequential):
            return fuse_bn(branch.conv.weight, branch.bn)
        return fuse_bn(identity_tensor(self.in_channels, self.groups, 3, branch.weight), branch)

    def get_equivalent_kernel_bias(self):
        k3, b3 = self._fuse_bn_tensor(self.rbr_dense)
        k1, b1 = self._fuse_bn_tensor(self.rbr_1x1)
        kid, bid = self._fuse_bn_tensor(self.rbr_identity)
        return k3 + F.pad(k1, [1, 1, 1, 1]) + kid, b3 + b1 + bid

    def fused_kernel_bias(self):
        return self.get_equivalent_kernel_bias()

    def switch_to_deploy(self):
        kernel, bias = self.fused_kernel_bias()
        c = self.rbr_dense.conv
        self.rbr_reparam = nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride,
                                     c.padding, c.dilation, c.groups, bias=True)
        self.rbr_reparam.weight.data, self.rbr_reparam.bias.data = kernel, bias
        for name in ("rbr_dense", "rbr_1x1", "rbr_identity"):
            if hasattr(self, name):
                delattr(self, name)


# QARepVGG (YOLOv6 common.py): no BN on the 1x1 and the identity, one BN after the sum.
class QARepVGGBlock(RepVGGBlock):
    def __init__(self, in_c, out_c, kernel_size=3, stride=1, padding=1, groups=1):
        super().__init__(in_c, out_c, kernel_size, stride, padding, groups)
        self.bn = nn.BatchNorm2d(out_c)
        self.rbr_1x1 = nn.Conv2d(in_c, out_c, kernel_size=1, stride=stride, groups=groups, bias=False)
        self.rbr_identity = nn.Identity() if out_c == in_c and stride == 1 else None

    def forward(self, x):
        if hasattr(self, "rbr_reparam"):
            return self.nonlinearity(self.bn(self.se(self.rbr_reparam(x))))
        id_out = 0 if self.rbr_identity is None else self.rbr_identity(x)
        return self.nonlinearity(self.bn(self.se(self.rbr_dense(x) + self.rbr_1x1(x) + id_out)))

    def get_equivalent_kernel_bias(self):
        k3, b3 = self._fuse_bn_tensor(self.rbr_dense)
        kernel = k3 + F.pad(self.rbr_1x1.weight, [1, 1, 1, 1])
        if self.rbr_identity is not None:
            kernel = kernel + identity_tensor(self.in_channels, self.groups, 3, kernel)
        return kernel, b3

    def _fuse_extra_bn_tensor(self, kernel, bias, bn):
        mean = bn.running_mean - bias
        std = (bn.running_var + bn.eps).sqrt()
        return kernel * (bn.weight / std).reshape(-1, 1, 1, 1), bn.bias - mean * bn.weight / std

    def fused_kernel_bias(self):
        return self._fuse_extra_bn_tensor(*self.get_equivalent_kernel_bias(), self.bn)

    def switch_to_deploy(self):
        # YOLOv6 keeps `bn` after rbr_reparam (for quantization-aware training).
        kernel, bias = self.get_equivalent_kernel_bias()
        c = self.rbr_dense.conv
        self.rbr_reparam = nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride,
                                     c.padding, c.dilation, c.groups, bias=True)
        self.rbr_reparam.weight.data, self.rbr_reparam.bias.data = kernel, bias
        for name in ("rbr_dense", "rbr_1x1", "rbr_identity"):
            if hasattr(self, name):
                delattr(self, name)


# ----------------------------------------------------------------------------------------------
# ACNet (acb.py)

class ACBlock(nn.Module):
    def __init__(self, in_c, out_c, kernel_size, stride=1, padding=0, groups=1, use_affine=True):
        super().__init__()
        k, p = kernel_size, padding
        self.square_conv = nn.Conv2d(in_c, out_c, (k, k), stride, p, groups=groups, bias=False)
        self.square_bn = nn.BatchNorm2d(out_c, affine=use_affine)
        if p - k // 2 >= 0:
            self.crop = 0
            hor_padding, ver_padding = [p - k // 2, p], [p, p - k // 2]
        else:
            self.crop = k // 2 - p
            hor_padding, ver_padding = [0, p], [p, 0]
        self.ver_conv = nn.Conv2d(in_c, out_c, (k, 1), stride, ver_padding, groups=groups, bias=False)
        self.hor_conv = nn.Conv2d(in_c, out_c, (1, k), stride, hor_padding, groups=groups, bias=False)
        self.ver_bn = nn.BatchNorm2d(out_c, affine=use_affine)
        self.hor_bn = nn.BatchNorm2d(out_c, affine=use_affine)

    @staticmethod
    def _fuse(conv, bn):
        std = (bn.running_var + bn.eps).sqrt()
        gamma = bn.weight if bn.affine else torch.ones_like(std)
        beta = bn.bias if bn.affine else torch.zeros_like(std)
        return conv.weight * (gamma / std).reshape(-1, 1, 1, 1), beta - bn.running_mean * gamma / std

    def fused_kernel_bias(self):
        hor_k, hor_b = self._fuse(self.hor_conv, self.hor_bn)
        ver_k, ver_b = self._fuse(self.ver_conv, self.ver_bn)
        square_k, square_b = self._fuse(self.square_conv, self.square_bn)
        square_k = square_k.clone()
        for asym in (hor_k, ver_k):  # _add_to_square_kernel
            ah, aw, sh, sw = asym.size(2), asym.size(3), square_k.size(2), square_k.size(3)
            square_k[:, :, sh // 2 - ah // 2: sh // 2 - ah // 2 + ah,
                     sw // 2 - aw // 2: sw // 2 - aw // 2 + aw] += asym
        return square_k, hor_b + ver_b + square_b

    def forward(self, x):
        if hasattr(self, "fused_conv"):
            return self.fused_conv(x)
        square = self.square_bn(self.square_conv(x))
        c = self.crop
        ver_input = x[:, :, :, c:-c] if c > 0 else x
        hor_input = x[:, :, c:-c, :] if c > 0 else x
        return square + self.ver_bn(self.ver_conv(ver_input)) + self.hor_bn(self.hor_conv(hor_input))

    def switch_to_deploy(self):
        kernel, bias = self.fused_kernel_bias()
        s = self.square_conv
        self.fused_conv = nn.Conv2d(s.in_channels, s.out_channels, s.kernel_size, s.stride,
                                    s.padding, s.dilation, s.groups, bias=True)
        self.fused_conv.weight.data, self.fused_conv.bias.data = kernel, bias
        for name in ("square_conv", "square_bn", "hor_conv", "hor_bn", "ver_conv", "ver_bn"):
            delattr(self, name)


# ----------------------------------------------------------------------------------------------
# DBB (diversebranchblock.py, dbb_transforms.py)

class IdentityBasedConv1x1(nn.Conv2d):
    def __init__(self, channels, groups=1):
        super().__init__(channels, channels, 1, 1, 0, groups=groups, bias=False)
        self.id_tensor = identity_tensor(channels, groups, 1, self.weight)
        nn.init.zeros_(self.weight)

    def get_actual_kernel(self):
        return self.weight + self.id_tensor.to(self.weight.dtype)

    def forward(self, x):
        return F.conv2d(x, self.get_actual_kernel(), None, 1, 0, self.dilation, self.groups)


class BNAndPadLayer(nn.Module):
    def __init__(self, pad_pixels, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features)
        self.pad_pixels = pad_pixels

    def forward(self, x):
        out = self.bn(x)
        p = self.pad_pixels
        if p > 0:
            bn = self.bn
            pad_values = bn.bias - bn.running_mean * bn.weight / torch.sqrt(bn.running_var + bn.eps)
            out = F.pad(out, [p] * 4)
            v = pad_values.view(1, -1, 1, 1)
            out[:, :, 0:p, :] = v
            out[:, :, -p:, :] = v
            out[:, :, :, 0:p] = v
            out[:, :, :, -p:] = v
        return out


def trans_1x1_kxk(k1, b1, k2, b2, groups):
    """transIII_1x1_kxk: per group, k = conv(k2, k1^T), b = sum(k2 * b1) + b2."""
    k_slices, b_slices = [], []
    k1_t = k1.permute(1, 0, 2, 3)
    w1, w2 = k1.size(0) // groups, k2.size(0) // groups
    for g in range(groups):
        k1_slice = k1_t[:, g * w1:(g + 1) * w1, :, :]
        k2_slice = k2[g * w2:(g + 1) * w2, :, :, :]
        k_slices.append(F.conv2d(k2_slice, k1_slice))
        b_slices.append((k2_slice * b1[g * w1:(g + 1) * w1].reshape(1, -1, 1, 1)).sum((1, 2, 3)))
    return torch.cat(k_slices, dim=0), torch.cat(b_slices) + b2


def trans_avg(channels, k, groups):
    input_dim = channels // groups
    kernel = torch.zeros((channels, input_dim, k, k))
    kernel[np.arange(channels), np.tile(np.arange(input_dim), groups), :, :] = 1.0 / k ** 2
    return kernel


class DiverseBranchBlock(nn.Module):
    def __init__(self, in_c, out_c, kernel_size, stride=1, padding=0, groups=1,
                 internal_channels_1x1_3x3=None, nonlinear=None):
        super().__init__()
        assert padding == kernel_size // 2
        self.nonlinear = nn.Identity() if nonlinear is None else nonlinear
        self.kernel_size, self.out_channels, self.groups = kernel_size, out_c, groups
        self.dbb_origin = conv_bn(in_c, out_c, kernel_size, stride, padding, groups)
        self.dbb_avg = nn.Sequential()
        if groups < out_c:
            self.dbb_avg.add_module("conv", nn.Conv2d(in_c, out_c, 1, 1, 0, groups=groups, bias=False))
            self.dbb_avg.add_module("bn", BNAndPadLayer(padding, out_c))
            self.dbb_avg.add_module("avg", nn.AvgPool2d(kernel_size, stride, 0))
            self.dbb_1x1 = conv_bn(in_c, out_c, 1, stride, 0, groups)
        else:
            self.dbb_avg.add_module("avg", nn.AvgPool2d(kernel_size, stride, padding))
        self.dbb_avg.add_module("avgbn", nn.BatchNorm2d(out_c))
        internal = internal_channels_1x1_3x3
        if internal is None:
            internal = in_c if groups < out_c else 2 * in_c
        self.dbb_1x1_kxk = nn.Sequential()
        if internal == in_c:
            self.dbb_1x1_kxk.add_module("idconv1", IdentityBasedConv1x1(in_c, groups))
        else:
            self.dbb_1x1_kxk.add_module("conv1", nn.Conv2d(in_c, internal, 1, 1, 0, groups=groups,
                                                           bias=False))
        self.dbb_1x1_kxk.add_module("bn1", BNAndPadLayer(padding, internal))
        self.dbb_1x1_kxk.add_module("conv2", nn.Conv2d(internal, out_c, kernel_size, stride, 0,
                                                       groups=groups, bias=False))
        self.dbb_1x1_kxk.add_module("bn2", nn.BatchNorm2d(out_c))

    def fused_kernel_bias(self):
        k_origin, b_origin = fuse_bn(self.dbb_origin.conv.weight, self.dbb_origin.bn)
        if hasattr(self, "dbb_1x1"):
            k_1x1, b_1x1 = fuse_bn(self.dbb_1x1.conv.weight, self.dbb_1x1.bn)
            k_1x1 = pad_to(k_1x1, self.kernel_size)
        else:
            k_1x1, b_1x1 = 0, 0
        seq = self.dbb_1x1_kxk
        first = seq.idconv1.get_actual_kernel() if hasattr(seq, "idconv1") else seq.conv1.weight
        k_first, b_first = fuse_bn(first, seq.bn1.bn)
        k_second, b_second = fuse_bn(seq.conv2.weight, seq.bn2)
        k_kxk, b_kxk = trans_1x1_kxk(k_first, b_first, k_second, b_second, self.groups)
        k_avg, b_avg = fuse_bn(trans_avg(self.out_channels, self.kernel_size, self.groups),
                               self.dbb_avg.avgbn)
        if hasattr(self.dbb_avg, "conv"):
            k_avg_first, b_avg_first = fuse_bn(self.dbb_avg.conv.weight, self.dbb_avg.bn.bn)
            k_avg, b_avg = trans_1x1_kxk(k_avg_first, b_avg_first, k_avg, b_avg, self.groups)
        return k_origin + k_1x1 + k_kxk + k_avg, b_origin + b_1x1 + b_kxk + b_avg

    def forward(self, x):
        if hasattr(self, "dbb_reparam"):
            return self.nonlinear(self.dbb_reparam(x))
        out = self.dbb_origin(x)
        if hasattr(self, "dbb_1x1"):
            out = out + self.dbb_1x1(x)
        out = out + self.dbb_avg(x)
        out = out + self.dbb_1x1_kxk(x)
        return self.nonlinear(out)

    def switch_to_deploy(self):
        kernel, bias = self.fused_kernel_bias()
        c = self.dbb_origin.conv
        self.dbb_reparam = nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride,
                                     c.padding, c.dilation, c.groups, bias=True)
        self.dbb_reparam.weight.data, self.dbb_reparam.bias.data = kernel, bias
        for name in ("dbb_origin", "dbb_avg", "dbb_1x1", "dbb_1x1_kxk"):
            if hasattr(self, name):
                delattr(self, name)


# ----------------------------------------------------------------------------------------------
# MobileOne (mobileone.py)

class MobileOneBlock(nn.Module):
    def __init__(self, in_c, out_c, kernel_size, stride=1, padding=0, groups=1, num_conv_branches=1):
        super().__init__()
        self.in_channels, self.groups, self.kernel_size = in_c, groups, kernel_size
        self.se = nn.Identity()
        self.activation = nn.ReLU()
        self.rbr_skip = nn.BatchNorm2d(in_c) if out_c == in_c and stride == 1 else None
        self.rbr_conv = nn.ModuleList([conv_bn(in_c, out_c, kernel_size, stride, padding, groups)
                                       for _ in range(num_conv_branches)])
        self.rbr_scale = conv_bn(in_c, out_c, 1, stride, 0, groups) if kernel_size > 1 else None

    def forward(self, x):
        if hasattr(self, "reparam_conv"):
            return self.activation(self.se(self.reparam_conv(x)))
        out = (0 if self.rbr_scale is None else self.rbr_scale(x)) + \
              (0 if self.rbr_skip is None else self.rbr_skip(x))
        for branch in self.rbr_conv:
            out = out + branch(x)
        return self.activation(self.se(out))

    def fused_kernel_bias(self):
        kernel, bias = 0, 0
        if self.rbr_scale is not None:
            k, b = fuse_bn(self.rbr_scale.conv.weight, self.rbr_scale.bn)
            pad = self.kernel_size // 2
            kernel, bias = F.pad(k, [pad, pad, pad, pad]), b
        if self.rbr_skip is not None:
            k, b = fuse_bn(identity_tensor(self.in_channels, self.groups, self.kernel_size,
                                           self.rbr_skip.weight), self.rbr_skip)
            kernel, bias = kernel + k, bias + b
        for branch in self.rbr_conv:
            k, b = fuse_bn(branch.conv.weight, branch.bn)
            kernel, bias = kernel + k, bias + b
        return kernel, bias

    def switch_to_deploy(self):
        kernel, bias = self.fused_kernel_bias()
        c = self.rbr_conv[0].conv
        self.reparam_conv = nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride,
                                      c.padding, c.dilation, c.groups, bias=True)
        self.reparam_conv.weight.data, self.reparam_conv.bias.data = kernel, bias
        for name in ("rbr_conv", "rbr_scale", "rbr_skip"):
            if hasattr(self, name):
                delattr(self, name)


# ----------------------------------------------------------------------------------------------
# ultralytics Conv + RepConv (nn/modules/conv.py)

class Conv(nn.Module):
    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2 if p is None else p, groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = nn.SiLU() if act is True else act if isinstance(act, nn.Module) else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class RepConv(nn.Module):
    def __init__(self, c1, c2, k=3, s=1, p=1, g=1, act=True, bn=False):
        super().__init__()
        assert k == 3 and p == 1
        self.g, self.c1 = g, c1
        self.act = nn.SiLU() if act is True else act if isinstance(act, nn.Module) else nn.Identity()
        self.bn = nn.BatchNorm2d(c1) if bn and c2 == c1 and s == 1 else None
        self.conv1 = Conv(c1, c2, k, s, p=p, g=g, act=False)
        self.conv2 = Conv(c1, c2, 1, s, p=(p - k // 2), g=g, act=False)

    def forward(self, x):
        if hasattr(self, "conv"):
            return self.act(self.conv(x))
        id_out = 0 if self.bn is None else self.bn(x)
        return self.act(self.conv1(x) + self.conv2(x) + id_out)

    def _fuse_bn_tensor(self, branch):
        if branch is None:
            return 0, 0
        if isinstance(branch, Conv):
            return fuse_bn(branch.conv.weight, branch.bn)
        return fuse_bn(identity_tensor(self.c1, self.g, 3, branch.weight), branch)

    def fused_kernel_bias(self):
        k3, b3 = self._fuse_bn_tensor(self.conv1)
        k1, b1 = self._fuse_bn_tensor(self.conv2)
        kid, bid = self._fuse_bn_tensor(self.bn)
        return k3 + F.pad(k1, [1, 1, 1, 1]) + kid, b3 + b1 + bid

    def switch_to_deploy(self):  # ultralytics' fuse_convs
        kernel, bias = self.fused_kernel_bias()
        c = self.conv1.conv
        self.conv = nn.Conv2d(c.in_channels, c.out_channels, c.kernel_size, c.stride, c.padding,
                              c.dilation, c.groups, bias=True)
        self.conv.weight.data, self.conv.bias.data = kernel, bias
        for name in ("conv1", "conv2", "bn"):
            if hasattr(self, name):
                delattr(self, name)


# ----------------------------------------------------------------------------------------------
# The cases: (class, constructor kwargs, refold config, input shape)

def repvgg(in_c, out_c, stride=1, groups=1, cls=RepVGGBlock):
    cfg = {"in": in_c, "out": out_c, "kernel_size": 3, "stride": stride, "padding": 1,
           "groups": groups}
    return cls, dict(in_c=in_c, out_c=out_c, stride=stride, groups=groups), cfg


def acb(in_c, out_c, k, stride=1, padding=1, groups=1, use_affine=True):
    cfg = {"in": in_c, "out": out_c, "kernel_size": k, "stride": stride, "padding": padding,
           "groups": groups, "use_affine": use_affine}
    return ACBlock, dict(in_c=in_c, out_c=out_c, kernel_size=k, stride=stride, padding=padding,
                         groups=groups, use_affine=use_affine), cfg


def dbb(in_c, out_c, k, stride=1, groups=1, internal=None, relu=False):
    cfg = {"in": in_c, "out": out_c, "kernel_size": k, "stride": stride, "padding": k // 2,
           "groups": groups, "internal_channels_1x1_3x3": internal,
           "nonlinear": "relu" if relu else "identity"}
    return DiverseBranchBlock, dict(in_c=in_c, out_c=out_c, kernel_size=k, stride=stride,
                                    padding=k // 2, groups=groups,
                                    internal_channels_1x1_3x3=internal,
                                    nonlinear=nn.ReLU() if relu else None), cfg


def mobileone(in_c, out_c, k, stride=1, groups=1, branches=1):
    cfg = {"in": in_c, "out": out_c, "kernel_size": k, "stride": stride, "padding": k // 2,
           "groups": groups, "num_conv_branches": branches}
    return MobileOneBlock, dict(in_c=in_c, out_c=out_c, kernel_size=k, stride=stride,
                                padding=k // 2, groups=groups, num_conv_branches=branches), cfg


def repconv(c1, c2, s=1, g=1, bn=False):
    cfg = {"in": c1, "out": c2, "kernel_size": 3, "stride": s, "padding": 1, "groups": g, "bn": bn}
    return RepConv, dict(c1=c1, c2=c2, s=s, g=g, bn=bn), cfg


X = [2, 4, 7, 6]
CASES = {
    "repvgg_identity": (*repvgg(4, 4), X),
    "repvgg_groups2_stride2": (*repvgg(4, 8, stride=2, groups=2), X),
    "qarepvgg_identity": (*repvgg(4, 4, cls=QARepVGGBlock), X),
    "qarepvgg_groups2_stride2": (*repvgg(4, 6, stride=2, groups=2, cls=QARepVGGBlock), X),
    "acb": (*acb(4, 6, 3), X),
    "acb_crop": (*acb(4, 4, 3, padding=0), X),
    "acb_k5_groups2_stride2": (*acb(4, 4, 5, stride=2, padding=2, groups=2, use_affine=False), X),
    "dbb_idconv": (*dbb(4, 6, 3), X),
    "dbb_depthwise": (*dbb(4, 4, 3, groups=4), X),
    "dbb_conv1_groups2_stride2_relu": (*dbb(4, 8, 3, stride=2, groups=2, internal=8, relu=True), X),
    "mobileone_depthwise": (*mobileone(4, 4, 3, groups=4, branches=3), X),
    "mobileone_depthwise_stride2": (*mobileone(4, 4, 3, stride=2, groups=4, branches=2), X),
    "mobileone_pointwise_skip": (*mobileone(4, 4, 1, branches=2), X),
    "mobileone_pointwise_widen": (*mobileone(4, 8, 1, branches=2), X),
    "repconv_bn": (*repconv(4, 4, bn=True), X),
    "repconv_stride2": (*repconv(4, 8, s=2), X),
}


# ----------------------------------------------------------------------------------------------

def randomize(model, gen):
    """BN statistics far from the identity (RepVGG's check does the same); DBB's identity-based
    1x1 weights made non-zero."""
    def uniform(t, lo, hi):
        t.copy_(lo + (hi - lo) * torch.rand(t.shape, generator=gen))
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            uniform(m.running_mean, -1, 1)
            uniform(m.running_var, 0.5, 2)
            if m.affine:
                uniform(m.weight, 0.5, 1.5)
                m.weight.mul_(torch.where(torch.rand(m.weight.shape, generator=gen) < 0.5, -1.0, 1.0))
                uniform(m.bias, -1, 1)
        if isinstance(m, IdentityBasedConv1x1):
            m.weight.copy_(0.3 * torch.randn(m.weight.shape, generator=gen))


def within(actual, expected):
    scale = max(1.0, float(expected.double().abs().max()))
    return float((actual.double() - expected.double()).abs().max()) <= REPARAM_TOL * scale


def make_case(name, cls, kwargs, config, shape):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode("utf-8")))
    torch.manual_seed(zlib.crc32(name.encode("utf-8")))
    model = cls(**kwargs).eval()
    randomize(model, gen)
    x = torch.randn(shape, generator=gen)
    state = {f"state.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    output = model(x)
    exact = cls(**kwargs).eval().double()  # float64 run of the same block
    exact.load_state_dict(model.state_dict())
    if isinstance(model, DiverseBranchBlock):  # id_tensor is not in the state_dict
        for m in exact.modules():
            if isinstance(m, IdentityBasedConv1x1):
                m.id_tensor = m.id_tensor.double()
    assert within(output, exact(x.double())), f"{name}: float32 training output off float64"
    weight, bias = (t.detach().clone() for t in model.fused_kernel_bias())
    model.switch_to_deploy()
    deploy_output = model(x)
    assert within(deploy_output, output), f"{name}: deployed output differs from training output"
    deploy_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if isinstance(model, QARepVGGBlock):
        # refold folds the BN after the sum into rbr_reparam; YOLOv6 keeps it beside.
        deploy_state = {"rbr_reparam.weight": weight, "rbr_reparam.bias": bias}
    tensors = dict(state)
    tensors.update({"input": x, "output": output.detach(), "fused_weight": weight,
                    "fused_bias": bias, "deploy_output": deploy_output.detach()})
    tensors.update({f"deploy.{k}": v for k, v in deploy_state.items()})
    metadata = {"case": name, "block": cls.__name__, "config": json.dumps(config)}
    data = encode_safetensors(tensors, metadata)
    decoded, decoded_metadata = decode_safetensors(data)
    assert decoded_metadata == metadata and list(decoded) == list(tensors)
    for k, v in tensors.items():
        assert torch.equal(decoded[k], v.contiguous()), f"{name}: {k} does not round-trip"
    return data


def main():
    torch.set_num_threads(1)  # deterministic reductions
    with torch.no_grad():
        files = {name: make_case(name, *case) for name, case in CASES.items()}
    total = sum(len(d) for d in files.values())
    assert total < SIZE_LIMIT, f"goldens total {total} bytes, over the {SIZE_LIMIT} limit"
    OUT_DIR.mkdir(exist_ok=True)
    for old in OUT_DIR.glob("*.safetensors"):
        old.unlink()
    for name, data in files.items():
        (OUT_DIR / f"{name}.safetensors").write_bytes(data)
    print(f"wrote {len(files)} goldens, {total} bytes, to {OUT_DIR}")


if __name__ == "__main__":
    main()
