#!/usr/bin/env python3
"""Exports refold's model zoo to ONNX, with an input and PyTorch's output for each model.

    python=$(bench/zoo/setup.sh)                     # once: the venv (torch, timm, ultralytics…)
    $python bench/zoo/export.py                      # the whole zoo → bench/zoo/models/
    $python bench/zoo/export.py --only resnet18,yolov8n --out /tmp/zoo
    $python bench/zoo/export.py --extra --out /tmp/extra   # 23 other families (EXTRA below)
    $python bench/zoo/export.py --third --out /tmp/third   # 15 more, held out (THIRD below)
    $python bench/zoo/export.py --fourth --out /tmp/fourth # 29 more, held out (FOURTH below)
    $python bench/zoo/export.py --fifth --out /tmp/fifth   # 30 more, held out (FIFTH below)
    $python bench/zoo/export.py --sixth --out /tmp/sixth   # 40 more, held out (SIXTH below)
    $python bench/zoo/export.py --seventh --out /tmp/seventh  # 41 more, held out (SEVENTH below)
    $python bench/zoo/export.py --eighth --out /tmp/eighth    # 44 more, held out (EIGHTH below)
    $python bench/zoo/run.py --models /tmp/extra --time     # run.py takes either folder
    $python bench/zoo/export.py --fourth --out /tmp/fourth --golden64-only  # add golden64 only

For every model (built without pretrained weights; none can be downloaded here):
  * eval mode, a fixed seed, and every BatchNorm's running mean/var, weight and bias randomized
    (around the statistics measured on the input, see randomize_batchnorms) so that BN folding
    really changes numbers;
  * <name>.input.npy    a random normal input (1x3x224x224; yolov8n 1x3x320x320)
  * <name>.golden.npy   PyTorch's output on it (torch.no_grad)
  * <name>.golden64.npy the same module run in float64 on the same input: the exact answer to
                        within float64's rounding, where the model runs in float64. Its distance
                        to the golden (manifest: float32_error) is PyTorch's own float32
                        rounding, which run.py uses to tell rounding from a wrong number
  * <name>.ts17.onnx    the TorchScript exporter, opset 17 (it folds BatchNorms into convs)
  * <name>.ts17bn.onnx  the same with TrainingMode.PRESERVE: BatchNormalization nodes kept
  * <name>.dynamo.onnx  the dynamo exporter (torch's default), one file (no external data)
  * <name>.deploy.onnx  the authors' deploy form, TorchScript exporter at opset 17: timm's
                        reparameterize_model (kept only when it changes the module structure)
                        or ultralytics' fuse(); its PyTorch output is checked against the golden
  * <name>.dynamic.onnx (DYNAMIC below): TorchScript exporter, input dims N, H, W dynamic
and manifest.json: per model its files, input shape, export errors (the full traceback of each
is in <name>.<form>.error.txt), the deploy check, and ONNX Runtime's output on each exported file
against the golden (a check of the export itself, independent of refold). With --only, the
other models' manifest entries are kept. bench/zoo/run.py runs refold on the result.
"""

import argparse
import copy
import json
import pathlib
import sys
import time
import traceback
import warnings

import numpy as np
import onnx
import torch
import torch.nn as nn

HERE = pathlib.Path(__file__).resolve().parent
SEED = 0
OPSET = 17
BATCH = 1

# name → (source, input side). Sources: timm, torchvision, torchvision_segmentation,
# ultralytics.
ZOO = {
    "resnet18": ("timm", 224),
    "resnet50": ("timm", 224),
    "mobilenetv3_small_100": ("timm", 224),
    "efficientnet_b0": ("timm", 224),
    "convnext_atto": ("timm", 224),
    "regnetx_002": ("timm", 224),
    "ghostnet_100": ("timm", 224),
    "densenet121": ("timm", 224),
    "mobilevitv2_050": ("timm", 224),
    "repvgg_a0": ("timm", 224),
    "mobileone_s0": ("timm", 224),
    "mobileone_s1": ("timm", 224),
    "fastvit_t8": ("timm", 224),
    "repghostnet_050": ("timm", 224),
    "mobilenet_v2": ("torchvision", 224),
    "shufflenet_v2_x0_5": ("torchvision", 224),
    "yolov8n": ("ultralytics", 320),
    "hgnetv2_b0": ("timm", 224),
    "deeplabv3_mobilenet_v3_large": ("torchvision_segmentation", 256),
}
DYNAMIC = {"resnet18", "mobilenet_v2", "repvgg_a0"}  # also exported with dynamic N, H, W

