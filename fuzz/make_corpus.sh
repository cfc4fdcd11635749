#!/usr/bin/env bash
# Regenerates the committed seed corpus under fuzz/corpus/<target>/:
#   onnx_load_fuzzer, optimize_run_fuzzer: the hand-written models in fuzz/seeds/*.textproto
#     (encoded with protoc; small single-input graphs that optimize_run_fuzzer runs), every
#     tests/data/onnx model under 50 KB, and a few small ONNX node-test models;
#   safetensors_fuzzer: crafted files (empty, metadata only, each dtype) and a few goldens.
set -euo pipefail
cd "$(dirname "$0")"
onnx_data=${REFOLD_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data}
rm -rf corpus
mkdir -p corpus/onnx_load_fuzzer corpus/optimize_run_fuzzer corpus/safetensors_fuzzer

for f in seeds/*.textproto; do
  name=$(basename "${f%.textproto}")
  protoc --proto_path=/usr/include --encode=onnx.ModelProto onnx/onnx.proto <"$f" \
    >"corpus/onnx_load_fuzzer/$name.onnx"
done
for m in ../tests/data/onnx/*/model.onnx; do
  if (($(stat -c %s "$m") < 50000)); then
    cp "$m" "corpus/onnx_load_fuzzer/$(basename "$(dirname "$m")").onnx"
  fi
done
for t in test_conv_with_strides_padding test_convtranspose_pads test_batchnorm_epsilon \
         test_maxpool_2d_pads test_averagepool_2d_ceil test_concat_2d_axis_0 test_gemm_all_attributes \
         test_resize_upsample_scales_linear test_globalaveragepool test_flatten_axis1; do
  [[ -f "$onnx_data/node/$t/model.onnx" ]] && cp "$onnx_data/node/$t/model.onnx" "corpus/onnx_load_fuzzer/$t.onnx"
done
cp corpus/onnx_load_fuzzer/* corpus/optimize_run_fuzzer/

python3 - <<'PY'
import json, struct
def st(tensors, metadata=None, pad=True):
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data
f32 = lambda *v: struct.pack("<%df" % len(v), *v)
seeds = {
    "empty": st({}),
    "metadata_only": st({}, {"format": "pt"}),
    "f32_2x3": st({"w": ("F32", [2, 3], f32(1, 2, 3, 4, 5, 6))}, {"format": "pt"}),
    "bf16_scalar_i64": st({"a": ("BF16", [2], b"\x80\x3f\x00\x40"), "n": ("I64", [], struct.pack("<q", 7))}),
    "conv_bn": st({"bn.bias": ("F32", [2], f32(0, 1)), "bn.num_batches_tracked": ("I64", [], struct.pack("<q", 0)),
                   "bn.running_mean": ("F32", [2], f32(0.5, -0.5)), "bn.running_var": ("F32", [2], f32(1, 2)),
                   "bn.weight": ("F32", [2], f32(1, 1)), "conv.weight": ("F32", [2, 1, 1, 1], f32(0.25, 4))}),
    "zero_size": st({"z": ("F32", [0, 3], b"")}),
    "unpadded": st({"w": ("F32", [1], f32(2))}, pad=False),
}
for name, b in seeds.items():
    open("corpus/safetensors_fuzzer/%s.safetensors" % name, "wb").write(b)
PY
for g in qarepvgg_identity repconv_bn mobileone_depthwise; do
  cp "../tests/data/reparam_goldens/$g.safetensors" corpus/safetensors_fuzzer/
done
echo "make_corpus: $(find corpus -type f | wc -l) files, $(du -sh corpus | cut -f1)"
