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
HEADS = os.path.join(BUILD, "tests", "heads_dump")
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
    average.  Bad input: a model that is not the package's (one byte changed): one line, no output
    file (a package of a Darknet model exports from its own graph: darknet_exports)."""
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

    # bad input: another model than the package's
    other, out = os.path.join(tmp, "other.onnx"), os.path.join(tmp, "bad.qdq.onnx")
    blob = bytearray(open(MODEL, "rb").read())
    blob[-1] ^= 1
    open(other, "wb").write(bytes(blob))
    a = subprocess.run([YQ, "export", pkg, "--model", other, "-o", out], capture_output=True, text=True)
    good = (a.returncode == 1 and len(a.stderr.strip().splitlines()) == 1 and "not the model the package was made from" in a.stderr
            and not os.path.exists(out))
    report("onnx_qdq_export_bad_input", good, f"other model: {a.returncode} {a.stderr.strip()[:200]}")


def heads_of(d, np):
    c, h, w, nh = map(int, open(os.path.join(d, "shape.txt")).read().split())
    x = np.fromfile(os.path.join(d, "input.f32"), dtype=np.float32).reshape(1, c, h, w)
    return x, [np.fromfile(os.path.join(d, f"head{k}.f32"), dtype=np.float32) for k in range(nh)]


def darknet_exports(np, ort):
    """`yquant export` of Darknet models and of a package of one, run by onnxruntime.
    FP32: yolo-fastest-1.1-xl (COCO weights) on two images, and on one image with synthetic
    weights at 320: yolov4 (mish, 3 heads), yolov4-tiny (route groups), yolov7-tiny (maxpools
    of stride 1 and 2), yolo-lite (a region head); each model passes onnx.checker, its outputs
    are its heads under their names with the metadata a decoder needs, and every head's input
    agrees with yquant's FP32 run on the same tensor: max|ours - ort| / max|ort| <= 1e-4.
    Q/DQ: a package of yolo-fastest-1.1-xl (4 calibration images), run by onnxruntime as
    written (graph optimizations off): every int8 tensor (each QuantizeLinear's output) against
    the package's own bytes on the CPU: at least 99% of all the int8 values identical (float
    sums that land on a rounding tie, and ONNX's -128 where yquant stops at -127, differ by one
    and spread), and the heads' mean |ours - ort| / mean |ort| <= 0.05; the JSON table lists
    every QuantizeLinear's input at its scale and every int8 conv's weight scales.
    Bad input: an ONNX model (already one), a cfg without weights, --trt-cache of an equalized
    package: one line, exit 1, no file written."""
    import json
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        print("SKIP darknet_export: no onnx module")
        return
    xl = os.path.join(DATA, "models", "yolo-fastest-1.1-xl")
    cfgs = os.path.join(DATA, "models", "cfg-only")
    samples = os.path.join(DATA, "datasets", "darknet-samples")
    if not os.path.isdir(xl) or not os.access(HEADS, os.X_OK):
        print(f"SKIP darknet_export: {xl} or {HEADS} missing")
        return
    with tempfile.TemporaryDirectory(prefix="yq_dnx_") as tmp:
        cases = [("xl", xl, [], "dog.jpg"), ("xl", xl, [], "person.jpg")]
        for name, extra in (("yolov4", []), ("yolov4-tiny", []), ("yolov7-tiny", [])):
            cases.append((name, os.path.join(cfgs, name + ".cfg"), ["--weights", "synthetic", "--size", "320"], "horses.jpg"))
        lite = os.path.join(DATA, "models", "yolo-lite-coco-trial6")
        if os.path.isdir(lite):
            cases.append(("yolo-lite", lite, [], "eagle.jpg"))
        why, worst, n_heads = [], 0.0, 0
        for k, (name, model, opts, img) in enumerate(cases):
            out, d = os.path.join(tmp, name + ".onnx"), os.path.join(tmp, f"fp{k}")
            os.makedirs(d)
            if not os.path.isfile(out):
                r = subprocess.run([YQ, "export", model, "-o", out] + opts, capture_output=True, text=True)
                if r.returncode or not os.path.isfile(out):
                    why.append(f"{name}: export exit {r.returncode}: {r.stderr.strip()[-200:]}")
                    continue
                m = onnx.load(out)
                onnx.checker.check_model(m)
                meta = {p.key: p.value for p in m.metadata_props}
                heads = json.loads(meta.get("yquant_heads", "[]"))
                if [h["output"] for h in heads] != [o.name for o in m.graph.output] or not heads or \
                        any(len(h["anchors"]) < 2 or h["classes"] != 80 for h in heads):
                    why.append(f"{name}: outputs {[o.name for o in m.graph.output]} vs yquant_heads {meta.get('yquant_heads', '')[:120]}")
            r = subprocess.run([HEADS, model, os.path.join(samples, img), d] + opts, capture_output=True, text=True)
            if r.returncode:
                why.append(f"{name}: heads_dump: {r.stderr.strip()[-200:]}")
                continue
            x, ours = heads_of(d, np)
            theirs = ort.InferenceSession(out, providers=["CPUExecutionProvider"]).run(None, {"images": x})
            if len(theirs) != len(ours):
                why.append(f"{name}: {len(theirs)} outputs, {len(ours)} heads")
                continue
            for a, b in zip(ours, theirs):
                n_heads += 1
                e = float(np.abs(a - b.ravel()).max() / max(np.abs(b).max(), 1e-30))
                worst = max(worst, e)
                if not e <= 1e-4:
                    why.append(f"{name} {img}: max rel diff {e:.3g}")
        print(f"# Darknet FP32 exports: {len(cases)} runs, {n_heads} heads, worst max|ours - ort| / max|ort| = {worst:.3g}")
        report("darknet_export_fp32_vs_onnxruntime", not why and n_heads >= 10, "; ".join(why[:4]))

        # the int8 package
        calib = os.path.join(tmp, "calib")
        os.makedirs(calib)
        for f in ("dog.jpg", "horses.jpg", "person.jpg", "eagle.jpg"):
            os.symlink(os.path.join(samples, f), os.path.join(calib, f))
        pkg, qdq, sj = (os.path.join(tmp, n) for n in ("xl.yqp", "xl.qdq.onnx", "xl.scales.json"))
        q = subprocess.run([YQ, "quantize", xl, "--calib", calib, "--no-val", "--calib-cache", os.path.join(tmp, "c.h5"), "-o", pkg],
                           capture_output=True, text=True)
        r = subprocess.run([YQ, "export", pkg, "-o", qdq, "--json", sj], capture_output=True, text=True) if not q.returncode else q
        if r.returncode or not os.path.isfile(qdq):
            report("darknet_export_qdq", False, f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
            return
        why = []
        m = onnx.load(qdq)
        onnx.checker.check_model(m)
        init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
        scales = json.load(open(sj))
        qs = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
        act = scales["activations"]
        for n in qs:
            a = act.get(n.input[0])
            if a is not None and float(init[n.input[1]]) != np.float32(a["scale"]):
                why.append(f"QuantizeLinear of {n.input[0]}: scale {float(init[n.input[1]])} vs {a}")
        if not act or any(t not in {n.input[0] for n in qs} for t in act):
            why.append(f"{len(act)} int8 tensors in the table, not all quantized in the model")
        for w, v in scales["weights"].items():
            if not np.array_equal(init.get(w + "_scale", np.zeros(0)), np.float32(v["scales"])) or init[w + "_quantized"].dtype != np.int8:
                why.append(f"{w}: not int8 at the table's scales")
                break
        # end to end: the model as written, every QuantizeLinear output an output too (their
        # shapes); layer by layer: every DequantizeLinear of an activation reads a new graph
        # input fed the package's own int8 tensor.  Graph optimizations off in both.
        e2e = onnx.load(qdq)
        for n in qs:
            t = onnx.TensorProto.UINT8 if init[n.input[2]].dtype == np.uint8 else onnx.TensorProto.INT8
            m.graph.output.append(onnx.helper.make_tensor_value_info(n.output[0], t, None))
            e2e.graph.output.append(onnx.helper.make_tensor_value_info(n.output[0], t, None))
        # (a float layer's output read by int8 layers, pair "_i8": fed the package's float tensor
        # quantized as its int8 readers do it, x / scale in float32 rounded half away from zero)
        fed = {}                                   # graph input -> the QuantizeLinear output it stands for
        for n in m.graph.node:
            if n.op_type == "DequantizeLinear" and n.input[0] not in init:
                t = next(o.type.tensor_type.elem_type for o in m.graph.output if o.name == n.input[0])
                fed[n.input[0] + "_feed"] = n.input[0]
                n.input[0] += "_feed"
                m.graph.input.append(onnx.helper.make_tensor_value_info(n.input[0], t, None))
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        layered, whole = (ort.InferenceSession(x.SerializeToString(), so, providers=["CPUExecutionProvider"]) for x in (m, e2e))
        names = [o.name for o in layered.get_outputs()]
        q_in = {n.output[0]: n.input[0] for n in qs}
        scale_of = {n.output[0]: float(init[n.input[1]]) for n in qs}
        same = total = off = 0
        hmax, hmean = [], []
        for k, img in enumerate(("dog.jpg", "giraffe.jpg")):
            d = os.path.join(tmp, f"q{k}")
            os.makedirs(d)
            r = subprocess.run([HEADS, pkg, os.path.join(samples, img), d, "--all"], capture_output=True, text=True)
            if r.returncode:
                why.append(f"heads_dump {img}: {r.stderr.strip()[-200:]}")
                continue
            x, ours = heads_of(d, np)
            layers = dict(l.split() for l in open(os.path.join(d, "layers.txt")))

            def mine(qout):                        # the package's bytes of the tensor a QuantizeLinear makes
                t = q_in[qout]
                lay = "input" if t == "images" else t
                if layers.get(lay) == "f32":       # an "_i8" pair
                    v = np.fromfile(os.path.join(d, lay + ".bin"), dtype=np.float32) / np.float32(scale_of[qout])
                    return np.clip(np.sign(v) * np.floor(np.abs(v) + np.float32(0.5)), -127, 127).astype(np.int8)
                return np.fromfile(os.path.join(d, lay + ".bin"), dtype=np.uint8 if layers.get(lay) == "u8" else np.int8)
            ref = dict(zip(names, whole.run(names, {"images": x})))
            res = dict(zip(names, layered.run(names, {"images": x, **{f: mine(q).reshape(ref[q].shape) for f, q in fed.items()}})))
            for n in qs:
                if n.output[0].endswith("_i8_q"):
                    continue
                a, b = mine(n.output[0]).astype(np.int32), res[n.output[0]].ravel().astype(np.int32)
                if a.size != b.size:
                    why.append(f"{n.input[0]}: {a.size} values, onnxruntime {b.size}")
                    continue
                same += int((a == b).sum())
                off = max(off, int(np.abs(a - b).max()))
                total += a.size
            for k2, a in enumerate(ours):
                b, e = res[names[k2]].ravel(), ref[names[k2]].ravel()
                hmax.append(float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)))
                hmean.append(float(np.abs(a - e).mean() / max(np.abs(e).mean(), 1e-30)))
        frac = same / max(total, 1)
        print(f"# Darknet Q/DQ export: {len(qs)} QuantizeLinear, {len(scales['weights'])} int8 convs.  Layer by layer (each "
              f"layer fed the package's own int8 inputs): {same} of {total} int8 values identical ({100 * frac:.4f}%), the "
              f"others {off} apart; heads max rel diff {max(hmax, default=-1):.3g}.  End to end (the differences compound "
              f"over the layers): heads' mean relative difference {max(hmean, default=-1):.4f}")
        if not (total > 10 ** 6 and frac >= 0.999 and off <= 1 and hmax and max(hmax) <= 1e-4 and max(hmean) <= 0.1):
            why.append(f"agreement: {same} of {total} int8 values ({off} apart), heads {hmax} / {hmean}")
        report("darknet_export_qdq", not why, "; ".join(why[:4]))

        # bad input
        bad = os.path.join(tmp, "bad.onnx")
        tc = os.path.join(tmp, "bad.cache")
        runs = [([YQ, "export", os.path.join(cfgs, "yolov3-tiny.cfg"), "-o", bad], "weights"),
                ([YQ, "export", pkg, "-o", bad, "--trt-cache", tc], "equalize=off")]
        if os.path.isfile(MODEL):
            runs.append(([YQ, "export", MODEL, "-o", bad], "already an ONNX model"))
        msgs = []
        for cmd, want in runs:
            r = subprocess.run(cmd, capture_output=True, text=True)
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            if r.returncode != 1 or len(lines) != 1 or want not in lines[0] or os.path.exists(bad) or os.path.exists(tc):
                msgs.append(f"{cmd[2:]}: exit {r.returncode}, {r.stderr.strip()[:200]!r}")
        report("darknet_export_bad_input", not msgs, "; ".join(msgs))


def main():
    try:
        import numpy as np
        import onnxruntime as ort
    except ImportError as e:
        print(f"SKIP onnx: {e} (pip install onnxruntime numpy: scripts/requirements-test.txt)")
        return 0
    darknet_exports(np, ort)
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
