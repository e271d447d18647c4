#!/usr/bin/env python3
"""The ONNX importer against onnxruntime, on the shared YOLOv8n export and real images.

For each image, build/tests/onnx_dump imports the model (ir/onnx.c), letterboxes the image,
runs it in FP32 on the CPU and writes its network input, its decoded output (the export's
output0 layout, from yquant's detect heads: DFL, anchor points, strides, sigmoid) and its
detections (decode + NMS in yquant's post-processing).  onnxruntime runs the original model on
the same input tensor:
  - raw output: max |ours - ort| / max |ort| <= 1e-4;
  - detections: an independent decode in this file (threshold, per-class NMS, the letterbox
    undone) from onnxruntime's output gives the same detections: same count, class by class,
    scores within 1e-4, boxes within 0.5 px.
Bad input: a truncated model, a file that is not one, and an op outside the importer each fail
in one line naming the file (and the node).

Prints PASS/FAIL/SKIP lines (counted by tests/run.sh); exits 0 if none failed."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
BUILD = os.path.join(ROOT, os.environ.get("YQ_BUILD") or "build")
MODEL = os.path.join(DATA, "models", "onnx", "yolov8n-640", "yolov8n.onnx")
DUMP = os.path.join(BUILD, "tests", "onnx_dump")
YQ = os.path.join(BUILD, "yquant")
failed = 0


def report(name, ok, why=""):
    global failed
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}")
    failed += not ok


def decode(out, iw, ih, netw, neth, conf=0.25, nms=0.45, max_dets=100):
    """output0 ((4 + classes) x N) -> detections in image pixels, as a reader of the export would."""
    import numpy as np
    boxes, scores = out[:4].T, out[4:].T
    cand = []
    for i, j in zip(*np.nonzero(scores > conf)):
        cx, cy, w, h = (float(v) for v in boxes[i])
        cand.append([cx / netw, cy / neth, w / netw, h / neth, float(scores[i, j]), int(j)])
    # the letterbox undone: Ultralytics' (its LetterBox: r = min(netw / iw, neth / ih), the
    # picture round(iw r) x round(ih r) at integer half offsets; r in float32 as yquant has it)
    r = min(np.float32(netw) / np.float32(iw), np.float32(neth) / np.float32(ih))
    nw = min(max(int(np.rint(np.float32(iw) * r)), 1), netw)
    nh = min(max(int(np.rint(np.float32(ih) * r)), 1), neth)
    for c in cand:
        c[0] = (c[0] - (netw - nw) // 2 / netw) / (nw / netw)
        c[1] = (c[1] - (neth - nh) // 2 / neth) / (nh / neth)
        c[2] *= netw / nw
        c[3] *= neth / nh

    def iou(a, b):
        ox = min(a[0] + a[2] / 2, b[0] + b[2] / 2) - max(a[0] - a[2] / 2, b[0] - b[2] / 2)
        oy = min(a[1] + a[3] / 2, b[1] + b[3] / 2) - max(a[1] - a[3] / 2, b[1] - b[3] / 2)
        inter = max(ox, 0) * max(oy, 0)
        union = a[2] * a[3] + b[2] * b[3] - inter
        return inter / union if union > 0 else 0
    cand.sort(key=lambda c: (c[5], -c[4]))
    keep = []
    for i, c in enumerate(cand):
        if c[4] <= 0:
            continue
        for d in cand[i + 1:]:
            if d[5] != c[5]:
                break
            if d[4] > 0 and iou(c, d) > nms:
                d[4] = 0
        keep.append(c)
    dets = []
    for c in keep:
        x0, y0 = max((c[0] - c[2] / 2) * iw, 0), max((c[1] - c[3] / 2) * ih, 0)
        x1, y1 = min((c[0] + c[2] / 2) * iw, iw), min((c[1] + c[3] / 2) * ih, ih)
        dets.append((c[5], c[4], x0, y0, x1 - x0, y1 - y0))
    dets.sort(key=lambda d: -d[1])
    return dets[:max_dets]



def decode_v5(out, iw, ih, netw, neth, conf=0.25, nms=0.45, max_dets=100):
    """YOLOv5's output0 (N x (5 + classes): x, y, w, h in input pixels, objectness, classes)
    -> detections, as a reader of that export would: score = objectness x class, then the
    same threshold, per-class NMS and letterbox as decode()."""
    import numpy as np
    score = out[:, 4:5] * out[:, 5:]
    # (decode() reads boxes from the rows of a (4 + classes) x N layout)
    return decode(np.concatenate([out[:, :4], score], axis=1).T, iw, ih, netw, neth, conf, nms, max_dets)


def parity(model, imgs, tmp, decoder, shape, np, ort):
    """model's FP32 output through build/tests/onnx_dump against onnxruntime's on each image
    (the same input tensor), and its detections against decoder() of onnxruntime's output;
    shape: the output's (rows, columns) when known.  (worst max rel, detections, raw
    failures, detection failures)."""
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    iname = sess.get_inputs()[0].name
    worst, n_dets, bad_raw, bad_dets = 0.0, 0, [], []
    for img in imgs:
        d = os.path.join(tmp, os.path.basename(img))
        os.makedirs(d)
        r = subprocess.run([DUMP, model, img, d], capture_output=True, text=True)
        if r.returncode:
            bad_raw.append(f"{os.path.basename(img)}: onnx_dump failed: {r.stderr.strip()}")
            continue
        c, h, w, rows, n, iw, ih = map(int, open(os.path.join(d, "shape.txt")).read().split())
        x = np.fromfile(os.path.join(d, "input.f32"), dtype=np.float32).reshape(1, c, h, w)
        ours = np.fromfile(os.path.join(d, "output.f32"), dtype=np.float32).reshape(rows, n)
        ref = sess.run(None, {iname: x})[0][0]
        rel = float(np.abs(ours - ref).max() / np.abs(ref).max()) if ours.shape == ref.shape else 1.0
        worst = max(worst, rel)
        if ref.shape != ours.shape or (shape and (rows, n) != shape) or rel > 1e-4:
            bad_raw.append(f"{os.path.basename(img)}: {rows}x{n}, rel {rel:.3g}")
        mine = [tuple(float(v) for v in l.split()) for l in open(os.path.join(d, "dets.txt"))]
        theirs = decoder(ref, iw, ih, w, h)
        n_dets += len(mine)
        if len(mine) != len(theirs):
            bad_dets.append(f"{os.path.basename(img)}: {len(mine)} detections, the independent decode {len(theirs)}")
            continue
        for a, b in zip(mine, theirs):
            if int(a[0]) != b[0] or abs(a[1] - b[1]) > 1e-4 or max(abs(a[k] - b[k]) for k in range(2, 6)) > 0.5:
                bad_dets.append(f"{os.path.basename(img)}: ours {a} vs {tuple(round(v, 3) for v in b)}")
                break
    return worst, n_dets, bad_raw, bad_dets


def yolov5_model(path, np):
    """A small model in the graph YOLOv5 (v6.0 and later) exports: SiLU convs down to three
    scales (strides 8, 16, 32 of a 128 x 128 input), each with its Detect conv and the
    export's decode (Reshape 1 x na x no x ny x nx, Transpose, Sigmoid, Split 2/2/no-4, xy =
    (2 s + grid) stride, wh = (2 s)^2 anchor_grid with the grid and anchor_grid constants of
    _make_grid, Concat, Reshape), the scales concatenated; 3 classes, COCO's P3-P5 anchors,
    random weights (seeded)."""
    import onnx
    from onnx import helper as oh, numpy_helper as nh, TensorProto as TP
    rng = np.random.default_rng(5)
    nodes, inits = [], []
    const = lambda name, a: inits.append(nh.from_array(np.asarray(a), name)) or name

    def conv(x, cin, cout, k, s, name, silu=True, bias_mean=0.0):
        w = const(name + ".w", (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32))
        b = const(name + ".b", (rng.standard_normal(cout) * 0.1 + bias_mean).astype(np.float32))
        nodes.append(oh.make_node("Conv", [x, w, b], [name], kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4))
        if not silu:
            return name
        nodes.append(oh.make_node("Sigmoid", [name], [name + ".sig"]))
        nodes.append(oh.make_node("Mul", [name, name + ".sig"], [name + ".silu"]))
        return name + ".silu"

    na, nc = 3, 3
    no = nc + 5
    anchors = [[10, 13, 16, 30, 33, 23], [30, 61, 62, 45, 59, 119], [116, 90, 156, 198, 373, 326]]
    x = conv("images", 3, 16, 3, 2, "c0")
    x = conv(x, 16, 32, 3, 2, "c1")
    p3 = conv(x, 32, 32, 3, 2, "c2")
    p4 = conv(p3, 32, 64, 3, 2, "c3")
    p5 = conv(p4, 64, 64, 3, 2, "c4")
    z = []
    for i, (f, cin, n) in enumerate(((p3, 32, 16), (p4, 64, 8), (p5, 64, 4))):
        stride = 128 // n
        # bias: objectness mostly low, so that a few cells pass the threshold
        h = conv(f, cin, na * no, 1, 1, f"m{i}", silu=False, bias_mean=-1.0)
        nodes.append(oh.make_node("Reshape", [h, const(f"m{i}.shape", np.array([1, na, no, n, n], np.int64))], [f"r{i}"]))
        nodes.append(oh.make_node("Transpose", [f"r{i}"], [f"t{i}"], perm=[0, 1, 3, 4, 2]))
        nodes.append(oh.make_node("Sigmoid", [f"t{i}"], [f"s{i}"]))
        nodes.append(oh.make_node("Split", [f"s{i}", const(f"sp{i}", np.array([2, 2, no - 4], np.int64))],
                                  [f"xy{i}", f"wh{i}", f"cf{i}"], axis=4))
        yv, xv = np.meshgrid(np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32), indexing="ij")
        grid = np.broadcast_to(np.stack((xv, yv), 2)[None, None], (1, na, n, n, 2)) - np.float32(0.5)
        ag = np.broadcast_to((np.array(anchors[i], np.float32).reshape(na, 2))[None, :, None, None, :], (1, na, n, n, 2))
        nodes.append(oh.make_node("Mul", [f"xy{i}", const(f"two{i}a", np.array(2.0, np.float32))], [f"xy2{i}"]))
        nodes.append(oh.make_node("Add", [f"xy2{i}", const(f"grid{i}", grid.astype(np.float32))], [f"xy3{i}"]))
        nodes.append(oh.make_node("Mul", [f"xy3{i}", const(f"stride{i}", np.array(float(stride), np.float32))], [f"xy4{i}"]))
        nodes.append(oh.make_node("Mul", [f"wh{i}", const(f"two{i}b", np.array(2.0, np.float32))], [f"wh2{i}"]))
        nodes.append(oh.make_node("Pow", [f"wh2{i}", const(f"pw{i}", np.array(2.0, np.float32))], [f"wh3{i}"]))
        nodes.append(oh.make_node("Mul", [f"wh3{i}", const(f"anchor_grid{i}", ag.astype(np.float32))], [f"wh4{i}"]))
        nodes.append(oh.make_node("Concat", [f"xy4{i}", f"wh4{i}", f"cf{i}"], [f"y{i}"], axis=4))
        nodes.append(oh.make_node("Reshape", [f"y{i}", const(f"z{i}.shape", np.array([1, na * n * n, no], np.int64))], [f"z{i}"]))
        z.append(f"z{i}")
    nodes.append(oh.make_node("Concat", z, ["output0"], axis=1))
    rows = na * (16 * 16 + 8 * 8 + 4 * 4)
    g = oh.make_graph(nodes, "yolov5-test", [oh.make_tensor_value_info("images", TP.FLOAT, [1, 3, 128, 128])],
                      [oh.make_tensor_value_info("output0", TP.FLOAT, [1, rows, no])], inits)
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 17)])
    m.metadata_props.add(key="names", value="{0: 'apple', 1: 'banana', 2: 'cherry'}")
    onnx.checker.check_model(m)
    onnx.save(m, path)
    return rows, no


def yolov5_tests(imgs, np, ort):
    """YOLOv5's anchor head (yolov5_model): imported into yquant's yolo heads (new_coords,
    scale_x_y 2, the anchors read from the anchor_grid constants), run in FP32: the output0
    onnx_dump writes from YOLOv5's definition against onnxruntime's (max rel <= 1e-4), yquant's
    detections against decode_v5 of onnxruntime's output; quantized to a package and run on
    the CPU reference (its yolo heads kept); a grid constant that is not YOLOv5's refused in
    one line."""
    try:
        import onnx
    except ImportError:
        print("SKIP onnx_yolov5: no onnx module")
        return
    with tempfile.TemporaryDirectory(prefix="yq_onnx_v5_") as tmp:
        model = os.path.join(tmp, "v5.onnx")
        rows, no = yolov5_model(model, np)
        worst, n_dets, bad_raw, bad_dets = parity(model, imgs, tmp, decode_v5, (rows, no), np, ort)
        print(f"# YOLOv5 anchor head, {len(imgs)} images: worst max|ours - ort| / max|ort| = {worst:.3g}; {n_dets} detections")
        report("onnx_yolov5_fp32_vs_onnxruntime", len(imgs) >= 6 and not bad_raw, "; ".join(bad_raw[:4]))
        report("onnx_yolov5_detections_vs_independent_decode", len(imgs) >= 6 and n_dets > 0 and not bad_dets,
               "; ".join(bad_dets[:4]))
        # inspect names the heads; quantize (calibrated on three images) and detect on the package
        import json
        ins = subprocess.run([YQ, "inspect", model, "--json", "-"], capture_output=True, text=True)
        heads = [l for l in json.loads(ins.stdout)["layers"] if l["type"] == "yolo"] if ins.returncode == 0 else []
        calib = os.path.join(tmp, "calib")
        os.makedirs(calib)
        for p in imgs[:3]:
            os.symlink(p, os.path.join(calib, os.path.basename(p)))
        pkg = os.path.join(tmp, "v5.yqp")
        q = subprocess.run([YQ, "quantize", model, "--calib", calib, "--no-val", "--layers", "0", "-o", pkg],
                           capture_output=True, text=True)
        det = subprocess.run([YQ, "detect", pkg, imgs[0], "--json", "-"], capture_output=True, text=True) \
            if q.returncode == 0 else None
        ok = len(heads) == 3 and q.returncode == 0 and det is not None and det.returncode == 0 and \
            isinstance(json.loads(det.stdout), (dict, list))
        report("onnx_yolov5_package", ok, f"{len(heads)} yolo heads; quantize exit {q.returncode} {q.stderr.strip()[-300:]}; "
               f"detect {det.returncode if det else '-'} {det.stderr.strip()[-200:] if det else ''}")
        # a grid that is not YOLOv5's cell offsets (+0.5 instead of -0.5): refused, one line
        m = onnx.load(model)
        from onnx import numpy_helper as nh
        for t in m.graph.initializer:
            if t.name == "grid1":
                t.CopyFrom(nh.from_array(nh.to_array(t) + np.float32(1.0), t.name))
        bad = os.path.join(tmp, "v5_badgrid.onnx")
        onnx.save(m, bad)
        r = subprocess.run([YQ, "inspect", bad], capture_output=True, text=True)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        report("onnx_yolov5_bad_grid", r.returncode == 1 and len(lines) == 1 and bad in lines[0] and "grid" in lines[0]
               and not r.stdout, f"exit {r.returncode}, stderr {r.stderr.strip()[:300]!r}")


def dets_text(out):
    """`yquant detect`'s printed detections: [(name, score, x, y, w, h)]."""
    import re
    d = []
    for l in out.splitlines():
        m = re.match(r"\s+(.+?)\s+([\d.]+)%\s+x=(-?\d+) y=(-?\d+) w=(\d+) h=(\d+)$", l)
        if m:
            d.append((m.group(1), float(m.group(2)) / 100, *map(float, m.group(3, 4, 5, 6))))
    return d


