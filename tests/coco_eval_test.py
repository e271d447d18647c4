#!/usr/bin/env python3
"""datasets/coco_eval against pycocotools on real COCO annotations.

For each annotation file, seeded pseudo-detections (jittered copies of the ground truth with
random scores, duplicates, wrong classes, dropped boxes, random false positives, score ties,
one image with more than 100 detections) are written to a results json; our evaluator
(tests/tools/coco_eval_tool.c, built here against build/libyq.a) and pycocotools' COCOeval
evaluate the same two files, and all 12 stats must agree within 1e-4 (measured: they agree
to the last bit).  YQ_COCO_DETS=results.json adds that file (e.g. a real model's
detections), evaluated against YQ_COCO_DETS_GT (default: the coco-mini val2017 json).

Prints PASS/FAIL/SKIP lines for tests/run.sh.
"""
import contextlib
import io
import json
import os
import random
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("YQ_DATA") or os.path.join(ROOT, "..", "shared")
LIB = os.environ.get("YQ_LIBYQ") or os.path.join(ROOT, "build", "libyq.a")
TOOL = os.path.join(ROOT, "build", "tests", "coco_eval_tool")
TOL = 1e-4
NAMES = ["AP", "AP50", "AP75", "AP_small", "AP_medium", "AP_large",
         "AR1", "AR10", "AR100", "AR_small", "AR_medium", "AR_large"]


def build_tool():
    """Returns None when built, else (status, reason)."""
    if not os.path.exists(LIB):
        return ("SKIP", "%s not built (run make)" % os.path.relpath(LIB, ROOT))
    os.makedirs(os.path.dirname(TOOL), exist_ok=True)
    cmd = ("cc -std=c11 -O2 -Iinclude -I. tests/tools/coco_eval_tool.c %s "
           "$(pkg-config --libs libcjson hdf5-serial) -lopenblas -ljpeg -lpng -lcrypto -lm "
           "-lpthread -lstdc++ -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -o %s"
           % (shlex.quote(LIB), shlex.quote(TOOL)))
    r = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        return ("FAIL", "building coco_eval_tool failed: " + (r.stderr.strip().splitlines() or ["?"])[-1])
    return None