# A second set (--extra), of families refold was not tuned on, to check that its mechanisms are
# general: re-parameterized heads (RepViT), attention hybrids (EfficientFormerV2, EfficientViT,
# MobileViT, EdgeNeXt), GRN (ConvNeXtV2), mixed kernels (MixNet), NAS and mobile nets, Inception,
# SqueezeNet, DLA, VoVNet and two newer YOLOs. Session 34's numbers are in bench/RESULTS.md.
EXTRA = {
    "repvit_m0_9": ("timm", 224), "mobilenetv4_conv_small": ("timm", 224),
    "mixnet_s": ("timm", 224), "tf_efficientnet_lite0": ("timm", 224),
    "regnety_002": ("timm", 224), "lcnet_050": ("timm", 224), "rexnet_100": ("timm", 224),
    "ese_vovnet19b_dw": ("timm", 224), "efficientvit_b0": ("timm", 224),
    "ghostnetv2_100": ("timm", 224), "convnextv2_atto": ("timm", 224),
    "edgenext_xx_small": ("timm", 224), "mobilevit_xxs": ("timm", 256),
    "resnet34d": ("timm", 224), "dla34": ("timm", 224), "efficientformerv2_s0": ("timm", 224),
    "tinynet_e": ("timm", 106), "squeezenet1_1": ("torchvision", 224),
    "googlenet": ("torchvision", 224), "mnasnet0_5": ("torchvision", 224),
    "regnet_y_400mf": ("torchvision", 224), "yolo11n": ("ultralytics", 320),
    "yolov10n": ("ultralytics", 320),
}

# A third set (--third), held out while the first two were tuned: vision transformers (DeiT,
# LeViT, TinyViT, PVT-v2, XCiT, GCViT), MetaFormer (PoolFormerV2), HRNet's parallel branches,
# SelecSLS, ResNeXt, NAS nets (FBNetV3, EfficientNet-B1), MobileNetV3, ShuffleNetV2 and
# LR-ASPP segmentation. Session 37's numbers are in bench/RESULTS.md.
THIRD = {
    "deit_tiny_patch16_224": ("timm", 224), "levit_128s": ("timm", 224),
    "tiny_vit_5m_224": ("timm", 224), "pvt_v2_b0": ("timm", 224),
    "xcit_nano_12_p16_224": ("timm", 224), "gcvit_xxtiny": ("timm", 224),
    "poolformerv2_s12": ("timm", 224), "hrnet_w18_small": ("timm", 224),
    "selecsls42b": ("timm", 224), "resnext26ts": ("timm", 224), "fbnetv3_b": ("timm", 224),
    "efficientnet_b1": ("timm", 224), "mobilenetv3_large_100": ("timm", 224),
    "shufflenet_v2_x1_0": ("torchvision", 224),
    "lraspp_mobilenet_v3_large": ("torchvision_segmentation", 256),
}

# A fourth set (--fourth), held out while the first three were tuned: Inception-v3, Res2Net's
# hierarchical splits, selective-kernel and split-attention nets (SKNet, ResNeSt), CSPDarknet,
# dual paths (DPN), SE-ResNeXt, ECA's 1-d channel conv, Swin's shifted windows, cascaded group
# attention (EfficientViT-M), InceptionNeXt's band kernels, StarNet's elementwise products,
# HardCoRe-NAS, NF-RegNet's weight standardization, RegNetZ, CoaT-Lite, MambaOut's gated convs,
# EfficientFormer, BoTNet's relative-position attention, GhostNetV3, GENet, MobileNetV1,
# CrossViT, PiT, ConViT, and YOLOv5, YOLOv9, YOLO12 and YOLO26.
FOURTH = {
    "inception_v3": ("timm", 224), "res2net50_14w_8s": ("timm", 160),
    "skresnet18": ("timm", 224), "resnest14d": ("timm", 224), "cspdarknet53": ("timm", 160),
    "dpn48b": ("timm", 224), "seresnext26d_32x4d": ("timm", 224), "ecaresnet26t": ("timm", 224),
    "swin_tiny_patch4_window7_224": ("timm", 224), "efficientvit_m0": ("timm", 224),
    "inception_next_atto": ("timm", 224), "starnet_s1": ("timm", 224),
    "hardcorenas_a": ("timm", 224), "nf_regnet_b0": ("timm", 224), "regnetz_b16": ("timm", 224),
    "coat_lite_tiny": ("timm", 224), "mambaout_femto": ("timm", 224),
    "efficientformer_l1": ("timm", 224), "botnet26t_256": ("timm", 256),
    "ghostnetv3_100": ("timm", 224), "gernet_s": ("timm", 224), "mobilenetv1_100": ("timm", 224),
    "crossvit_tiny_240": ("timm", 240), "pit_ti_224": ("timm", 224), "convit_tiny": ("timm", 224),
    "yolov5n": ("ultralytics", 320), "yolov9t": ("ultralytics", 320),
    "yolo12n": ("ultralytics", 320), "yolo26n": ("ultralytics", 320),
}

