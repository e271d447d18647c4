#!/usr/bin/env python3
"""yquant's int8 against ONNX Runtime's own quantizer, side by side, on an Ultralytics detect
export (issue 17, deliverable 4).

Every engine sees the same network inputs: yquant's preprocessing (yq_model_preprocess, through
libyq.so with ctypes) of the calibration and the labelled images.  ONNX Runtime's quantize_static
(QDQ, per-channel weights, its MinMax, Entropy and Percentile calibrators) quantizes the model on
the calibration tensors; onnxruntime runs FP32 and each quantized model on the labelled tensors;
the export's output0 is decoded here (the same score threshold, per-class NMS and detections per
image as `yquant eval`) and scored with pycocotools on the union of the labelled sets.  yquant's
rows come from `yquant quantize` on the same images (its own decode and COCO evaluation, equal to
pycocotools': tests/coco_eval_test.py): FP32, the default package, every layer int8.  The ORT
FP32 row against yquant's FP32 row is the control: it says how far this script's decode and
scoring are from yquant's.

ONNX Runtime runs in two configurations: every node quantized (quantize_static as called
without more: its output0 then carries the boxes, 0..640, and the class scores, 0..1, in one
8-bit scale), and what its users are told to do for such exports, the detect head's output
convs and the box decode after them excluded (nodes_to_exclude), which is also what yquant's
default keeps in float (head = float, the decode in its post-processing).

quantize_static's Entropy calibrator histograms each tensor into 128 bins and searches
thresholds over 128 quantized bins (its defaults, which quantize_static's extra_options cannot
change in onnxruntime 1.32): one candidate, the whole range, so its scales are MinMax's.  The
row "Entropy, 2048 bins" gives it TensorRT's setting (2048 bins, 128 quantized) by passing
num_bins to ORT's own create_calibrator.

    python3 bench/onnx/ort_vs_yquant.py [--model M.onnx] [--calib DIR] [--out DIR]
        [--val DIR --ann F]...   (default: the shared model, calibration images and the three
                                  labelled sets, 287 images)

Python is for benchmarks only: nothing here is in the product's path."""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
BUILD = os.path.join(ROOT, os.environ.get("YQ_BUILD") or "build")

# darknet's coco.names order -> COCO category id (datasets/labels.c's table)
COCO_IDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 27, 28, 31, 32,
            33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60,
            61, 62, 63, 64, 65, 67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90]
CONF, NMS, MAX_DETS = 0.005, 0.45, 100      # runtime/evaluate.c's yq_eval_defaults


# ---- yquant's preprocessing through the public C API --------------------------------------

class YqError(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 512)]


class YqImage(ctypes.Structure):
    _fields_ = [("w", ctypes.c_int), ("h", ctypes.c_int), ("c", ctypes.c_int), ("data", ctypes.POINTER(ctypes.c_float))]


class Preprocess:
    """yq_model_open + yq_image_load + yq_model_preprocess (the model's own preprocessing)."""

    def __init__(self, model):
        import glob
        libs = sorted(glob.glob(os.path.join(BUILD, "libyq.so.*")))
        if not libs:
            sys.exit("ort_vs_yquant: no %s/libyq.so.* (make all)" % BUILD)
        self.lib = ctypes.CDLL(libs[-1])
        self.err = YqError()
        self.m = ctypes.c_void_p()
        if self.lib.yq_model_open(model.encode(), ctypes.byref(self.m), ctypes.byref(self.err)):
            sys.exit("ort_vs_yquant: %s" % self.err.msg.decode())
        c, h, w = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self.lib.yq_model_input(self.m, ctypes.byref(c), ctypes.byref(h), ctypes.byref(w))
        self.chw = (c.value, h.value, w.value)

    def __call__(self, path):
        import numpy as np
        im = YqImage()
        if self.lib.yq_image_load(path.encode(), ctypes.byref(im), ctypes.byref(self.err)):
            raise RuntimeError(self.err.msg.decode())
        x = np.zeros(self.chw, np.float32)
        st = self.lib.yq_model_preprocess(self.m, ctypes.byref(im), -1, x.ctypes.data_as(ctypes.c_void_p),
                                          ctypes.byref(self.err))
        w, h = im.w, im.h
        self.lib.yq_image_free(ctypes.byref(im))
        if st:
            raise RuntimeError(self.err.msg.decode())
        return x, w, h