def qdq_export(pkg, imgs, tmp, np, ort):
    """`yquant export`: the package as a Q/DQ model.  Checked by onnx; every int8 tensor one
    QuantizeLinear at the scale the JSON table and the TensorRT cache give; every int8 conv's
    weights behind a per-channel DequantizeLinear; the package's record in the metadata.  Run by
    onnxruntime on the images above (the same letterboxed inputs, this file's decode), its
    detections against the package's own (`yquant detect`, the CPU int8 reference): of the
    package's detections, at least 90% found (same class, IoU >= 0.9), scores within 0.05 on
    average.  Bad input: a model that is not the package's (one byte changed), a package of a
    Darknet model: one line, no output file."""
    import ast
    import hashlib
    import json
    import struct
    qdq, sj, tc = (os.path.join(tmp, n) for n in ("v8n.qdq.onnx", "scales.json", "trt.cache"))
    r = subprocess.run([YQ, "export", pkg, "-o", qdq, "--json", sj, "--trt-cache", tc], capture_output=True, text=True)
    if r.returncode or not os.path.isfile(qdq):
        report("onnx_qdq_export", False, f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
        return
    why = []
    scales = json.load(open(sj))
    act = scales["activations"]
    try:
        import onnx
        from onnx import numpy_helper
        m = onnx.load(qdq)
        onnx.checker.check_model(m)
        init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
        made = {o: n for n in m.graph.node for o in n.output}
        qs = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
        if len(qs) != len(act):
            why.append(f"{len(qs)} QuantizeLinear, {len(act)} int8 tensors in the table")
        for n in qs:
            a = act.get(n.input[0])
            if a is None or float(init[n.input[1]]) != np.float32(a["scale"]):
                why.append(f"QuantizeLinear of {n.input[0]}: scale {float(init[n.input[1]])} vs {a}")
                break
        convs = [n for n in m.graph.node if n.op_type == "Conv"]
        dq = [n for n in convs if n.input[1] in made and made[n.input[1]].op_type == "DequantizeLinear"]
        if len(dq) != len(scales["weights"]) or not dq:
            why.append(f"{len(dq)} convs read DequantizeLinear weights, {len(scales['weights'])} int8 convs in the table")
        for n in dq:
            d = made[n.input[1]]
            if init[d.input[0]].dtype != np.int8 or not np.array_equal(init[d.input[1]], np.float32(scales["weights"][
                    d.input[0][: -len("_quantized")]]["scales"])):
                why.append(f"{n.name}: weights not int8 at the table's scales")
                break
        meta = {p.key: p.value for p in m.metadata_props}
        sha = hashlib.sha256(open(MODEL, "rb").read()).hexdigest()
        if meta.get("yquant_model_sha256") != sha or "calib" not in meta.get("yquant_qconfig", "") or "names" not in meta:
            why.append(f"metadata {sorted(meta)}")
        names = ast.literal_eval(meta.get("names", "{}"))
    except ImportError:
        names = {}
        print("SKIP onnx_qdq_export_structure: no onnx module")
    lines = open(tc).read().splitlines()
    cache = dict(l.rsplit(": ", 1) for l in lines[1:])
    for t, a in act.items():
        v = struct.unpack(">f", bytes.fromhex(cache.get(t, "00000000")))[0]
        want = np.float32(np.float32(a["scale"]) * (np.float32(255.0 / 127.0) if a["type"] == "uint8" else 1))
        if not lines[0].startswith("TRT-") or v != want:
            why.append(f"TensorRT cache: {t}: {v} vs {want}")
            break
    sess = ort.InferenceSession(qdq, providers=["CPUExecutionProvider"])
    iname = sess.get_inputs()[0].name
    n_ours = found = 0
    sdiff = 0.0

    def iou(a, b):
        ox = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
        oy = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
        inter = max(ox, 0) * max(oy, 0)
        u = a[2] * a[3] + b[2] * b[3] - inter
        return inter / u if u > 0 else 0
    for img in imgs:
        d = os.path.join(tmp, "x_" + os.path.basename(img))
        os.makedirs(d, exist_ok=True)
        if subprocess.run([DUMP, MODEL, img, d], capture_output=True).returncode:
            why.append(f"onnx_dump {img} failed")
            continue
        c, h, w, rows, n, iw, ih = map(int, open(os.path.join(d, "shape.txt")).read().split())
        x = np.fromfile(os.path.join(d, "input.f32"), dtype=np.float32).reshape(1, c, h, w)
        theirs = [(names.get(t[0], str(t[0])),) + tuple(t[1:]) for t in decode(sess.run(None, {iname: x})[0][0], iw, ih, w, h)]
        det = subprocess.run([YQ, "detect", pkg, img], capture_output=True, text=True)
        used = set()
        for o in dets_text(det.stdout):
            n_ours += 1
            cand = [(iou(o[2:], t[2:]), k) for k, t in enumerate(theirs) if t[0] == o[0] and k not in used]
            best = max(cand, default=(0, -1))
            if best[0] >= 0.9:
                used.add(best[1])
                found += 1
                sdiff += abs(theirs[best[1]][1] - o[1])
    print(f"# Q/DQ export: {len(act)} int8 tensors, {len(scales['weights'])} int8 convs; onnxruntime found {found} of the "
          f"package's {n_ours} detections on {len(imgs)} images, mean |score difference| {sdiff / max(found, 1):.4f}")
    if n_ours < 20 or found < 0.9 * n_ours or sdiff / max(found, 1) > 0.05:
        why.append(f"agreement: {found} of {n_ours}, mean score difference {sdiff / max(found, 1):.4f}")
    report("onnx_qdq_export", not why, "; ".join(why[:4]))

    # bad input: another model than the package's, a package of a Darknet model
    other, out = os.path.join(tmp, "other.onnx"), os.path.join(tmp, "bad.qdq.onnx")
    blob = bytearray(open(MODEL, "rb").read())
    blob[-1] ^= 1
    open(other, "wb").write(bytes(blob))
    a = subprocess.run([YQ, "export", pkg, "--model", other, "-o", out], capture_output=True, text=True)
    calib = os.path.join(tmp, "calib")
    dpkg = os.path.join(tmp, "tiny.yqp")
    q = subprocess.run([YQ, "quantize", os.path.join(DATA, "models", "cfg-only", "yolov3-tiny.cfg"), "--weights", "synthetic",
                        "--size", "160", "--calib", calib, "--no-val", "--calib-cache", os.path.join(tmp, "c2.h5"), "-o", dpkg],
                       capture_output=True, text=True)
    b = subprocess.run([YQ, "export", dpkg, "-o", out], capture_output=True, text=True) if q.returncode == 0 else None
    good = (a.returncode == 1 and len(a.stderr.strip().splitlines()) == 1 and "not the model the package was made from" in a.stderr
            and b is not None and b.returncode == 1 and "Darknet" in b.stderr and len(b.stderr.strip().splitlines()) == 1
            and not os.path.exists(out))
    report("onnx_qdq_export_bad_input", good, f"other model: {a.returncode} {a.stderr.strip()[:200]}; darknet package: "
           f"{q.returncode} {q.stderr.strip()[-200:]} / {b and (b.returncode, b.stderr.strip()[:200])}")

def main():
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(f"SKIP onnx: {e} (pip install onnxruntime numpy: scripts/requirements-test.txt)")
        return 0
    if not os.path.isfile(MODEL):
        print(f"SKIP onnx: {MODEL} not found (set YQ_DATA)")
        return 0
    if not os.access(DUMP, os.X_OK):
        print(f"SKIP onnx: {DUMP} not built (make)")
        return 0
    imgs = [os.path.join(DATA, "datasets", "darknet-samples", f) for f in
            ("dog.jpg", "horses.jpg", "person.jpg", "giraffe.jpg", "eagle.jpg", "kite.jpg")]
    val = os.path.join(DATA, "datasets", "coco-mini", "val2017", "images")
    if os.path.isdir(val):
        imgs += [os.path.join(val, f) for f in sorted(os.listdir(val))[:6]]
    imgs = [p for p in imgs if os.path.isfile(p)]
    with tempfile.TemporaryDirectory(prefix="yq_onnx_") as tmp:
        worst, n_dets, bad_raw, bad_dets = parity(MODEL, imgs, tmp, decode, None, np, ort)
    print(f"# {len(imgs)} images: worst max|ours - ort| / max|ort| = {worst:.3g}; {n_dets} detections")
    report("onnx_fp32_vs_onnxruntime", len(imgs) >= 6 and not bad_raw, "; ".join(bad_raw[:4]))
    report("onnx_detections_vs_independent_decode", len(imgs) >= 6 and n_dets > 0 and not bad_dets, "; ".join(bad_dets[:4]))

    yolov5_tests(imgs, np, ort)

    # int8: quantized on four sample images, written as a package (format 5 holds the detect
    # heads), loaded again and run on the CPU reference: the same objects as FP32 in dog.jpg
    with tempfile.TemporaryDirectory(prefix="yq_onnx_q_") as tmp:
        calib = os.path.join(tmp, "calib")
        os.makedirs(calib)
        for f in ("dog.jpg", "horses.jpg", "person.jpg", "eagle.jpg"):
            src = os.path.join(DATA, "datasets", "darknet-samples", f)
            if os.path.isfile(src):
                os.symlink(src, os.path.join(calib, f))
        pkg = os.path.join(tmp, "v8n.yqp")
        r = subprocess.run([YQ, "quantize", MODEL, "--calib", calib, "--no-val", "--layers", "0", "--calib-cache", os.path.join(tmp, "c.h5"),
                            "-o", pkg], capture_output=True, text=True)
        ok = r.returncode == 0 and os.path.isfile(pkg)
        ins = subprocess.run([YQ, "inspect", pkg, "--json", "-"], capture_output=True, text=True) if ok else None
        dog = os.path.join(DATA, "datasets", "darknet-samples", "dog.jpg")
        d8 = subprocess.run([YQ, "detect", pkg, dog], capture_output=True, text=True) if ok else None
        d32 = subprocess.run([YQ, "detect", MODEL, dog], capture_output=True, text=True)
        import json
        heads = [l for l in json.loads(ins.stdout)["layers"] if l["type"] == "detect"] if ins and ins.returncode == 0 else []
        names = lambda out: [l.split()[0] for l in out.splitlines()[1:]]
        n8, n32 = (names(d8.stdout) if d8 else []), names(d32.stdout)
        print(f"# dog.jpg FP32: {n32}; int8 package: {n8}")
        report("onnx_int8_package", ok and len(heads) == 3 and d8.returncode == 0 and n8[:3] == n32[:3] and "dog" in n8,
               f"quantize exit {r.returncode} {r.stderr.strip()[-300:]}; {len(heads)} detect heads; int8 {n8} vs fp32 {n32}")
        if ok:
            qdq_export(pkg, imgs, tmp, np, ort)
        else:
            report("onnx_qdq_export", False, "no package to export")

    # a non-simplified export's Constant nodes (here: Resize's scales as a Constant node instead
    # of an initializer): the same graph, the same output
    try:
        import onnx
        from onnx import helper as oh
        m = onnx.load(MODEL)
        inits = {t.name: t for t in m.graph.initializer}
        moved = 0
        for idx, nd in enumerate(list(m.graph.node)):
            if nd.op_type == "Resize" and len(nd.input) > 2 and nd.input[2] in inits:
                t = inits[nd.input[2]]
                cname = nd.input[2] + "_as_constant"
                m.graph.node.insert(list(m.graph.node).index(nd), oh.make_node("Constant", [], [cname], value=t))
                nd.input[2] = cname
                moved += 1
        with tempfile.TemporaryDirectory(prefix="yq_onnx_c_") as tmp:
            p = os.path.join(tmp, "const.onnx")
            onnx.save(m, p)
            a = subprocess.run([YQ, "inspect", MODEL, "--json", "-"], capture_output=True, text=True)
            b = subprocess.run([YQ, "inspect", p, "--json", "-"], capture_output=True, text=True)
            import json
            # (cfg_line: the node's position in the ONNX graph, moved by the inserted nodes)
            strip = lambda out: [{k: v for k, v in l.items() if k != "cfg_line"} for l in json.loads(out)["layers"]]
            la = strip(a.stdout) if a.returncode == 0 else None
            lb = strip(b.stdout) if b.returncode == 0 else None
            report("onnx_constant_nodes", moved == 2 and la is not None and la == lb,
                   f"{moved} Constant nodes; exit {b.returncode} {b.stderr.strip()[:200]}")
    except ImportError:
        print("SKIP onnx_constant_nodes: no onnx module")

    # bad input: one line naming the file
    with tempfile.TemporaryDirectory(prefix="yq_onnx_bad_") as tmp:
        blob = open(MODEL, "rb").read()
        cases = {"truncated": blob[: len(blob) // 3], "not_onnx": b"\x00\x01not a protobuf at all" * 10}
        try:
            import onnx
            m = onnx.load(MODEL)
            for nd in m.graph.node:
                if nd.op_type == "Resize":
                    nd.op_type = "GridSample"      # an op the importer does not have
                    break
            cases["unknown_op"] = m.SerializeToString()
            m2 = onnx.load(MODEL)
            m2.opset_import[0].version = 7
            cases["old_opset"] = m2.SerializeToString()
        except ImportError:
            pass
        for name, data in cases.items():
            p = os.path.join(tmp, name + ".onnx")
            open(p, "wb").write(data)
            r = subprocess.run([YQ, "inspect", p], capture_output=True, text=True)
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            want = {"unknown_op": "GridSample", "old_opset": "opset 7"}.get(name, p)
            report(f"onnx_bad_{name}", r.returncode == 1 and len(lines) == 1 and p in lines[0] and want in lines[0]
                   and not r.stdout, f"exit {r.returncode}, stderr {r.stderr.strip()[:300]!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