# A fifth set (--fifth), held out while the first four were tuned: EfficientNetV2's fused
# MBConv, EdgeTPU and NAS nets, CSPDarknet with a focus stem, MobileNetV4's mobile attention,
# FastViT with attention, MetaFormer's CAFormer (StarReLU), DaViT's channel attention, MaxViT's
# block and grid attention, CoAtNet, Twins, Visformer, CaiT's talking heads, MViTv2's pooling
# attention, lambda and halo attention, global context blocks, MLP nets (ResMLP, gMLP),
# ConvMixer's 9×9 depthwise convs, pre-activation ResNetV2, TResNet's space-to-depth stem,
# DLA-X, HGNet, torchvision's RegNetX, SqueezeNet 1.0 and MobileNetV3, and YOLOv8's
# segmentation and pose heads and YOLOv6.
FIFTH = {
    "tf_efficientnetv2_b0": ("timm", 224), "efficientnet_es": ("timm", 224),
    "spnasnet_100": ("timm", 224), "cs3darknet_focus_s": ("timm", 256),
    "mobilenetv4_hybrid_medium": ("timm", 224), "fastvit_sa12": ("timm", 224),
    "caformer_s18": ("timm", 224), "davit_tiny": ("timm", 224),
    "maxvit_nano_rw_256": ("timm", 256), "coatnet_nano_rw_224": ("timm", 224),
    "twins_svt_small": ("timm", 224), "visformer_tiny": ("timm", 224),
    "cait_xxs24_224": ("timm", 224), "mvitv2_tiny": ("timm", 224),
    "lambda_resnet26t": ("timm", 256), "halonet26t": ("timm", 256),
    "gcresnet33ts": ("timm", 256), "resmlp_12_224": ("timm", 224), "gmlp_ti16_224": ("timm", 224),
    "convmixer_1024_20_ks9_p14": ("timm", 224), "resnetv2_50": ("timm", 160),
    "tresnet_m": ("timm", 160), "dla46x_c": ("timm", 224), "hgnet_tiny": ("timm", 224),
    "regnet_x_400mf": ("torchvision", 224), "squeezenet1_0": ("torchvision", 224),
    "mobilenet_v3_small": ("torchvision", 224), "yolov8n-seg": ("ultralytics", 320),
    "yolov8n-pose": ("ultralytics", 320), "yolov6n": ("ultralytics", 320),
}

# A sixth set (--sixth), held out while the first five were tuned: VGG, Xception's separable
# convs, Inception-v4, LeViT's conv form, Next-ViT, RDNet, FocalNet's focal modulation, TNT,
# Hiera, EVA-02 and ViT with rotary embeddings, SwinV2's cosine attention, DeiT-III, VOLO's
# outlook attention (Fold), MobileViT-S, MLP-Mixer, ConvNeXt-Nano, SHViT, MobileCLIP's FastViT,
# RepVGG-B0, CSPResNeXt, SE-BoTNet, ECA-NFNet, PoolFormer, EfficientViT-L, MobileNetV4 with blur
# pooling, TF-padded MixNet, ViT with registers, ReXNet-R, FasterNet's partial convs, CSATv2,
# ViTamin, ResNet-RS, torchvision's AlexNet, MaxViT and Swin-V2, and YOLOv8's ghost and P2
# variants, YOLOv3-tiny and YOLO11's oriented boxes.
SIXTH = {
    "vgg11_bn": ("timm", 224), "xception41": ("timm", 224), "inception_v4": ("timm", 224),
    "levit_conv_128s": ("timm", 224), "nextvit_small": ("timm", 224), "rdnet_tiny": ("timm", 224),
    "focalnet_tiny_srf": ("timm", 224), "tnt_s_patch16_224": ("timm", 224),
    "hiera_tiny_224": ("timm", 224), "eva02_tiny_patch14_224": ("timm", 224),
    "vit_small_patch16_rope_224": ("timm", 224), "swinv2_cr_tiny_ns_224": ("timm", 224),
    "deit3_small_patch16_224": ("timm", 224), "volo_d1_224": ("timm", 224),
    "mobilevit_s": ("timm", 256), "mixer_s16_224": ("timm", 224), "convnext_nano": ("timm", 224),
    "shvit_s1": ("timm", 224), "fastvit_mci0": ("timm", 256), "repvgg_b0": ("timm", 224),
    "cspresnext50": ("timm", 160), "sebotnet33ts_256": ("timm", 256),
    "eca_nfnet_l0": ("timm", 160), "poolformer_s12": ("timm", 224),
    "efficientvit_l1": ("timm", 224), "mobilenetv4_conv_blur_medium": ("timm", 224),
    "tf_mixnet_s": ("timm", 224), "vit_little_patch16_reg4_gap_256": ("timm", 256),
    "rexnetr_200": ("timm", 224), "fasternet_t0": ("timm", 224), "csatv2": ("timm", 224),
    "vitamin_small_224": ("timm", 224), "resnetrs50": ("timm", 160),
    "alexnet": ("torchvision", 224), "maxvit_t": ("torchvision", 224),
    "swin_v2_t": ("torchvision", 224), "yolov8n-ghost": ("ultralytics", 320),
    "yolov8n-p2": ("ultralytics", 320), "yolov3-tinyu": ("ultralytics", 320),
    "yolo11n-obb": ("ultralytics", 320),
}

