"""ONNX Runtime vs ONNX's reference (onnx.reference) vs refold on Resize: every mode and coordinate
transformation at non-integer scales, opset 19 (docs/graph-and-onnx.md, "Where ONNX Runtime and
ONNX's reference disagree"). Run with the zoo venv: python bench/zoo/resize_agreement.py [REFOLD]
"""
import itertools, json, os, subprocess, sys, tempfile
import numpy as np, onnx, onnxruntime as ort
from onnx import helper as h, TensorProto as T, numpy_helper as nh
from onnx.reference import ReferenceEvaluator
REFOLD = sys.argv[1] if len(sys.argv) > 1 else "build/tools/refold/refold"
WORK = tempfile.mkdtemp(prefix="refold-resize-")
rng = np.random.default_rng(0)
x = rng.standard_normal((1, 2, 5, 7)).astype(np.float32)
rows = []
def model(mode, ctm, nearest, scales=None, sizes=None, cubic_a=-0.75, exclude=0, antialias=0, opset=19):
    ins = ["x", "", "scales" if scales is not None else "", "sizes" if sizes is not None else ""]
    while ins and ins[-1] == "": ins.pop()
    kw = dict(mode=mode, coordinate_transformation_mode=ctm)
    if mode == "nearest": kw["nearest_mode"] = nearest
    if mode == "cubic": kw.update(cubic_coeff_a=cubic_a, exclude_outside=exclude)
    if antialias: kw["antialias"] = 1
    inits = []
    if scales is not None: inits.append(nh.from_array(np.array(scales, np.float32), "scales"))
    if sizes is not None: inits.append(nh.from_array(np.array(sizes, np.int64), "sizes"))
    g = h.make_graph([h.make_node("Resize", ins, ["y"], **kw)], "r",
                     [h.make_tensor_value_info("x", T.FLOAT, list(x.shape))],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)]); m.ir_version = 9
    return m
os.makedirs(WORK + "/m", exist_ok=True)
np.save(WORK + "/x.npy", x)
cases = []
for mode, ctm in itertools.product(["nearest", "linear", "cubic"], ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"]):
    nearests = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"] if mode == "nearest" else [None]
    for nearest in nearests:
        for sc in [[1, 1, 2.0, 2.0], [1, 1, 1.7, 0.6], [1, 1, 0.5, 3.3]]:
            cases.append((mode, ctm, nearest, sc))
for i, (mode, ctm, nearest, sc) in enumerate(cases):
    m = model(mode, ctm, nearest, scales=sc)
    path = f"{WORK}/m/{i}.onnx"; onnx.save(m, path)
    try:
        r_ort = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    except Exception as e:
        r_ort = None
    try:
        r_ref = ReferenceEvaluator(m).run(None, {"x": x})[0]
    except Exception as e:
        r_ref = None
    out = f"{WORK}/out{i}"
    p = subprocess.run([REFOLD, "run", path, "--input", "x=" + WORK + "/x.npy", "-o", out], capture_output=True, text=True)
    r_rf = np.load(out + "/y.npy") if p.returncode == 0 else None
    def d(a, b):
        if a is None or b is None: return None
        if a.shape != b.shape: return "shape"
        return float(np.abs(a - b).max())
    rows.append(dict(mode=mode, ctm=ctm, nearest=nearest, scales=sc[2:], ort_ref=d(r_ort, r_ref), refold_ref=d(r_rf, r_ref), refold_ort=d(r_rf, r_ort), err=None if p.returncode == 0 else p.stderr.strip()[-120:]))
for r in rows:
    if r["ort_ref"] not in (None, 0.0) or r["refold_ref"] not in (0.0,) :
        print(r)
print(len(rows), "cases; ORT≠ref:", sum(1 for r in rows if r["ort_ref"] not in (None,) and r["ort_ref"] != 0 and (r["ort_ref"] == "shape" or r["ort_ref"] > 1e-5)),
      "refold≠ref:", sum(1 for r in rows if r["refold_ref"] is None or r["refold_ref"] == "shape" or r["refold_ref"] > 1e-5))
json.dump(rows, open(WORK + "/rows.json", "w"), indent=1)
print("rows:", WORK + "/rows.json")
