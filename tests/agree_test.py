#!/usr/bin/env python3
"""Issue 14's agreement: the same package on the CPU int8 reference and on the GPU gives the
same detections (tests/tools/compare_dets.py's bar: 99.5% of detections the same class with
box within 0.5 px and score within 1e-3, mAP@[.5:.95] within 0.05 points).

  - always: the comparer itself on made-up detections (identical sets match; a box 0.6 px
    off, a score 2e-3 off or another class does not; each detection matches once);
  - with a CUDA device: every shared model with weights, four packages each (default,
    head = int8, skip_layers 5,9, every layer int8), quantized here without validation,
    evaluated with `yquant eval --device cpu` and `--device cuda` on coco-mini val2017;
    a PASS or FAIL line per package.  Without a device those are one SKIP line.

Prints PASS/FAIL/SKIP lines (counted by tests/run.sh); exits 0 if none failed.  YQ_BIN
overrides the program (default build/yquant; it may be a command with arguments, such as
"build/gpu/yqgpu yquant"); YQ_DATA the data folder (default ../shared)."""
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import compare_dets  # noqa: E402

YQ = shlex.split(os.environ.get("YQ_BIN") or os.path.join(ROOT, "build", "yquant"))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
MODELS = ["yolo-fastest-1.1-xl", "yolo-fastest-1.1", "yolo-fastest-1.0", "yolo-fastest-xl-1.0", "yolo-lite-coco-trial6"]
VARIANTS = {"default": [], "head8": ["--set", "head=int8"], "skip": ["--skip-layers", "5,9"],
            "int8": ["--set", "keep_float=0", "--set", "head=int8"]}
failed = 0


def report(name, ok, why=""):
    global failed
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}")
    failed += not ok


def write(path, rows):
    with open(path, "w") as f:
        json.dump([{"image_id": i, "category_id": c, "bbox": b, "score": s} for i, c, b, s in rows], f)


def t_comparer(tmp):
    base = [(1, 17, [10.0, 20.0, 30.0, 40.0], 0.9), (1, 17, [11.0, 21.0, 30.0, 40.0], 0.8),
            (2, 3, [5.0, 5.0, 50.0, 60.0], 0.5)]
    a = os.path.join(tmp, "a.json")
    write(a, base)
    cases = [
        ("identical", base, 3),
        ("box 0.4 px off", [(1, 17, [10.4, 20.0, 30.0, 40.0], 0.9)] + base[1:], 3),
        ("box 0.6 px off", [(1, 17, [10.6, 20.0, 30.0, 40.0], 0.9)] + base[1:], 2),
        ("score 2e-3 off", base[:2] + [(2, 3, [5.0, 5.0, 50.0, 60.0], 0.502)], 2),
        ("another class", base[:2] + [(2, 4, [5.0, 5.0, 50.0, 60.0], 0.5)], 2),
        ("one detection fewer", base[:2], 2),
        ("a twin matches once", base + [(2, 3, [5.0, 5.0, 50.0, 60.0], 0.5)], 3),
    ]
    ok, why = True, []
    for label, rows, want in cases:
        b = os.path.join(tmp, "b.json")
        write(b, rows)
        na, nb, m, _, _ = compare_dets.compare(a, b, 0.5, 1e-3)
        if m != want or na != 3 or nb != len(rows):
            ok = False
            why.append(f"{label}: {m} matched of {na}/{nb}, want {want}")
    report("agree_comparer", ok, "; ".join(why))


def has_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    r = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return r.returncode == 0 and "GPU" in r.stdout


def t_gpu_agreement(tmp):
    sets = os.path.join(DATA, "datasets", "coco-mini")
    images = os.path.join(sets, "val2017", "images")
    anns = [f for f in os.listdir(os.path.join(sets, "annotations"))] if os.path.isdir(os.path.join(sets, "annotations")) else []
    ann = next((os.path.join(sets, "annotations", f) for f in anns if "val2017" in f and f.endswith(".json")), None)
    calib = os.path.join(sets, "val2017_unlabelled", "images")
    if not has_gpu():
        print("SKIP agree_gpu: no CUDA device (the agreement of every shared model's packages runs on a GPU)")
        return
    if not (os.path.isdir(images) and ann and os.path.isdir(calib)):
        print(f"SKIP agree_gpu: coco-mini val2017 images, annotations or calibration images not under {sets}")
        return
    for m in MODELS:
        model = os.path.join(DATA, "models", m)
        if not os.path.isdir(model):
            print(f"SKIP agree_{m}: {model} not found")
            continue
        for v, extra in VARIANTS.items():
            name = f"agree_{m}_{v}"
            pkg = os.path.join(tmp, f"{m}-{v}.yqp")
            r = subprocess.run(YQ + ["quantize", model, "--calib", calib, "--no-val", "--layers", "0", "--no-tune",
                                     "-o", pkg] + extra, capture_output=True, text=True)
            if r.returncode:
                report(name, False, "quantize: " + r.stderr.strip()[-300:])
                continue
            dets = {}
            for dev in ("cpu", "cuda"):
                d = os.path.join(tmp, f"{m}-{v}.{dev}.json")
                r = subprocess.run(YQ + ["eval", pkg, "--images", images, "--ann", ann, "--device", dev, "--dets", d,
                                         "--json", d[:-5] + ".stats.json"], capture_output=True, text=True)
                if r.returncode:
                    report(name, False, f"eval --device {dev}: " + r.stderr.strip()[-300:])
                    break
                dets[dev] = d
            if len(dets) < 2:
                continue
            na, nb, matched, wb, ws = compare_dets.compare(dets["cpu"], dets["cuda"], 0.5, 1e-3)
            share = 100.0 * matched / max(na, nb, 1)
            ma, mb = compare_dets.stats_of(dets["cpu"]), compare_dets.stats_of(dets["cuda"])
            dmap = abs(ma - mb) * 100 if ma is not None and mb is not None else 0.0
            report(name, share >= 99.5 and dmap <= 0.05,
                   f"{share:.2f}% of {max(na, nb)} detections identical (bar 99.5%), mAP {100 * ma:.2f} cpu, "
                   f"{100 * mb:.2f} cuda ({dmap:.3f} points apart, bar 0.05)")


def main():
    tmp = tempfile.mkdtemp(prefix="yq_agree_")
    try:
        t_comparer(tmp)
        t_gpu_agreement(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