# A seventh set (--seventh), held out while the first six were tuned: GroupNorm ResNet,
# Sequencer's BiLSTMs, anti-aliased ResNet and DenseNet (blur pooling), NFNet-F0's scaled
# weight standardization, Inception-ResNet-v2, NesT, XCiT-T, DPN-68, TF-padded EfficientNet,
# global-context EfficientNetV2, bottleneck-attention and halo ResNeXts, EfficientViT-B1,
# EfficientFormerV2-S1, TinyViT-11M, FastViT-S12, MobileViTv2, PVT-v2-B1, EdgeNeXt-S,
# ConvFormer, Swin-S3, CrossViT-9, LeViT-192, EfficientViT-M2, RegNetZ-C16, ConvNeXtV2-Nano,
# MambaOut-Kobe, HGNetV2-B1, FlexiViT, anti-aliased MobileNetV4, DLA with Res2Net blocks,
# MLP-Mixer with GLU, MaxxViT's relative-position MLP, torchvision's ResNeXt-50,
# EfficientNetV2-S, MNASNet and RegNetY-800MF, and YOLO11's segmentation and pose heads and
# YOLOv8-P6.
SEVENTH = {
    "resnet50_gn": ("timm", 160), "sequencer2d_s": ("timm", 224), "resnetaa50": ("timm", 160),
    "densenetblur121d": ("timm", 160), "dm_nfnet_f0": ("timm", 160),
    "inception_resnet_v2": ("timm", 224), "nest_tiny": ("timm", 224),
    "xcit_tiny_12_p16_224": ("timm", 224), "dpn68": ("timm", 224),
    "tf_efficientnet_b0": ("timm", 224), "gc_efficientnetv2_rw_t": ("timm", 224),
    "bat_resnext26ts": ("timm", 256), "eca_halonext26ts": ("timm", 256),
    "efficientvit_b1": ("timm", 224), "efficientformerv2_s1": ("timm", 224),
    "tiny_vit_11m_224": ("timm", 224), "fastvit_s12": ("timm", 224),
    "mobilevitv2_100": ("timm", 256), "pvt_v2_b1": ("timm", 224), "edgenext_small": ("timm", 256),
    "convformer_s18": ("timm", 224), "swin_s3_tiny_224": ("timm", 224),
    "crossvit_9_240": ("timm", 240), "levit_192": ("timm", 224), "efficientvit_m2": ("timm", 224),
    "regnetz_c16": ("timm", 256), "convnextv2_nano": ("timm", 224), "mambaout_kobe": ("timm", 224),
    "hgnetv2_b1": ("timm", 224), "flexivit_small": ("timm", 240),
    "mobilenetv4_conv_aa_medium": ("timm", 256), "dla60_res2net": ("timm", 160),
    "gmixer_12_224": ("timm", 224), "maxxvit_rmlp_nano_rw_256": ("timm", 256),
    "resnext50_32x4d": ("torchvision", 160), "efficientnet_v2_s": ("torchvision", 224),
    "mnasnet1_0": ("torchvision", 224), "regnet_y_800mf": ("torchvision", 224),
    "yolo11n-seg": ("ultralytics", 320), "yolo11n-pose": ("ultralytics", 320),
    "yolov8n-p6": ("ultralytics", 320),
}