# ---- decode, NMS, COCO --------------------------------------------------------------------

def decode(out, iw, ih, netw, neth):
    """output0 ((4 + classes) x N) -> [(cls, score, x, y, w, h)] in image pixels, best first:
    scores above CONF, per-class greedy NMS at IoU NMS, at most MAX_DETS; the letterbox undone
    as Ultralytics' letterbox places the picture (tests/onnx_test.py's decode, vectorised)."""
    import numpy as np
    boxes, scores = out[:4].T.astype(np.float64), out[4:].T
    ii, jj = np.nonzero(scores > CONF)
    if not len(ii):
        return []
    sc = scores[ii, jj].astype(np.float64)
    cx, cy, bw, bh = boxes[ii, 0] / netw, boxes[ii, 1] / neth, boxes[ii, 2] / netw, boxes[ii, 3] / neth
    r = min(np.float32(netw) / np.float32(iw), np.float32(neth) / np.float32(ih))   # Ultralytics' letterbox
    nw = min(max(int(np.rint(np.float32(iw) * r)), 1), netw)
    nh = min(max(int(np.rint(np.float32(ih) * r)), 1), neth)
    cx = (cx - (netw - nw) // 2 / netw) / (nw / netw)
    cy = (cy - (neth - nh) // 2 / neth) / (nh / neth)
    bw, bh = bw * netw / nw, bh * neth / nh
    x0, y0, x1, y1 = cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2
    keep = []
    for c in np.unique(jj):
        idx = np.nonzero(jj == c)[0]
        idx = idx[np.argsort(-sc[idx], kind="stable")]
        alive = np.ones(len(idx), bool)
        for a in range(len(idx)):
            if not alive[a]:
                continue
            i = idx[a]
            keep.append(i)
            rest = idx[a + 1:][alive[a + 1:]]
            if not len(rest):
                break
            ox = np.minimum(x1[i], x1[rest]) - np.maximum(x0[i], x0[rest])
            oy = np.minimum(y1[i], y1[rest]) - np.maximum(y0[i], y0[rest])
            inter = np.maximum(ox, 0) * np.maximum(oy, 0)
            union = bw[i] * bh[i] + bw[rest] * bh[rest] - inter
            iou = np.where(union > 0, inter / np.where(union > 0, union, 1), 0)
            sup = rest[iou > NMS]
            alive[np.isin(idx, sup)] = False
    keep.sort(key=lambda i: -sc[i])
    dets = []
    for i in keep[:MAX_DETS]:
        a, b = max(x0[i] * iw, 0), max(y0[i] * ih, 0)
        c, d = min(x1[i] * iw, iw), min(y1[i] * ih, ih)
        dets.append((int(jj[i]), float(sc[i]), a, b, c - a, d - b))
    return dets


def load_sets(sets):
    """The labelled sets as one COCO ground truth (images renumbered 1..n in order) and the
    image paths in that order."""
    gt = {"images": [], "annotations": [], "categories": [{"id": i} for i in COCO_IDS]}
    paths = []
    for images, ann in sets:
        j = json.load(open(ann))
        names = set(os.listdir(images))
        remap = {}
        for im in j["images"]:
            if im["file_name"] not in names:
                continue
            remap[im["id"]] = len(gt["images"]) + 1
            gt["images"].append({"id": remap[im["id"]], "width": im["width"], "height": im["height"],
                                 "file_name": im["file_name"]})
            paths.append(os.path.join(images, im["file_name"]))
        for a in j["annotations"]:
            if a["image_id"] in remap:
                b = dict(a)
                b["image_id"] = remap[a["image_id"]]
                b["id"] = len(gt["annotations"]) + 1
                gt["annotations"].append(b)
    return gt, paths


def coco_map(gt, results):
    """mAP@[.5:.95], mAP@.5 by pycocotools."""
    import contextlib
    import io
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        g = COCO()
        g.dataset = gt
        g.createIndex()
        if not results:
            return 0.0, 0.0
        d = g.loadRes(results)
        e = COCOeval(g, d, "bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    return e.stats[0], e.stats[1]


def head_nodes(model_path):
    """The export's detect head after its last hidden convs: the output convs of the box and
    class branches (cv2.k.2, cv3.k.2) and every decode node (DFL, concat, split, sigmoid, the
    anchor arithmetic): the nodes of the last module that are not in its cv*.k.0 / cv*.k.1."""
    import re
    import onnx
    m = onnx.load(model_path)
    mods = [int(x.group(1)) for n in m.graph.node for x in [re.match(r"/model\.(\d+)/", n.name)] if x]
    last = "/model.%d/" % max(mods)
    return [n.name for n in m.graph.node if n.name.startswith(last) and not re.search(r"/cv[23]\.\d+\.[01]/", n.name)]


def evaluate(model_path, inputs, sizes, gt, netwh):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    s = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    res, t = [], 0.0
    for k, x in enumerate(inputs):
        t0 = time.perf_counter()
        out = s.run(None, {name: x[None]})[0][0]
        t += time.perf_counter() - t0
        for c, sc, a, b, w, h in decode(out, sizes[k][0], sizes[k][1], *netwh):
            res.append({"image_id": k + 1, "category_id": COCO_IDS[c], "bbox": [a, b, w, h], "score": sc})
    m, m50 = coco_map(gt, res)
    evaluate.last = res
    return m, m50, 1e3 * t / max(len(inputs), 1)


def agreement(a, b, min_score=0.25, min_iou=0.9):
    """Detections a against b (COCO results, the same image ids): of a's detections scoring at
    least min_score, how many b has (same image and class, IoU >= min_iou, greedy by score),
    and the mean |score difference| of those pairs."""
    def iou(p, q):
        ox = min(p[0] + p[2], q[0] + q[2]) - max(p[0], q[0])
        oy = min(p[1] + p[3], q[1] + q[3]) - max(p[1], q[1])
        inter = max(ox, 0) * max(oy, 0)
        u = p[2] * p[3] + q[2] * q[3] - inter
        return inter / u if u > 0 else 0
    byimg = {}
    for d in b:
        byimg.setdefault((d["image_id"], d["category_id"]), []).append(d)
    n = hit = 0
    diff = 0.0
    used = set()
    for d in sorted(a, key=lambda d: -d["score"]):
        if d["score"] < min_score:
            continue
        n += 1
        best, bi = None, 0.0
        for e in byimg.get((d["image_id"], d["category_id"]), []):
            v = iou(d["bbox"], e["bbox"])
            if id(e) not in used and v >= min_iou and v > bi:
                best, bi = e, v
        if best is not None:
            used.add(id(best))
            hit += 1
            diff += abs(best["score"] - d["score"])
    return n, hit, diff / max(hit, 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.path.join(DATA, "models", "onnx", "yolov8n-640", "yolov8n.onnx"))
    ap.add_argument("--calib", default=os.path.join(DATA, "datasets", "coco-mini", "val2017_unlabelled", "images"))
    ap.add_argument("--val", action="append", default=[])
    ap.add_argument("--ann", action="append", default=[])
    ap.add_argument("--out", default="ort_vs_yquant")
    ap.add_argument("--calibrators", default="MinMax,Entropy,Percentile",
                    help="ONNX Runtime's calibrators to run ('none': only the FP32 control and yquant's rows)")
    a = ap.parse_args()
    if len(a.val) != len(a.ann):
        sys.exit("ort_vs_yquant: one --ann per --val")
    if not a.val:
        d = os.path.join(DATA, "datasets")
        a.val = [d + "/coco-mini/val2017/images", d + "/coco-mini/train2017/images", d + "/coco128/images"]
        a.ann = [d + "/coco-mini/annotations/instances_val2017_mini.json",
                 d + "/coco-mini/annotations/instances_train2017_mini.json",
                 d + "/coco128/annotations/instances_train2017_coco128.json"]
    import numpy as np
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process
    os.makedirs(a.out, exist_ok=True)
    pre = Preprocess(a.model)
    netwh = (pre.chw[2], pre.chw[1])
    gt, paths = load_sets(list(zip(a.val, a.ann)))
    cal = sorted(os.path.join(a.calib, f) for f in os.listdir(a.calib) if f.lower().endswith((".jpg", ".jpeg", ".png")))
    print("ort_vs_yquant: %s, %d calibration images, %d labelled images; onnxruntime %s" %
          (a.model, len(cal), len(paths), ort.__version__), flush=True)
    cal_x = [pre(p)[0] for p in cal]
    val = [pre(p) for p in paths]
    inputs, sizes = [v[0] for v in val], [(v[1], v[2]) for v in val]
    name = ort.InferenceSession(a.model, providers=["CPUExecutionProvider"]).get_inputs()[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(cal_x)

        def get_next(self):
            x = next(self.it, None)
            return None if x is None else {name: x[None]}

    rows = []
    m, m50, ms = evaluate(a.model, inputs, sizes, gt, netwh)
    rows.append(("ORT FP32 (this script's decode: the control)", m, m50, ms, 0.0))
    print("  %-52s mAP %.2f  mAP50 %.2f  %.1f ms/img" % (rows[-1][0], 100 * m, 100 * m50, ms), flush=True)
    prep = os.path.join(a.out, "model.prep.onnx")
    quant_pre_process(a.model, prep)
    head = head_nodes(prep)
    cms = [] if a.calibrators == "none" else a.calibrators.split(",")
    runs = ([("MinMax", [], "every node", 0)] if cms else []) + [(cm, head, "head excluded", 0) for cm in cms]
    if "Entropy" in cms:
        runs.append(("Entropy", head, "head excluded, 2048 bins", 2048))
    ortq = sys.modules["onnxruntime.quantization.quantize"]   # (the package's name 'quantize' is a function)
    create = ortq.create_calibrator
    for cm, excl, what, bins in runs:
        q = os.path.join(a.out, "model.ort-%s%s-%s.qdq.onnx" % (cm.lower(), bins or "", "all" if not excl else "nohead"))

        def create_binned(*args, **kw):      # (the calibrator quantize_static makes, with num_bins)
            kw["extra_options"] = dict(kw.get("extra_options") or {}, num_bins=bins)
            return create(*args, **kw)
        ortq.create_calibrator = create_binned if bins else create
        t0 = time.time()
        quantize_static(prep, q, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=getattr(CalibrationMethod, cm), nodes_to_exclude=excl)
        ortq.create_calibrator = create
        qs = time.time() - t0
        m, m50, ms = evaluate(q, inputs, sizes, gt, netwh)
        rows.append(("ORT QDQ per-channel %s, %s" % (cm, what), m, m50, ms, qs))
        print("  %-52s mAP %.2f  mAP50 %.2f  %.1f ms/img  (quantized in %.0f s)" % (rows[-1][0], 100 * m, 100 * m50, ms, qs),
              flush=True)
    # yquant on the same images (its own preprocessing is what the tensors above came from)
    js, pkg = os.path.join(a.out, "yquant.json"), os.path.join(a.out, "yquant-int8.yqp")
    cmd = [os.path.join(BUILD, "yquant"), "quantize", a.model, "--calib", a.calib, "--target", "cpu", "--no-tune",
           "--bootstrap", "0", "--layers", "0", "-o", pkg, "--json", js]
    for v, n in zip(a.val, a.ann):
        cmd += ["--val", v, "--ann", n]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit("ort_vs_yquant: %s\n%s" % (" ".join(cmd), r.stderr[-2000:]))
    yq = {x["name"]: x for x in json.load(open(js))["rows"]}
    label = {"fp32": "yquant FP32 (CPU)", "int8": "yquant int8, default qconfig (the package)",
             "int8_all": "yquant int8, every layer int8"}
    for k in ("fp32", "int8", "int8_all"):
        if k in yq:
            x = yq[k]
            rows.append((label[k], x["map"], x["map50"], x.get("cpu_ms_per_image", float("nan")), 0.0))
    # the package exported as a Q/DQ model (yquant export) and run by ONNX Runtime: its mAP, and
    # its detections against the package's own on the CPU reference (yquant eval --dets)
    qdq = os.path.join(a.out, "yquant-int8.qdq.onnx")
    r = subprocess.run([os.path.join(BUILD, "yquant"), "export", pkg, "-o", qdq], capture_output=True, text=True)
    if r.returncode:
        sys.exit("ort_vs_yquant: yquant export: %s" % r.stderr.strip())
    m, m50, ms = evaluate(qdq, inputs, sizes, gt, netwh)
    ort_dets = evaluate.last
    rows.append(("yquant package, exported Q/DQ, run by ORT", m, m50, ms, 0.0))
    ours, base = [], 0
    for k, (v, n) in enumerate(zip(a.val, a.ann)):
        dj = os.path.join(a.out, "yquant-int8-dets-%d.json" % k)
        r = subprocess.run([os.path.join(BUILD, "yquant"), "eval", pkg, "--images", v, "--ann", n, "--dets", dj],
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit("ort_vs_yquant: yquant eval: %s" % r.stderr.strip())
        ids = {im["id"]: im["file_name"] for im in json.load(open(n))["images"]}
        local = {os.path.basename(p): i + 1 for i, p in enumerate(paths)
                 if os.path.dirname(p) == v.rstrip("/")}
        for d in json.load(open(dj)):
            if ids.get(d["image_id"]) in local:
                ours.append(dict(d, image_id=local[ids[d["image_id"]]]))
    na, ha, da = agreement(ours, ort_dets)
    nb, hb, db = agreement(ort_dets, ours)
    agree = ("detections scoring >= 0.25: %d of yquant's %d (%.1f%%) found by ORT on the Q/DQ model (same class, IoU >= 0.9, "
             "mean |score difference| %.3f); %d of ORT's %d (%.1f%%) found by yquant (%.3f)" %
             (ha, na, 100.0 * ha / max(na, 1), da, hb, nb, 100.0 * hb / max(nb, 1), db))
    fp = [r for r in rows if r[0].startswith("yquant FP32")][0][1]
    print("\n%-56s %8s %8s %9s %10s" % ("", "mAP", "mAP50", "drop", "ms/img"))
    for n, m, m50, ms, _ in rows:
        print("%-56s %8.2f %8.2f %9.2f %10.1f" % (n, 100 * m, 100 * m50, 100 * (fp - m), ms))
    print("(drop: against yquant's FP32; ms/img: ORT int8 on this CPU, yquant's the CPU int8 reference engine, "
          "a correctness engine, not a fast one; yquant's quantize took %.0f s with its evaluations)" % (time.time() - t0))
    print("export agreement: " + agree)
    json.dump({"model": a.model, "images": len(paths), "export_agreement": agree, "calibration_images": len(cal), "onnxruntime": ort.__version__,
               "rows": [{"name": n, "map": m, "map50": m50, "ms_per_image": ms, "quantize_s": qs}
                        for n, m, m50, ms, qs in rows]}, open(os.path.join(a.out, "table.json"), "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
