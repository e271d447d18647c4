#!/usr/bin/env python3
"""The command line's conventions, on every command (issue 18):
  - `yquant CMD --help` exits 0 and prints the command's usage; `yquant --help` names --version;
  - a bad number is one line naming the option and the range, exit 2, nothing done
    (`--conf abc`, `--conf 0.5x`, a count of 0 or -1 ...);
  - `--opt=value` is `--opt value` (the same detections either way), options before, between and
    after the operands;
  - an unknown option (long, with a value, short, an abbreviation of a real one), a missing
    value, a flag given a value (`--letterbox=1`): one line naming it, exit 2, on every command;
  - `detect --json -` writes the JSON alone on standard output, with each image's file_name;
  - an annotation file listing more images than the folder holds: those there are evaluated,
    and a note says how many;
  - a model of its own classes (a .names) on an annotation file of its own category ids and
    names: eval scores each detection under its class's category, quantize validates on it;
  - quantize without a validation set says so in one warning line, and `inspect` shows the
    package as not validated.
Prints PASS/FAIL/SKIP lines (counted by tests/run.sh); exits 0 if none failed."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
YQ = os.path.join(ROOT, os.environ.get("YQ_BUILD") or "build", "yquant")
failed = 0


def report(name, ok, why=""):
    global failed
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}")
    failed += not ok


def run(*args):
    return subprocess.run([YQ, *args], capture_output=True, text=True, timeout=300)



def jpeg_size(path):
    """(width, height) from a JPEG's SOF marker."""
    import struct
    b = open(path, "rb").read()
    i = 2
    while i < len(b):
        if b[i] != 0xFF:
            i += 1
            continue
        m = b[i + 1]
        if m in (0xC0, 0xC1, 0xC2):
            h, w = struct.unpack(">HH", b[i + 5:i + 9])
            return w, h
        i += 2 + struct.unpack(">H", b[i + 2:i + 4])[0]
    raise ValueError(path)


def own_classes(tmp, run_):
    """A model of its own three classes (yolov3-tiny's cfg with 3 classes, synthetic weights, a
    .names beside it) on an annotation file of its own ids and names (generated here): eval
    scores every detection under the category its class's name has in the file (checked
    against `detect`'s own detections of the same images), and quantize validates on it."""
    import json
    import re
    src = os.path.join(DATA, "models", "cfg-only", "yolov3-tiny.cfg")
    mdir = os.path.join(tmp, "helmet")
    os.makedirs(mdir)
    cfg = open(src).read().replace("classes=80", "classes=3")
    cfg = re.sub(r"filters=255", "filters=24", cfg)
    open(os.path.join(mdir, "helmet.cfg"), "w").write(cfg)
    names = ["person", "hard hat", "head"]
    open(os.path.join(mdir, "helmet.names"), "w").write("\n".join(names) + "\n")
    imgs = os.path.join(tmp, "helmet_images")
    os.makedirs(imgs)
    gt = {"images": [], "annotations": [],
          "categories": [{"id": 13, "name": "Hard_Hat"}, {"id": 11, "name": "head"}, {"id": 12, "name": "Person"}]}
    for k, f in enumerate(("dog.jpg", "horses.jpg", "person.jpg")):
        p = os.path.join(DATA, "datasets", "darknet-samples", f)
        os.symlink(p, os.path.join(imgs, f))
        w, h = jpeg_size(p)
        gt["images"].append({"id": 100 + k, "file_name": f, "width": w, "height": h})
        for j, cat in enumerate((11, 12, 13)):
            gt["annotations"].append({"id": 10 * k + j + 1, "image_id": 100 + k, "category_id": cat,
                                      "bbox": [w * 0.1 * (j + 1), h * 0.2, w * 0.25, h * 0.3]})
    ann = os.path.join(tmp, "helmet.json")
    json.dump(gt, open(ann, "w"))
    by_name = {"person": 12, "hard hat": 13, "head": 11}
    m = [mdir, "--weights", "synthetic", "--size", "160"]
    dj, ej = os.path.join(tmp, "helmet_detect.json"), os.path.join(tmp, "helmet_dets.json")
    d = run_("detect", *m, imgs, "--conf", "0.05", "--json", dj)
    e = run_("eval", *m, "--images", imgs, "--ann", ann, "--conf", "0.05", "--dets", ej)
    why = []
    if d.returncode or e.returncode:
        why.append(f"detect {d.returncode} {d.stderr[-200:]}; eval {e.returncode} {e.stderr[-200:]}")
    else:
        mine = json.load(open(dj))      # COCO's table: class k is category coco_ids[k] (k + 1 for k < 11)
        theirs = json.load(open(ej))
        ids = {im["file_name"]: im["id"] for im in gt["images"]}
        # the same detection (image, score, box; printed at other precisions): the category its
        # class's name has in the file, for one of them where two classes tie
        hit = 0
        for x in theirs:
            cands = [by_name[names[y["category_id"] - 1]] for y in mine
                     if ids[y["file_name"]] == x["image_id"] and abs(y["score"] - x["score"]) < 1e-6
                     and max(abs(u - v) for u, v in zip(y["bbox"], x["bbox"])) < 1e-3]
            if cands:
                hit += 1
                if x["category_id"] not in cands:
                    why.append(f"image {x['image_id']}: category {x['category_id']}, its class's name says {cands}")
                    break
        if not theirs or hit < len(theirs) or {x["category_id"] for x in theirs} - {11, 12, 13}:
            why.append(f"{len(theirs)} eval detections, {hit} matched to detect's, categories "
                       f"{sorted({x['category_id'] for x in theirs})}")
    q = run_("quantize", *m, "--calib", imgs, "--val", imgs, "--ann", ann, "--layers", "0", "--bootstrap", "0",
             "--calib-cache", os.path.join(tmp, "h.h5"), "-o", os.path.join(tmp, "helmet.yqp"))
    if q.returncode or "FP32" not in q.stderr + q.stdout:
        why.append(f"quantize exit {q.returncode}: {q.stderr[-300:]}")
    report("cli_own_classes", not why, "; ".join(why[:3]))