# An eighth set (--eighth), held out while the first seven were tuned: CPU-oriented CpuBone,
# CSPNeXt, EfficientViM's hidden-state mixer, SAM2's Hiera, iFormer-M, PP-LCNetV2, LowFormer,
# the legacy SE-ResNet and Xception, SwiftFormer, Swin-V2, the hybrid ResNet-26 + ViT,
# relative-position ViT, NASNet-A, Qwen3's and NaFlex ViTs (rotary embeddings), MixNet's mixed
# kernels, CondConv EfficientNet, FBNetV3, TinyNet, BiT's weight-standardized ResNetV2,
# RegNetZ with EvoNorm, NF-RegNet, ESE-VoVNet, CSPDarknet with a focus stem, lambda layers,
# GENet, ResNet-RS, GhostNetV2, EVA-02 (rotary embeddings), MobileViT-XXS, a register ViT,
# ECA-ResNet, SE-ResNeXt-D, BEiT and SAM's ViT, torchvision's FCN and DeepLabV3 (dilated
# ResNet-50), ViT-B/16, Swin-T and Wide ResNet-50, and YOLO's classifiers and RT-DETR.
EIGHTH = {
    "cpubone_b0_bfrobust": ("timm", 224), "cspnext_tiny": ("timm", 224),
    "efficientvim_m1": ("timm", 224), "hieradet_small": ("timm", 224),
    "iformer_m": ("timm", 224), "lcnetv2_small": ("timm", 224), "lowformer_b0": ("timm", 224),
    "legacy_seresnet18": ("timm", 160), "legacy_xception": ("timm", 224),
    "swiftformer_xs": ("timm", 224), "swinv2_tiny_window8_256": ("timm", 256),
    "vit_small_r26_s32_224": ("timm", 224), "vit_relpos_small_patch16_224": ("timm", 224),
    "nasnetalarge": ("timm", 224), "qwen3_vit_88m": ("timm", 224),
    "naflexvit_base_patch16_gap": ("timm", 224), "mixnet_s": ("timm", 224),
    "efficientnet_cc_b0_4e": ("timm", 224), "fbnetv3_b": ("timm", 224),
    "tinynet_a": ("timm", 192), "resnetv2_50x1_bit": ("timm", 160),
    "regnetz_b16_evos": ("timm", 224), "nf_regnet_b0": ("timm", 192),
    "ese_vovnet19b_dw": ("timm", 224), "cs3darknet_focus_s": ("timm", 256),
    "lambda_resnet26t": ("timm", 256), "gernet_s": ("timm", 224), "resnetrs50": ("timm", 160),
    "ghostnetv2_100": ("timm", 224), "eva02_tiny_patch14_224": ("timm", 224),
    "mobilevit_xxs": ("timm", 256), "vit_medium_patch16_reg4_gap_256": ("timm", 256),
    "ecaresnet26t": ("timm", 256), "seresnext26d_32x4d": ("timm", 224),
    "beit_base_patch16_224": ("timm", 224), "samvit_base_patch16_224": ("timm", 224),
    "fcn_resnet50": ("torchvision_segmentation", 160),
    "deeplabv3_resnet50": ("torchvision_segmentation", 160),
    "vit_b_16": ("torchvision", 224), "swin_t": ("torchvision", 224),
    "wide_resnet50_2": ("torchvision", 160), "yolov8n-cls": ("ultralytics", 224),
    "yolo11n-cls": ("ultralytics", 224), "rtdetr-l": ("ultralytics", 320),
}

# The held-out sets by their command-line flag (--extra, --third, …).
HELD_OUT = {"extra": EXTRA, "third": THIRD, "fourth": FOURTH, "fifth": FIFTH, "sixth": SIXTH,
            "seventh": SEVENTH, "eighth": EIGHTH}

# ----------------------------------------------------------------------------------------------
# Models

class YoloRaw(nn.Module):
    """An ultralytics model whose forward returns only the decoded head output: in eval mode the
    Detect, Classify and RT-DETR heads return (y, raw predictions), which the exporters cannot
    name as one output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model(x)
        while isinstance(out, (tuple, list)):  # a segmentation head nests (boxes, masks) deeper
            out = out[0]
        return out


class SegmentationOut(nn.Module):
    """A torchvision segmentation model whose forward returns its "out" tensor, not a dict."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def build(name, source):
    """The model, randomly initialized (seeded by the caller), in eval mode."""
    if source == "timm":
        import timm
        model = timm.create_model(name, pretrained=False)
    elif source == "torchvision":
        import torchvision
        model = getattr(torchvision.models, name)(weights=None)
    elif source == "torchvision_segmentation":
        import torchvision
        model = SegmentationOut(
            getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None))
    elif source == "ultralytics":
        from ultralytics.nn import tasks
        task = (tasks.ClassificationModel if name.endswith("-cls") else
                tasks.RTDETRDetectionModel if name.startswith("rtdetr") else tasks.DetectionModel)
        model = YoloRaw(task(f"{name}.yaml", verbose=False))  # the yaml ships with it
    else:
        raise ValueError(f"unknown source {source!r}")
    return model.eval()