def pseudo_detections(ann_path, seed):
    """Deterministic detections that exercise every branch of the matching."""
    with open(ann_path) as f:
        gt = json.load(f)
    rng = random.Random(seed)
    cats = [c["id"] for c in gt["categories"]]
    size = {im["id"]: (im["width"], im["height"]) for im in gt["images"]}
    dets = []

    def score():
        s = rng.random()
        return round(s, 2) if rng.random() < 0.3 else s   # ties across and within images

    for a in gt["annotations"]:
        if rng.random() < 0.15:
            continue                                       # missed object
        x, y, w, h = a["bbox"]
        for _ in range(2 if rng.random() < 0.1 else 1):    # duplicates are false positives
            j = rng.choice([0.02, 0.1, 0.3])
            bw = max(0.5, w * (1 + rng.gauss(0, j)))
            bh = max(0.5, h * (1 + rng.gauss(0, j)))
            bx = x + rng.gauss(0, j) * w
            by = y + rng.gauss(0, j) * h
            cat = a["category_id"] if rng.random() > 0.05 else rng.choice(cats)
            dets.append({"image_id": a["image_id"], "category_id": cat,
                         "bbox": [bx, by, bw, bh], "score": score()})
    ids = sorted(size)
    for img in ids:
        W, H = size[img]
        for _ in range(rng.randrange(6)):                  # background false positives
            bw = rng.uniform(2, W / 2)
            bh = rng.uniform(2, H / 2)
            dets.append({"image_id": img, "category_id": rng.choice(cats),
                         "bbox": [rng.uniform(0, W - bw), rng.uniform(0, H - bh), bw, bh],
                         "score": score()})
    # one image, one category, more than 100 detections: maxDets truncation per image
    img = ids[len(ids) // 2]
    cat = next((a["category_id"] for a in gt["annotations"] if a["image_id"] == img), cats[0])
    W, H = size[img]
    for _ in range(130):
        bw, bh = rng.uniform(4, W / 3), rng.uniform(4, H / 3)
        dets.append({"image_id": img, "category_id": cat,
                     "bbox": [rng.uniform(0, W - bw), rng.uniform(0, H - bh), bw, bh],
                     "score": score()})
    rng.shuffle(dets)
    return dets


def pycoco_stats(ann_path, res_path):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(ann_path)
        dt = gt.loadRes(res_path)
        ev = COCOeval(gt, dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return [float(v) for v in ev.stats]


def our_stats(ann_path, res_path):
    r = subprocess.run([TOOL, "-x", ann_path, res_path], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip() or "exit status %d" % r.returncode)
    return [float(v) for v in r.stdout.split()]


def compare(name, ann_path, res_path):
    try:
        ours = our_stats(ann_path, res_path)
        theirs = pycoco_stats(ann_path, res_path)
    except Exception as e:                                 # report, never crash the runner
        print("FAIL %s: %s" % (name, str(e).splitlines()[-1] if str(e) else type(e).__name__))
        return
    if len(ours) != 12:
        print("FAIL %s: tool printed %d values" % (name, len(ours)))
        return
    diffs = [abs(a - b) for a, b in zip(ours, theirs)]
    worst = max(range(12), key=lambda i: diffs[i])
    print("note: %s: AP %.4f AP50 %.4f AR100 %.4f, max |diff| vs pycocotools %.3g (%s)"
          % (name, theirs[0], theirs[1], theirs[8], diffs[worst], NAMES[worst]))
    if diffs[worst] > TOL:
        print("FAIL %s: %s ours %.6f pycocotools %.6f" % (name, NAMES[worst], ours[worst], theirs[worst]))
    else:
        print("PASS %s" % name)


def main():
    try:
        import pycocotools.cocoeval  # noqa: F401
    except ImportError:
        print("SKIP coco_eval_vs_pycocotools: pycocotools not importable (pip install -r scripts/requirements-test.txt)")
        return 0
    sets = [
        ("coco_eval_vs_pycocotools[coco-mini-val]", "datasets/coco-mini/annotations/instances_val2017_mini.json"),
        ("coco_eval_vs_pycocotools[coco-mini-train]", "datasets/coco-mini/annotations/instances_train2017_mini.json"),
        ("coco_eval_vs_pycocotools[coco128]", "datasets/coco128/annotations/instances_train2017_coco128.json"),
    ]
    failed = build_tool()
    if failed:
        for name, _ in sets:
            print("%s %s: %s" % (failed[0], name, failed[1]))
        return 0 if failed[0] == "SKIP" else 1
    with tempfile.TemporaryDirectory(prefix="yq_coco_eval_") as tmp:
        for seed, (name, rel) in enumerate(sets, start=1):
            ann = os.path.join(DATA, rel)
            if not os.path.exists(ann):
                print("SKIP %s: %s missing" % (name, ann))
                continue
            res = os.path.join(tmp, "results_%d.json" % seed)
            with open(res, "w") as f:
                json.dump(pseudo_detections(ann, seed), f)
            compare(name, ann, res)
        # Detections from a real shared model, made by `yquant eval --dets`; the stats
        # yquant printed (--json) must agree with pycocotools on the same files too.
        yq = os.path.join(ROOT, "build", "yquant")
        model = os.path.join(DATA, "models", "yolo-fastest-1.1")
        real = [("coco-mini-val", "datasets/coco-mini/val2017/images", sets[0][1]),
                ("coco128", "datasets/coco128/images", sets[2][1])]
        for tag, imgs, rel in real:
            name = "coco_eval_vs_pycocotools[yolo-fastest-1.1 on %s]" % tag
            ann = os.path.join(DATA, rel)
            if not (os.path.exists(yq) and os.path.isdir(model) and os.path.exists(ann)):
                print("SKIP %s: build/yquant, %s or %s missing" % (name, model, ann))
                continue
            res, js = os.path.join(tmp, "real_%s.json" % tag), os.path.join(tmp, "real_%s_stats.json" % tag)
            r = subprocess.run([yq, "eval", model, "--images", os.path.join(DATA, imgs), "--ann", ann,
                                "--dets", res, "--json", js], capture_output=True, text=True)
            if r.returncode != 0:
                print("FAIL %s: yquant eval: %s" % (name, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]))
                continue
            compare(name, ann, res)
            with open(js) as f:
                printed = json.load(f)["stats"]
            theirs = pycoco_stats(ann, res)
            worst = max(abs(printed[n] - t) for n, t in zip(NAMES, theirs))
            print("%s %s[printed stats]%s" % ("PASS" if worst <= TOL else "FAIL", name,
                                              "" if worst <= TOL else ": max |diff| %.3g" % worst))
    dets = os.environ.get("YQ_COCO_DETS")
    if dets:
        ann = os.environ.get("YQ_COCO_DETS_GT") or os.path.join(DATA, sets[0][1])
        compare("coco_eval_vs_pycocotools[YQ_COCO_DETS]", ann, dets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