def main():
    if not os.access(YQ, os.X_OK):
        print(f"SKIP cli_conventions: {YQ} not built")
        return 0
    cmds = ["inspect", "detect", "eval", "quantize", "bench", "sweep", "sensitivity", "tune", "export"]
    bad = []
    for c in cmds:
        r = run(c, "--help")
        if r.returncode != 0 or f"usage: yquant {c}" not in r.stdout:
            bad.append(f"{c} --help: exit {r.returncode}, {r.stdout[:80]!r}")
    r = run("--help")
    if r.returncode != 0 or any(k not in r.stdout for k in ("--version", "--opt=VALUE", "--quiet", "--verbose", "--output")):
        bad.append("yquant --help does not name --version, --opt=VALUE, -q/--quiet, -v/--verbose and -o/--output")
    # the same default device, said the same way, wherever a command runs a model on one
    for c in ("detect", "eval"):
        h = run(c, "--help").stdout
        if "default the GPU (cuda) when one is usable and the model is int8, else cpu" not in " ".join(h.split()):
            bad.append(f"{c} --help does not give the common --device default")
    # -o/--output for the main output of the commands that write one
    for c, opt in (("detect", "-o, --output DIR"), ("quantize", "-o, --output FILE"), ("sweep", "-o, --output DIR"),
                   ("sensitivity", "-o, --output DIR"), ("export", "-o, --output FILE")):
        if opt not in run(c, "--help").stdout:
            bad.append(f"{c} --help does not name {opt}")
    v = run("--version")
    if v.returncode != 0 or not v.stdout.startswith("yquant "):
        bad.append(f"--version: {v.returncode} {v.stdout!r}")
    report("cli_help_every_command", not bad, "; ".join(bad))

    model = os.path.join(DATA, "models", "cfg-only", "yolov3-tiny.cfg")
    dog = os.path.join(DATA, "datasets", "darknet-samples", "dog.jpg")
    if not (os.path.isfile(model) and os.path.isfile(dog)):
        print(f"SKIP cli_bad_numbers: {model} or {dog} not found (set YQ_DATA)")
        return 1 if failed else 0
    m = [model, "--weights", "synthetic", "--size", "160"]
    cases = [
        (["detect", *m, dog, "--conf", "abc"], "--conf", "[0, 1]"),
        (["detect", *m, dog, "--conf", "0.5x"], "--conf", "[0, 1]"),
        (["detect", *m, dog, "--conf=1.5"], "--conf", "[0, 1]"),
        (["detect", *m, dog, "--nms", ""], "--nms", "[0, 1]"),
        (["detect", *m, dog, "--max-dets", "0"], "--max-dets", "[1, 100000]"),
        (["eval", *m, "--images", "x", "--ann", "y", "--batch", "0"], "--batch", "[1, 4096]"),
        (["eval", *m, "--images", "x", "--ann", "y", "--conf", "nan"], "--conf", "[0, 1]"),
        (["eval", *m, "--images", "x", "--ann", "y", "--layers", "-1"], "--layers", "[0, 100000]"),
        (["quantize", *m, "--calib", "x", "--bootstrap", "many"], "--bootstrap", "[0, 1000000]"),
        (["quantize", *m, "--calib", "x", "--max-float", "1.5"], "--max-float", "[0, 100000]"),
        (["quantize", *m, "--calib", "x", "--layers", "ten"], "--layers", "[0, 100000]"),
        (["sensitivity", *m, "--sqnr-images", "0"], "--sqnr-images", "[1, 100000]"),
        (["sweep", *m, "--sqnr-images", "x"], "--sqnr-images", "[1, 100000]"),
        (["bench", *m, "--runs", "x"], "--runs", ""),
        (["tune", "x.yqp", "--trials", "-3"], "--trials", ""),
        # the tuning options by the names quantize and sweep give them, in tune and bench too
        (["tune", "x.yqp", "--tune-trials", "-3"], "--tune-trials", ""),
        (["bench", *m, "--tune-budget", "soon"], "--tune-budget", ""),
    ]
    bad = []
    for args, opt, rng in cases:
        r = run(*args)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or opt not in lines[0] or rng not in lines[0]:
            bad.append(f"{' '.join(args[:1] + args[-2:])}: exit {r.returncode}, {lines}")
    report("cli_bad_numbers", not bad, "; ".join(bad[:4]))

    a = run("detect", *m, dog, "--conf", "0.02", "--nms", "0.3")
    b = run("detect", *m, dog, "--conf=0.02", "--nms=0.3")
    c = run("detect", *m, dog)                  # (the defaults: other detections, so the values took)
    report("cli_opt_equals_value", a.returncode == 0 and a.stdout == b.stdout and a.stdout != c.stdout,
           f"exit {a.returncode}/{b.returncode}: {a.stdout[:120]!r} vs {b.stdout[:120]!r}")
    # the model options (shared by every command) and options before, between and after the
    # operands: the same detections
    d = run("detect", "--weights=synthetic", "--conf=0.02", model, "--size=160", "--nms", "0.3", dog)
    report("cli_opt_order_and_equals", d.returncode == 0 and d.stdout == a.stdout,
           f"exit {d.returncode}: {d.stdout[:120]!r} vs {a.stdout[:120]!r}")

    # a flag given a value, an unknown option, an abbreviation, a missing value: one line naming
    # it, exit 2, on every command (getopt_long; its abbreviations are refused)
    flag = {"inspect": None, "detect": "--letterbox", "eval": "--no-letterbox", "quantize": "--no-val",
            "bench": "--profile", "sweep": "--resume", "sensitivity": "--per-tensor", "tune": "--retune",
            "export": None}
    bad = []

    def usage_line(args, *want):
        r = run(*args)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or any(w not in lines[0] for w in want) or r.stdout:
            bad.append(f"{' '.join(args[:1] + args[-2:])}: exit {r.returncode}, {lines[:3]}")

    for c in cmds:
        usage_line([c, *m, "--frobnicate"], f"{c}: unknown option --frobnicate")
        usage_line([c, "--frobnicate=3", *m], f"{c}: unknown option --frobnicate=3")
        usage_line([c, *m, "-Z"], f"{c}: unknown option -Z")
        usage_line([c, *m, "--weigh", "synthetic"], f"{c}: unknown option --weigh")   # (abbreviates --weights)
        usage_line([c, *m, "--json"], f"{c}: --json needs a value")
        if flag[c]:
            usage_line([c, *m, f"{flag[c]}=1"], f"{c}: {flag[c]} takes no value", f"{flag[c]}=1")
    usage_line(["detect", *m, dog, "-o"], "detect: -o needs a value")
    usage_line(["detect", "--help=1"], "detect: --help takes no value")
    usage_line(["detect", *m, dog, "--quiet=1"], "--quiet takes no value")
    report("cli_usage_lines", not bad, "; ".join(bad[:4]))

    # -o DIR and --output=DIR: detect's drawings, as --out DIR
    with tempfile.TemporaryDirectory(prefix="yq_cli_o_") as tmp:
        outs = []
        for flag in (["-o", os.path.join(tmp, "a")], ["--output=" + os.path.join(tmp, "b")], ["--out", os.path.join(tmp, "c")]):
            r = run("detect", *m, dog, "--conf", "0.02", *flag)
            png = os.path.join(tmp, "abc"[len(outs)], "dog.png")
            outs.append(r.returncode == 0 and os.path.isfile(png) and open(png, "rb").read())
        report("cli_output_option", all(outs) and outs[0] == outs[1] == outs[2], f"{[bool(o) for o in outs]}")

    # --json -: the JSON alone on standard output, each detection naming its image's file
    import json
    j = run("detect", *m, dog, "--conf", "0.02", "--json", "-")
    try:
        d = json.loads(j.stdout)
        ok = j.returncode == 0 and len(d) > 0 and all(x["file_name"] == "dog.jpg" for x in d) and "detection" in j.stderr
    except ValueError as e:
        ok, d = False, str(e)
    report("cli_json_stdout", ok, f"exit {j.returncode}: {j.stdout[:160]!r}")

    with tempfile.TemporaryDirectory(prefix="yq_cli_") as tmp:
        calib = os.path.join(tmp, "calib")
        os.makedirs(calib)
        for f in ("dog.jpg", "horses.jpg"):
            os.symlink(os.path.join(DATA, "datasets", "darknet-samples", f), os.path.join(calib, f))
        # an annotation file of a larger set than the folder: its images there are evaluated, said
        val = os.path.join(DATA, "datasets", "coco-mini", "val2017", "images")
        ann = os.path.join(DATA, "datasets", "coco-mini", "annotations", "instances_val2017_mini.json")
        if os.path.isdir(val) and os.path.isfile(ann):
            sub = os.path.join(tmp, "sub")
            os.makedirs(sub)
            for f in sorted(os.listdir(val))[:3]:
                os.symlink(os.path.join(val, f), os.path.join(sub, f))
            e = run("eval", *m, "--images", sub, "--ann", ann)
            report("cli_eval_annotations_of_a_larger_set", e.returncode == 0 and "lists 79 images, 3 of them" in e.stderr
                   and "mAP@[.5:.95]" in e.stdout, f"exit {e.returncode}: {e.stderr.strip()[-300:]}")
            # -q: the same results, no note; -v (stderr not a terminal here): the step's timed lines
            eq = run("eval", *m, "--images", sub, "--ann", ann, "-q")
            ev = run("--verbose", "eval", *m, "--images", sub, "--ann", ann)
            report("cli_quiet_verbose", eq.returncode == 0 and eq.stdout == e.stdout and "note" not in eq.stderr
                   and ev.returncode == 0 and ev.stdout == e.stdout and "lists 79 images" in ev.stderr
                   and "yquant: fp32 ..." in ev.stderr and "yquant: fp32: 3/3 done in" in ev.stderr,
                   f"quiet exit {eq.returncode} stderr {eq.stderr.strip()[-200:]!r}; "
                   f"verbose exit {ev.returncode} stderr {ev.stderr.strip()[-300:]!r}")
        else:
            print("SKIP cli_eval_annotations_of_a_larger_set: coco-mini not found")
        own_classes(tmp, run)
        pkg = os.path.join(tmp, "t.yqp")
        q = run("quantize", *m, "--calib", calib, "--no-val", "--layers=0", "--calib-cache", os.path.join(tmp, "c.h5"),
                "-o", pkg)
        warn = [l for l in q.stderr.splitlines() if "not be validated" in l]
        i = run("inspect", pkg) if q.returncode == 0 else None
        report("cli_quantize_unvalidated", q.returncode == 0 and len(warn) == 1 and warn[0].startswith("yquant: warning:")
               and i is not None and "not validated" in i.stdout,
               f"exit {q.returncode}, warnings {warn}, inspect {i and i.stdout[-300:]!r}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