def randomize_constant_scalars(model, generator):
    """Scalar parameters outside BatchNorms (timm's LearnableAffineBlock scale and bias, a
    learnable gamma) start at 1 or 0, where a Mul or Add by them is an identity that any
    optimizer deletes; trained ones are not. Each gets value + U(-0.25, 0.25), so the zoo times
    the ops a trained model has."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                continue
            for p in module.parameters(recurse=False):
                if p.numel() == 1:
                    p.add_(torch.rand(1, generator=generator).item() * 0.5 - 0.25)


def randomize_zero_weights(model, generator):
    """A weight matrix of zeros (timm zero-initializes the classifier of MLP-Mixer, gMLP, ResMLP,
    Sequencer and Hiera) makes every output 0, and the comparison of outputs says nothing. Such a
    weight gets N(0, 0.02²) values, a trained head's scale."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.modules.batchnorm._BatchNorm):
                continue
            for p in module.parameters(recurse=False):
                if p.dim() >= 2 and not p.any():
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.02)


def randomize_batchnorms(model, x, generator):
    """Random BatchNorm parameters and statistics, so that BN folding must get the numbers right.

    Statistics drawn out of thin air (mean ~ N(0, 0.1), var ~ U(0.5, 1.5)) let activations grow
    block after block in a deep or multi-branch net (RepVGG-A0's output reached 6e4, MobileOne-S0's
    2e16), where no tolerance means anything. So they are measured and then perturbed, in one
    eval-mode forward on a batch of x and 7 more random inputs: just before each BN runs, its
    running statistics are set from its actual input (upstream BNs already final), then
    mean += N(0, 0.1)·std and var ·= U(0.5, 1.5) (var at least 1e-3: a channel dead on this batch
    must not be scaled by 1/sqrt(eps)); weight ~ U(0.5, 1.5) and bias ~ N(0, 0.1) beforehand."""
    def calibrate(m, inputs):
        (t,) = inputs
        dims = [d for d in range(t.dim()) if d != 1]
        mean, var = t.mean(dims), t.var(dims, unbiased=False)
        c = m.num_features
        m.running_mean.copy_(mean + torch.randn(c, generator=generator) * 0.1 * var.sqrt())
        m.running_var.copy_(var.clamp_min(1e-3) * (torch.rand(c, generator=generator) + 0.5))

    hooks = []
    for m in model.modules():
        if not isinstance(m, nn.modules.batchnorm._BatchNorm):
            continue
        c = m.num_features
        with torch.no_grad():
            if m.affine:
                m.weight.copy_(torch.rand(c, generator=generator) + 0.5)
                m.bias.copy_(torch.randn(c, generator=generator) * 0.1)
        if m.track_running_stats:
            hooks.append(m.register_forward_pre_hook(calibrate))
    batch = torch.cat([x, torch.randn(7, *x.shape[1:], generator=generator)])
    with torch.no_grad():
        model.eval()(batch)
    for hook in hooks:
        hook.remove()


def deploy_form(model, source):
    """The authors' inference form (a deep copy), or None where it is the model itself."""
    if source == "ultralytics":
        deploy = copy.deepcopy(model)
        deploy.model.fuse(verbose=False)  # Conv+BN folding, RepConv merging
        return deploy.eval()
    if source == "timm":
        from timm.utils.model import reparameterize_model
        deploy = reparameterize_model(model)  # a deep copy
        return deploy.eval() if structure(deploy) != structure(model) else None
    return None


def structure(model):
    """The module tree and parameter names: what re-parameterization changes."""
    return ([(n, type(m).__name__) for n, m in model.named_modules()],
            [n for n, _ in model.named_parameters()])


# ----------------------------------------------------------------------------------------------
# Exports

def export_ts17(model, x, path, dynamic=False, keep_bn=False):
    """TorchScript exporter, opset 17; dynamic: input dims 0, 2, 3 named N, H, W. keep_bn: on an
    eval model the exporter folds each BatchNorm into the conv before it; TrainingMode.PRESERVE
    skips that, leaving BatchNormalization nodes (training_mode 0) as a runtime must fold them."""
    axes = {"input": {0: "N", 2: "H", 3: "W"}, "output": {0: "N"}} if dynamic else None
    mode = torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, x, str(path), opset_version=OPSET, dynamo=False, training=mode,
                      input_names=["input"], output_names=["output"], dynamic_axes=axes)


def export_dynamo(model, x, path):
    """The dynamo exporter (torch's default), at its default opset, made a single file."""
    torch.onnx.export(model, (x,), str(path), dynamo=True, input_names=["input"],
                      output_names=["output"])
    inline_external_data(path)


def inline_external_data(path):
    """Rewrites an ONNX file whose initializers live in external files as one file."""
    header = onnx.load(str(path), load_external_data=False)
    locations = {entry.value for t in header.graph.initializer
                 if t.data_location == onnx.TensorProto.EXTERNAL
                 for entry in t.external_data if entry.key == "location"}
    if not locations:
        return
    model = onnx.load(str(path))  # reads the external data from the file's folder
    onnx.save_model(model, str(path), save_as_external_data=False)
    for location in locations:
        (path.parent / location).unlink(missing_ok=True)


def tolerance(reference):
    return 1e-4 * max(1.0, float(np.abs(reference).max()))


def compare(output, golden):
    """{max_abs_diff, tolerance, ok} of one output against the golden."""
    output = np.asarray(output)
    if output.shape != golden.shape:
        return dict(ok=False, error=f"shape {list(output.shape)} != golden {list(golden.shape)}")
    diff = float(np.abs(output.astype(np.float64) - golden.astype(np.float64)).max())
    return dict(max_abs_diff=diff, tolerance=tolerance(golden), ok=bool(diff <= tolerance(golden)))


def onnxruntime_check(path, x, golden):
    """ONNX Runtime's output on the exported file against the golden (the export's own check)."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    (output, *_) = session.run(None, {session.get_inputs()[0].name: x})
    return compare(output, golden)


def first_line(error):
    text = f"{type(error).__name__}: {error}".strip()
    return text.splitlines()[0][:500] if text else type(error).__name__


def prepared_model(name, source, side):
    """The model as every form is exported from: built with the fixed seed, its constant scalars,
    zero weight matrices and BatchNorms randomized; with its input (numpy and torch) and PyTorch's output on it."""
    torch.manual_seed(SEED)
    model = build(name, source)
    x_np = np.random.default_rng(SEED).standard_normal([BATCH, 3, side, side]).astype(np.float32)
    x = torch.from_numpy(x_np)
    randomize_constant_scalars(model, torch.Generator().manual_seed(SEED))
    randomize_zero_weights(model, torch.Generator().manual_seed(SEED))
    randomize_batchnorms(model, x, torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        golden = model(x).numpy()
    return model, x_np, x, golden


def save_float64_reference(model, x, golden, name, out):
    """The module in float64 on the same input (a copy; the float32 model is untouched):
    {golden64, float32_error} for the manifest, or {golden64_error} where it does not run so."""
    try:
        with torch.no_grad():
            golden64 = copy.deepcopy(model).double()(x.double()).numpy()
    except Exception as e:  # noqa: BLE001 — some modules hold float32-only code paths
        return dict(golden64=None, golden64_error=first_line(e))
    if golden64.shape != golden.shape:
        return dict(golden64=None, golden64_error=f"float64 output {list(golden64.shape)}")
    np.save(out / f"{name}.golden64.npy", golden64)
    return dict(golden64=f"{name}.golden64.npy",
                float32_error=float(np.abs(golden.astype(np.float64) - golden64).max()))


def export_model(name, source, side, out):
    """Exports one model's forms; returns its manifest entry. Never raises for one form."""
    entry = dict(source=source, input_shape=[BATCH, 3, side, side], seed=SEED,
                 input=f"{name}.input.npy", golden=f"{name}.golden.npy", files={}, opsets={},
                 errors={}, seconds={}, onnxruntime_check={})
    start = time.perf_counter()
    model, x_np, x, golden = prepared_model(name, source, side)
    np.save(out / f"{name}.input.npy", x_np)
    np.save(out / f"{name}.golden.npy", golden)
    entry.update(output_shape=list(golden.shape), golden_max_abs=float(np.abs(golden).max()),
                 parameters=sum(p.numel() for p in model.parameters()))
    entry.update(save_float64_reference(model, x, golden, name, out))
    entry["seconds"]["build"] = round(time.perf_counter() - start, 2)

    forms = [("ts17", lambda m, p: export_ts17(m, x, p)),
             ("ts17bn", lambda m, p: export_ts17(m, x, p, keep_bn=True)),
             ("dynamo", lambda m, p: export_dynamo(m, x, p))]
    if name in DYNAMIC:
        forms.append(("dynamic", lambda m, p: export_ts17(m, x, p, dynamic=True)))
    try:
        deploy = deploy_form(model, source)
    except Exception as e:  # noqa: BLE001 — recorded, the other forms go on
        deploy = None
        record_error(entry, out, name, "deploy", e)
    if deploy is not None:
        with torch.no_grad():
            entry["deploy_check"] = compare(deploy(x).numpy(), golden)
        if not entry["deploy_check"]["ok"]:
            print(f"  {name}: deploy form differs from the golden: {entry['deploy_check']}")
        forms.append(("deploy", lambda m, p: export_ts17(deploy, x, p)))

    for form, export in forms:
        path = out / f"{name}.{form}.onnx"
        path.unlink(missing_ok=True)
        (out / f"{name}.{form}.error.txt").unlink(missing_ok=True)
        start = time.perf_counter()
        print(f"  {name}: {form} …", flush=True)
        try:
            with torch.no_grad():
                export(model, path)
            entry["files"][form] = path.name
            header = onnx.load(str(path), load_external_data=False)
            entry["opsets"][form] = next(o.version for o in header.opset_import if o.domain in
                                         ("", "ai.onnx"))
        except Exception as e:  # noqa: BLE001 — recorded, the next form goes on
            record_error(entry, out, name, form, e)
            continue
        finally:
            entry["seconds"][form] = round(time.perf_counter() - start, 2)
        try:
            entry["onnxruntime_check"][form] = onnxruntime_check(path, x_np, golden)
        except Exception as e:  # noqa: BLE001
            entry["onnxruntime_check"][form] = dict(ok=False, error=first_line(e))
        if not entry["onnxruntime_check"][form]["ok"]:
            print(f"  {name}: ONNX Runtime on {path.name} differs from the golden: "
                  f"{entry['onnxruntime_check'][form]}")
    return entry


def add_float64_reference(name, source, side, out):
    """--golden64-only: the float64 reference for a model already exported to `out`."""
    model, _, x, golden = prepared_model(name, source, side)
    saved = np.load(out / f"{name}.golden.npy")
    if not np.array_equal(saved, golden):
        raise RuntimeError(f"{name}: the model no longer gives its saved golden (max|diff| "
                           f"{np.abs(saved - golden).max():.3g}); export it again")
    return save_float64_reference(model, x, golden, name, out)


def record_error(entry, out, name, form, error):
    entry["errors"][form] = first_line(error)
    (out / f"{name}.{form}.error.txt").write_text(traceback.format_exc())
    print(f"  {name}: {form} FAILED: {entry['errors'][form]}", flush=True)


def versions():
    import importlib.metadata as md
    found = {}
    for package in ("torch", "torchvision", "timm", "ultralytics", "onnx", "onnxscript",
                    "onnxruntime"):
        try:
            found[package] = md.version(package)
        except md.PackageNotFoundError:
            found[package] = None
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated model names (default: the whole zoo)")
    parser.add_argument("--out", default=str(HERE / "models"), help="output folder")
    which = parser.add_mutually_exclusive_group()
    for flag in HELD_OUT:
        which.add_argument(f"--{flag}", action="store_true",
                           help=f"export the {flag.upper()} set instead of the zoo "
                                f"(e.g. --out /tmp/{flag})")
    parser.add_argument("--golden64-only", action="store_true",
                        help="only add <name>.golden64.npy to an exported folder (its manifest "
                             "entries kept; the golden must come out the same)")
    args = parser.parse_args()
    held_out = next((models for flag, models in HELD_OUT.items() if getattr(args, flag)), None)
    if held_out is not None:
        ZOO.clear()
        ZOO.update(held_out)
    names = list(ZOO) if not args.only else [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in ZOO]
    if unknown:
        parser.error(f"unknown models {unknown}; the zoo: {', '.join(ZOO)}")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(2)
    warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export")
    warnings.filterwarnings("ignore", message=".*constant folding be turned off")  # ts17bn: eval

    manifest_path = out / "manifest.json"
    models = {}
    if manifest_path.exists():  # --only updates these entries and keeps the others
        models = json.loads(manifest_path.read_text()).get("models", {})
    for i, name in enumerate(names):
        source, side = ZOO[name]
        print(f"[{i + 1}/{len(names)}] {name} ({source})", flush=True)
        if args.golden64_only:
            if name not in models:
                print(f"  {name}: not in {manifest_path}, skipped (export it first)")
                continue
            try:
                models[name].update(add_float64_reference(name, source, side, out))
            except Exception as e:  # noqa: BLE001 — recorded, the next model goes on
                models[name].update(golden64=None, golden64_error=first_line(e))
            print(f"  {name}: float32_error {models[name].get('float32_error')} "
                  f"{models[name].get('golden64_error') or ''}", flush=True)
        else:
            try:
                models[name] = export_model(name, source, side, out)
            except Exception as e:  # noqa: BLE001 — building or running the model itself failed
                models[name] = dict(source=source, input_shape=[BATCH, 3, side, side], files={},
                                    errors={"build": first_line(e)})
                (out / f"{name}.build.error.txt").write_text(traceback.format_exc())
                print(f"  {name}: build FAILED: {models[name]['errors']['build']}", flush=True)
        # Written after every model, so an interrupted run leaves a usable manifest.
        ordered = {n: models[n] for n in list(ZOO) + sorted(models) if n in models}
        manifest = dict(versions=versions(), python=sys.version.split()[0], opset_ts=OPSET,
                        tolerance="1e-4 * max(1, max|golden|)", models=ordered)
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")

    failed = {n: models[n]["errors"] for n in names if models.get(n, {}).get("errors")}
    print(f"\nwrote {manifest_path}: {len(names)} models, export errors: "
          f"{json.dumps(failed, indent=2) if failed else 'none'}")


if __name__ == "__main__":
    main()
