#!/usr/bin/env python3
"""`yquant sweep`, `yquant sensitivity` and `yquant quantize --max-drop`, CI-sized.

On yolo-fastest-1.1-xl with 4 calibration images (coco-mini val2017_unlabelled) and 4
labelled validation images (coco-mini val2017, YOLO labels), from a temp folder of links:
  - bad --grid values: exit 2 and one "yquant: " line naming the key, before any work;
  - a 16-point sweep runs end to end on the CPU: sweep.csv has 16 rows and every column
    (the 16 combinations, numbers that parse, one chosen point, on the front, the best mAP
    there), pareto.png is a valid PNG (signature, chunk CRCs, IHDR, pixels decoded) showing
    points in the front colour, report.html embeds exactly that PNG and holds the table
    and the per-layer SQNR; the latency engine is named alike in the CSV, the JSON and the
    report (the CPU int8 engine without a GPU, silently: no warning);
  - --resume: the sweep again reads all 16 points back from points.jsonl (the same rows),
    and a 2-point grid in the same folder reads one and computes the other;
  - sweep --device cuda without a GPU: one warning line, then every latency labelled as the
    CPU int8 engine's (CSV, JSON, report); SKIP where a GPU is present (then the labels
    must name the GPU);
  - report.html rendered by headless Chromium (Debian's `chromium`; SKIP when absent): in
    the screenshot the chart shows many pixels of both point colours, and below it the
    table's header band is followed by rows of text pixels;
  - sensitivity --layers 2: the table, 2 CSV rows, a valid PNG;
  - quantize --max-drop: a budget met at once keeps every layer int8 (and names its latency
    engine); a budget of 0 with --max-float 2 keeps 1-2 layers float and the package's
    qconfig records them (skip_layers); --rank tensor (the default) steps one tensor (its
    conv and readers) at a time and the package records a prefix of the steps; usage errors
    exit 2.
Times are printed, never asserted.  Prints PASS/FAIL/SKIP lines (counted by tests/run.sh);
exits 0 if none failed.  YQ_BIN overrides the binary, YQ_DATA the data folder.
"""
import base64
import csv
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
YQ = os.path.abspath(os.environ.get("YQ_BIN") or os.path.join(ROOT, "build", "yquant"))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
MODEL = "yolo-fastest-1.1-xl"
GRID16 = "bits=8,6; calib=max,kl; weights=per_channel,per_tensor; head=float,int8"
FRONT_RGB = (214, 39, 40)      # datasets/chart.h
OTHER_RGB = (31, 119, 180)
TABLE_HEAD_RGB = (0xdd, 0xe6, 0xf5)   # cli/report.c: th background of the points table

results = []


def report(status, name, why=""):
    results.append((status, name, why))
    print("%s %s%s" % (status, name, ": " + why if why else ""), flush=True)


def run(args, timeout=600):
    env = dict(os.environ, YQ_DATA=DATA)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")   # steadier timings on a shared machine
    t0 = time.time()
    p = subprocess.run([YQ] + list(args), cwd=ROOT, env=env, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"), time.time() - t0


# ---- PNG ------------------------------------------------------------------------------

def png_read(path):
    """Checks a PNG fully (signature, every chunk CRC, IHDR, IEND) and decodes 8-bit RGB/RGBA
    non-interlaced images.  Returns (width, height, channels, rows) with rows a list of bytes."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG signature")
    pos, idat, ihdr, seen_end = 8, [], None, False
    while pos < len(data):
        if pos + 12 > len(data):
            raise ValueError("truncated chunk at %d" % pos)
        n, = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) & 0xffffffff != crc:
            raise ValueError("bad CRC in %r chunk" % kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            seen_end = True
            break
        pos += 12 + n
    if not ihdr or not seen_end or not idat:
        raise ValueError("missing IHDR, IDAT or IEND")
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, ctype, interlace))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    if len(raw) != h * (stride + 1):
        raise ValueError("pixel data is %d bytes, expected %d" % (len(raw), h * (stride + 1)))
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        elif f != 0:
            raise ValueError("bad filter type %d in row %d" % (f, y))
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def near(px, rgb, tol=12):
    return all(abs(px[k] - rgb[k]) <= tol for k in range(3))


def count_colour(w, bpp, rows, rgb, y0=0, y1=None, tol=12):
    """Pixels within tol of rgb, and the rows where they are."""
    n, ys = 0, []
    for y in range(y0, len(rows) if y1 is None else min(y1, len(rows))):
        r = rows[y]
        k = 0
        for x in range(w):
            i = x * bpp
            if abs(r[i] - rgb[0]) <= tol and abs(r[i + 1] - rgb[1]) <= tol and abs(r[i + 2] - rgb[2]) <= tol:
                k += 1
        if k:
            ys.append(y)
        n += k
    return n, ys


# ---- the data -------------------------------------------------------------------------

def make_sets(tmp):
    """4 calibration images (unlabelled), 4 labelled validation images: links in tmp."""
    src_val = os.path.join(DATA, "datasets", "coco-mini", "val2017")
    src_cal = os.path.join(DATA, "datasets", "coco-mini", "val2017_unlabelled", "images")
    names = sorted(f for f in os.listdir(os.path.join(src_val, "images")) if f.endswith(".jpg"))[:4]
    cal = sorted(f for f in os.listdir(src_cal) if f.endswith(".jpg"))[:4]
    d = {k: os.path.join(tmp, k) for k in ("calib", "val_images", "val_labels")}
    for p in d.values():
        os.makedirs(p)
    for f in names:
        os.symlink(os.path.join(src_val, "images", f), os.path.join(d["val_images"], f))
        shutil.copy(os.path.join(src_val, "labels", f[:-4] + ".txt"), d["val_labels"])
    for f in cal:
        os.symlink(os.path.join(src_cal, f), os.path.join(d["calib"], f))
    d["cache"] = os.path.join(tmp, "calib.h5")
    return d


def common(d):
    return [MODEL, "--calib", d["calib"], "--calib-cache", d["cache"]]


# ---- the tests ------------------------------------------------------------------------

def check_bad_grids(d):
    cases = [("bits=9", "bits"), ("bits=8,6; foo=1,2", "foo"), ("bits=8; bits=6", "bits"), ("bits", "bits"),
             ("calib=max,percentile:101", "calib"), ("layer.x.bits=8", "layer.x.bits")]
    for grid, key in cases:
        name = "sweep_bad_grid_" + re.sub(r"[^a-z0-9]+", "_", grid.lower()).strip("_")
        rc, out, err, _ = run(["sweep"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"],
                                                      "--grid", grid, "--out", os.path.join(d["tmp"], "bad")])
        lines = [l for l in err.splitlines() if l.strip()]
        if rc != 2 or len(lines) != 1 or not lines[0].startswith("yquant: ") or key not in lines[0]:
            report("FAIL", name, "rc %d, stderr %r" % (rc, err[-300:]))
        elif os.path.exists(os.path.join(d["tmp"], "bad", "sweep.csv")):
            report("FAIL", name, "a bad grid still wrote sweep.csv")
        else:
            report("PASS", name)


CSV_COLUMNS = ["point", "name", "bits", "weights", "weight_scale", "calib", "rounding", "head", "first", "keep_float", "equalize",
               "bias_correction", "skip_layers", "float_convs", "int8_convs", "map", "map50", "map75", "drop_pts",
               "drop50_pts", "latency_ms", "latency_mean_ms", "latency_device", "latency_engine", "wall_ms_per_image",
               "cpu_latency_ms", "eval_engine", "fp32_map", "fp32_map50", "fp32_latency_ms", "images", "calib_images", "pareto", "chosen",
               "qconfig"]
CPU_TAG, CPU_LABEL = "cpu-int8", "CPU int8 ("   # the label goes on with the instructions: "CPU int8 (avx512-vnni)"


def latency_labels_why(engine, tag, label, rows, html):
    """What is wrong with the latency labels of one run: engine is the JSON's latency.engine,
    tag/label the JSON's latency_device/latency_engine, rows the CSV rows (dicts), html the
    report (or None)."""
    why = []
    if engine == "cpu":
        if tag != CPU_TAG or not label.startswith(CPU_LABEL):
            why.append("cpu engine labelled %r / %r" % (tag, label))
    elif engine == "cuda":
        if not tag.startswith("cuda-int8-") or not label.startswith("GPU int8, "):
            why.append("cuda engine labelled %r / %r" % (tag, label))
    else:
        why.append("latency.engine %r" % engine)
    for r in rows:
        if (r.get("latency_device"), r.get("latency_engine")) != (tag, label):
            why.append("row %s labelled %r / %r, the JSON %r / %r" % (r.get("point"), r.get("latency_device"),
                                                                      r.get("latency_engine"), tag, label))
            break
        if engine == "cpu" and r.get("latency_ms") is not None and \
                abs(float(r["latency_ms"]) - float(r["cpu_latency_ms"])) > 1e-3:
            why.append("row %s: cpu engine but latency_ms %s != cpu_latency_ms %s" % (r.get("point"), r["latency_ms"],
                                                                                     r["cpu_latency_ms"]))
            break
    if html is not None and ("Latency (<b>%s</b>" % label) not in html:
        why.append("report.html does not name the latency engine %r" % label)
    return why


def check_sweep(d):
    out = os.path.join(d["tmp"], "sweep")
    js = os.path.join(d["tmp"], "sweep.json")
    rc, so, se, dt = run(["sweep"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"],
                                                  "--grid", GRID16, "--out", out, "--json", js])
    name = "sweep_ci_16_points"
    if rc != 0:
        report("FAIL", name, "rc %d: %s" % (rc, se[-500:]))
        return None
    print("# 16-point sweep on 4+4 images: %.1f s" % dt)
    why = []
    rows = list(csv.reader(open(os.path.join(out, "sweep.csv"), newline="")))
    head, body = rows[0], rows[1:]
    if head != CSV_COLUMNS:
        why.append("header %s" % head)
    if len(body) != 16:
        why.append("%d rows, expected 16" % len(body))
    combos = set()
    recs = []
    for r in body:
        if len(r) != len(head):
            why.append("row %s has %d fields" % (r[:2], len(r)))
            continue
        rec = dict(zip(head, r))
        empty = [k for k in head if k != "skip_layers" and rec[k] == "" and
                 not (k == "cpu_latency_ms" and rec["eval_engine"] == "cuda-int8")]
        if empty:
            why.append("row %s: empty %s" % (rec["point"], empty))
        try:
            for k in ("map", "map50", "map75", "drop_pts", "latency_ms", "fp32_map", "fp32_latency_ms"):
                rec[k] = float(rec[k])
        except ValueError as e:
            why.append("row %s: %s" % (rec["point"], e))
            continue
        if not (0 <= rec["map"] <= 1) or not rec["latency_ms"] > 0:
            why.append("row %s: map %s latency %s" % (rec["point"], rec["map"], rec["latency_ms"]))
        if abs(rec["drop_pts"] - 100 * (rec["fp32_map"] - rec["map"])) > 1e-3:
            why.append("row %s: drop_pts %s" % (rec["point"], rec["drop_pts"]))
        if rec["images"] != "4" or rec["calib_images"] != "4":
            why.append("row %s: images %s %s" % (rec["point"], rec["images"], rec["calib_images"]))
        if ("head=%s" % rec["head"]) not in rec["qconfig"]:
            why.append("row %s: qconfig %r does not say head %s" % (rec["point"], rec["qconfig"], rec["head"]))
        combos.add((rec["bits"], rec["calib"], rec["weights"], rec["head"]))
        recs.append(rec)
    want = {(b, c, w, h) for b in ("8", "6") for c in ("max", "kl") for w in ("per_channel", "per_tensor")
            for h in ("float", "int8")}
    if combos != want:
        why.append("combinations %s" % sorted(combos ^ want))
    front = [r for r in recs if r["pareto"] == "1"]
    chosen = [r for r in recs if r["chosen"] == "1"]
    if len(chosen) != 1 or chosen[0]["pareto"] != "1":
        why.append("%d chosen points (one, on the front, expected)" % len(chosen))
    elif front and chosen[0]["map"] < max(r["map"] for r in front):
        why.append("the chosen point is not the best mAP on the front")
    # The front: no point both faster and more accurate than a front point.
    for f in front:
        for r in recs:
            if r["latency_ms"] <= f["latency_ms"] and r["map"] >= f["map"] and \
                    (r["latency_ms"] < f["latency_ms"] or r["map"] > f["map"]):
                why.append("front point %s is dominated by %s" % (f["name"], r["name"]))
    for f in recs:
        if f["pareto"] == "0" and not any(r["latency_ms"] <= f["latency_ms"] and r["map"] >= f["map"] and
                                          (r["latency_ms"] < f["latency_ms"] or r["map"] > f["map"]) for r in recs):
            why.append("point %s is off the front but nothing dominates it" % f["name"])
    # The chart.
    png = os.path.join(out, "pareto.png")
    try:
        w, h, bpp, px = png_read(png)
        if (w, h) != (1100, 700):
            why.append("pareto.png is %dx%d" % (w, h))
        n_front, _ = count_colour(w, bpp, px, FRONT_RGB, tol=0)
        if n_front < 100 * len(front):
            why.append("pareto.png: %d front-colour pixels for %d front points" % (n_front, len(front)))
    except (OSError, ValueError, zlib.error) as e:
        why.append("pareto.png: %s" % e)
    # The page.
    html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    m = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    if not m or base64.b64decode(m.group(1)) != open(png, "rb").read():
        why.append("report.html does not embed pareto.png")
    table = html[html.find('<table class="points">'):]
    table = table[:table.find("</table>")]
    if table.count("<tr") != 17:
        why.append("report.html: the points table has %d rows (16 + header expected)" % table.count("<tr"))
    if "Per-layer SQNR of the chosen point" not in html or '<table class="sqnr">' not in html:
        why.append("report.html: no per-layer SQNR table")
    j = json.load(open(js))
    if len(j["points"]) != 16:
        why.append("sweep.json: %d points" % len(j["points"]))
    eng = j.get("latency", {}).get("engine")
    why += latency_labels_why(eng, j.get("latency_device"), j.get("latency_engine"),
                              [dict(zip(head, r)) for r in body], html)
    if eng == "cpu" and "warning: latency" in se:
        why.append("a warning about the latency engine without --device: %r" % se[-300:])
    print("# latency engine: %s" % j.get("latency_engine"))
    if not re.search(r"^Pareto front \(fastest first\): ", so, re.M):
        why.append("stdout has no Pareto front line")
    report("FAIL" if why else "PASS", name, "; ".join(why[:6]))
    for line in so.splitlines():
        if line.startswith("Pareto front"):
            print("# " + line)
    return out


def csv_rows(path):
    rows = list(csv.reader(open(path, newline="")))
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def check_resume(d, out):
    """The 16-point sweep again with --resume: every point read back from points.jsonl (the
    same rows), then a 2-point grid in the same folder: one point read back, one computed."""
    name = "sweep_resume"
    if out is None:
        report("SKIP", name, "the 16-point sweep failed")
        return
    why = []
    jl = os.path.join(out, "points.jsonl")
    lines = open(jl).read().splitlines() if os.path.exists(jl) else []
    if len(lines) != 16:
        why.append("points.jsonl has %d lines after 16 points" % len(lines))
    first = csv_rows(os.path.join(out, "sweep.csv"))
    rc, so, se, dt = run(["sweep"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"],
                                                  "--grid", GRID16, "--out", out, "--resume"])
    if rc != 0:
        why.append("--resume: rc %d: %s" % (rc, se[-300:]))
    else:
        if "16 of 16 points from" not in se:
            why.append("--resume did not read every point back: %r" % se[-400:])
        again = csv_rows(os.path.join(out, "sweep.csv"))
        keys = ("name", "map", "map50", "latency_ms", "float_convs", "qconfig", "pareto", "chosen")
        if [[r[k] for k in keys] for r in again] != [[r[k] for k in keys] for r in first]:
            why.append("the resumed sweep.csv differs from the first")
        print("# resumed 16 points: %.1f s" % dt)
        # one point of the first grid and one new one
        rc, so, se, _ = run(["sweep"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"], "--grid",
                                                     "bits=8; calib=max,mse; weights=per_channel; head=float", "--out", out,
                                                     "--resume"])
        rows = csv_rows(os.path.join(out, "sweep.csv")) if rc == 0 else []
        old = [r for r in first if (r["bits"], r["calib"], r["weights"], r["head"]) == ("8", "max", "per_channel", "float")]
        if rc != 0:
            why.append("2-point --resume: rc %d: %s" % (rc, se[-300:]))
        elif "1 of 2 points from" not in se or len(rows) != 2 or not old or rows[0]["map"] != old[0]["map"]:
            why.append("2-point --resume: %r, rows %s" % (se[-300:], [(r["name"], r["map"]) for r in rows]))
        elif len(open(jl).read().splitlines()) != 17:
            why.append("points.jsonl: the new point was not appended")
    report("FAIL" if why else "PASS", name, "; ".join(why[:4]))


def check_device_cuda_fallback(d):
    """sweep --device cuda: the GPU's latency where there is one, else one warning line and the
    CPU int8 engine's, labelled as such everywhere."""
    name = "sweep_device_cuda_labels_cpu_without_gpu"
    out = os.path.join(d["tmp"], "sweep_cuda")
    js = os.path.join(d["tmp"], "sweep_cuda.json")
    rc, so, se, dt = run(["sweep"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"],
                                                  "--grid", "bits=8", "--sqnr-images", "1", "--device", "cuda",
                                                  "--out", out, "--json", js])
    if rc != 0:
        report("FAIL", name, "rc %d: %s" % (rc, se[-500:]))
        return
    print("# 1-point sweep --device cuda: %.1f s" % dt)
    j = json.load(open(js))
    rows = list(csv.DictReader(open(os.path.join(out, "sweep.csv"), newline="")))
    html = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    eng = j.get("latency", {}).get("engine")
    why = latency_labels_why(eng, j.get("latency_device"), j.get("latency_engine"), rows, html)
    if eng == "cuda":
        if not os.path.exists(os.path.join(out, "tune.jsonl")):
            why.append("GPU latency without the default tuning log %s/tune.jsonl" % out)
        report("FAIL" if why else "SKIP", name, "; ".join(why) if why else "a GPU is present (its labels checked)")
        return
    warn = [l for l in se.splitlines() if l.startswith("warning: latency")]
    if len(warn) != 1 or "no CUDA device" not in warn[0] or CPU_LABEL not in warn[0]:
        why.append("expected one warning line naming the fallback, got %r" % warn)
    if j.get("latency", {}).get("why_cpu") != "no CUDA device":
        why.append("latency.why_cpu %r" % j.get("latency", {}).get("why_cpu"))
    if "latency: %s" % CPU_LABEL not in so:
        why.append("stdout does not name the engine: %r" % so[-300:])
    if len(rows) != 1 or not float(rows[0]["latency_ms"]) > 0:
        why.append("rows %s" % rows)
    report("FAIL" if why else "PASS", name, "; ".join(why))


def find_chromium():
    for c in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        p = shutil.which(c)
        if p:
            return p
    return None


def check_chromium(d, out):
    name = "sweep_report_chromium"
    chrome = find_chromium()
    if not chrome:
        report("SKIP", name, "chromium not installed (Debian: apt-get install chromium)")
        return
    if not out:
        report("SKIP", name, "no report (the sweep failed)")
        return
    shot = os.path.join(d["tmp"], "shot.png")
    prof = os.path.join(d["tmp"], "chrome-profile")
    args = [chrome, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--no-first-run",
            "--user-data-dir=" + prof, "--window-size=1280,1700", "--screenshot=" + shot,
            "file://" + os.path.join(out, "report.html")]
    try:
        p = subprocess.run(args, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        report("FAIL", name, "chromium did not finish in 120 s")
        return
    if p.returncode != 0 or not os.path.exists(shot):
        report("FAIL", name, "chromium rc %d: %s" % (p.returncode, p.stderr.decode("utf-8", "replace")[-300:]))
        return
    try:
        w, h, bpp, px = png_read(shot)
    except (ValueError, zlib.error) as e:
        report("FAIL", name, "screenshot: %s" % e)
        return
    why = []
    # The points table: the first band of rows in its header colour (the th background).
    band = next((y for y in range(h) if count_colour(w, bpp, px[y:y + 1], TABLE_HEAD_RGB, tol=4)[0] >= 200), None)
    if band is None:
        report("FAIL", name, "no table header in the screenshot")
        return
    # The chart, above it: both point colours, many pixels each (the SQNR bars further down
    # share the front's red, so only rows above the table count).
    # How many markers of each colour the chart draws depends on which points are on the front
    # (measured latencies move it from run to run): at least 60 screenshot pixels per marker (the
    # smallest, the legend's, is a disc of radius 5, anti-aliased: its edge pixels are blends),
    # up to 300 for each colour.
    try:
        with open(os.path.join(out, "sweep.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        pts_front = sum(1 for r in rows if r.get("pareto") == "1")
        pts_other = len(rows) - pts_front
    except OSError:
        pts_front = pts_other = 4
    need_front, need_other = min(300, 60 * max(pts_front, 1)), min(300, 60 * max(pts_other, 1))
    n_front, ys_front = count_colour(w, bpp, px, FRONT_RGB, 0, band)
    n_other, ys_other = count_colour(w, bpp, px, OTHER_RGB, 0, band)
    if n_front < need_front or n_other < need_other:
        why.append("chart: %d front-colour and %d other-colour pixels above the table (%d and %d expected for %d "
                   "front and %d other points)" % (n_front, n_other, need_front, need_other, pts_front, pts_other))
    # The table's text: dark pixels in the rows under its header.
    dark = 0
    for y in range(band, min(band + 250, h)):
        r = px[y]
        dark += sum(1 for x in range(0, min(w, 900)) if max(r[x * bpp], r[x * bpp + 1], r[x * bpp + 2]) < 110)
    if dark < 1500:
        why.append("table: %d text pixels in the 250 rows from its header (1500 expected)" % dark)
    ys = ys_front + ys_other
    print("# screenshot %dx%d: chart colours %d front, %d other pixels in rows %s..%s; table header at y=%d, "
          "%d text pixels under it" % (w, h, n_front, n_other, min(ys) if ys else "-", max(ys) if ys else "-", band, dark))
    report("FAIL" if why else "PASS", name, "; ".join(why))


def check_sensitivity(d):
    name = "sensitivity_layers_2"
    out = os.path.join(d["tmp"], "sens")
    rc, so, se, dt = run(["sensitivity"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"],
                                                        "--layers", "2", "--out", out])
    if rc != 0:
        report("FAIL", name, "rc %d: %s" % (rc, se[-400:]))
        return
    print("# sensitivity of 2 layers: %.1f s" % dt)
    why = []
    rows = list(csv.DictReader(open(os.path.join(out, "sensitivity.csv"), newline="")))
    if len(rows) != 2:
        why.append("%d CSV rows" % len(rows))
    for r in rows:
        try:
            float(r["a_map"]), float(r["b_map"]), float(r["a_head_sqnr_db"]), float(r["impact_pts"])
        except (KeyError, ValueError) as e:
            why.append("row %s: %s" % (r.get("rank"), e))
    impacts = [float(r["impact_pts"]) for r in rows if r.get("impact_pts")]
    if impacts != sorted(impacts, reverse=True):
        why.append("not ranked by impact: %s" % impacts)
    if not re.search(r"^\s+rank\s+layer", so, re.M):
        why.append("no table on stdout")
    try:
        png_read(os.path.join(out, "sensitivity.png"))
    except (OSError, ValueError, zlib.error) as e:
        why.append("sensitivity.png: %s" % e)
    report("FAIL" if why else "PASS", name, "; ".join(why))


def qconfig_of(path_json):
    return json.load(open(path_json))["qconfig"]


def check_request_and_plan(d):
    """quantize --set keep_float=2 --set thresh_search=2: the package keeps the request as asked
    (keep_float = 2), the qconfig as resolved (the chosen convs as layer.N.skip, keep_float = 0)
    and the plan (those convs with why keep_float; every conv's dtype), in inspect's JSON and
    table and in quantize's --json."""
    name = "quantize_request_resolved_plan"
    pkg, js = os.path.join(d["tmp"], "kf.yqp"), os.path.join(d["tmp"], "kf.json")
    rc, so, se, _ = run(["quantize"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"], "--bootstrap", "0",
                                                    "--set", "keep_float=2", "--set", "thresh_search=2", "--no-tune",
                                                    "--layers", "0", "-o", pkg, "--json", js])
    why = []
    if rc != 0:
        report("FAIL", name, "rc %d: %s" % (rc, se[-300:]))
        return
    q = json.load(open(js))
    rc, so, se, _ = run(["inspect", pkg, "--json", "-"])
    rc2, table, se2, _ = run(["inspect", pkg])
    if rc != 0 or rc2 != 0:
        report("FAIL", name, "inspect rc %d/%d: %s" % (rc, rc2, (se + se2)[-300:]))
        return
    j = json.loads(so)
    req, res, plan = j.get("qconfig_request", ""), j.get("qconfig", ""), j.get("plan") or {}
    if "keep_float = 2" not in req or "thresh_search = 2" not in req:
        why.append("the request lost keep_float/thresh_search: %r" % req)
    if "keep_float = 0" not in res or "thresh_search = 0" not in res:
        why.append("the resolved qconfig still asks: %r" % res)
    chosen = plan.get("chosen_float", [])
    skips = sorted(int(m) for m in re.findall(r"layer\.(\d+)\.skip = on", res))
    if not 1 <= len(chosen) <= 2 or sorted(chosen) != skips:
        why.append("plan chosen_float %s, resolved skips %s" % (chosen, skips))
    convs = [n for n in plan.get("nodes", []) if n.get("op") == "conv"]
    kf = sorted(n["layer"] for n in convs if n.get("why") == "keep_float")
    if kf != sorted(chosen) or any((n.get("dtype") == "int8") != (n.get("why") == "int8") for n in convs):
        why.append("plan nodes: keep_float %s, chosen %s" % (kf, chosen))
    if plan.get("float_convs", -1) + plan.get("int8_convs", -1) != len(convs):
        why.append("plan counts %s/%s for %d convs" % (plan.get("float_convs"), plan.get("int8_convs"), len(convs)))
    for L in plan.get("searched_thresholds", []):
        if "layer.%d.thresh" % L not in res:
            why.append("searched threshold of layer %d not in the resolved qconfig" % L)
    if q.get("qconfig_request") != req or q.get("qconfig") != res or q.get("plan") != plan:
        why.append("quantize --json and the package disagree on request/qconfig/plan")
    if "asked, where it differs:" not in table or "keep_float = 2" not in table or "(keep_float)" not in table:
        why.append("inspect's table does not show the request and the choices: %r" % table[:600])
    report("FAIL" if why else "PASS", name, "; ".join(why))


def check_max_drop(d):
    base = ["quantize"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"], "--bootstrap", "0",
                                       "--layers", "0"]
    # A budget met at once: every layer int8, nothing skipped.
    name = "quantize_max_drop_met_at_once"
    pkg, js = os.path.join(d["tmp"], "md100.yqp"), os.path.join(d["tmp"], "md100.json")
    rc, so, se, _ = run(base + ["--max-drop", "100", "-o", pkg, "--json", js])
    why = []
    if rc != 0:
        why.append("rc %d: %s" % (rc, se[-300:]))
    else:
        j = json.load(open(js))
        md, qc = j.get("max_drop", {}), j["qconfig"]
        if md.get("met") is not True or md.get("float_layers") != [] or len(md.get("steps", [])) != 1:
            why.append("max_drop %s" % md)
        if "head = int8" not in qc or "first = int8" not in qc or "skip_layers" in qc:
            why.append("qconfig %r" % qc)
        if not os.path.exists(pkg):
            why.append("no package")
        eng = md.get("latency", {}).get("engine")
        why += latency_labels_why(eng, md.get("latency_device"), md.get("latency_engine"), [], None)
        if not all(k in md for k in ("latency_ms", "latency_ms_all_int8", "cpu_latency_ms")):
            why.append("max_drop has no latency figures: %s" % sorted(md))
        if not re.search(r"latency cost [-+][0-9.]+ ms\S* \([-+][0-9.]+%%, %s" % re.escape(md.get("latency_engine", "?")),
                         so):
            why.append("the latency cost line does not name the engine: %r" % so[-300:])
    report("FAIL" if why else "PASS", name, "; ".join(why))

    # A budget of 0 with at most 2 float layers: the steps run, the package records them.
    name = "quantize_max_drop_records_skip_layers"
    pkg, js = os.path.join(d["tmp"], "md0.yqp"), os.path.join(d["tmp"], "md0.json")
    rc, so, se, dt = run(base + ["--max-drop", "0", "--max-float", "2", "--rank", "sqnr", "-o", pkg, "--json", js])
    why = []
    if rc not in (0, 3):
        why.append("rc %d: %s" % (rc, se[-300:]))
    else:
        print("# --max-drop 0 --max-float 2: %.1f s" % dt)
        j = json.load(open(js))
        md, qc = j.get("max_drop", {}), j["qconfig"]
        fl = md.get("float_layers", [])
        if (rc == 0) != bool(md.get("met")):
            why.append("exit status %d but met=%s" % (rc, md.get("met")))
        steps = md.get("steps", [])
        if md.get("met") and steps[0]["drop_pts"] <= 0:
            pass                                   # all-int8 already within 0 points: nothing to float
        elif md.get("met") and (not 1 <= len(fl) <= 2 or len(steps) != 1 + len(fl)):
            why.append("met with float_layers %s after %d steps" % (fl, len(steps)))
        elif not md.get("met"):
            # Two layers tried; the answer is the step with the lowest drop.
            best = min(range(len(steps)), key=lambda k: (steps[k]["drop_pts"], k))
            if len(steps) != 3 or len(fl) != best or fl != [s["layer"] for s in steps[1:1 + best]]:
                why.append("not met: float_layers %s, steps %s" % (fl, [(s["layer"], s["drop_pts"]) for s in steps]))
            if abs(md.get("drop_pts", 1e9) - steps[best]["drop_pts"]) > 1e-9:
                why.append("not met: drop_pts %s is not the best step's" % md.get("drop_pts"))
        m = re.search(r"^skip_layers = ([0-9,]+)$", qc, re.M)
        if fl and (not m or sorted(int(x) for x in m.group(1).split(",")) != sorted(fl)):
            why.append("qconfig %r does not record float_layers %s" % (qc, fl))
        if not re.search(r"^\s+\d+\s+\+ layer \d+", so, re.M) and fl:
            why.append("no step lines on stdout")
        h5dump = shutil.which("h5dump")
        if h5dump and fl and os.path.exists(pkg):
            p = subprocess.run([h5dump, "-d", "/qconfig", pkg], capture_output=True)
            if b"skip_layers" not in p.stdout:
                why.append("the package's /qconfig has no skip_layers")
        elif not os.path.exists(pkg):
            why.append("no package")
    report("FAIL" if why else "PASS", name, "; ".join(why))

    # --rank tensor (the default): each step keeps one tensor float, its conv and the convs
    # reading it; the package records the union of the steps it took.
    name = "quantize_max_drop_rank_tensor"
    pkg, js = os.path.join(d["tmp"], "mdt.yqp"), os.path.join(d["tmp"], "mdt.json")
    rc, so, se, dt = run(base + ["--max-drop", "0", "--max-float", "6", "-o", pkg, "--json", js])
    why = []
    if rc not in (0, 3):
        why.append("rc %d: %s" % (rc, se[-300:]))
    else:
        print("# --max-drop 0 --max-float 6 --rank tensor: %.1f s" % dt)
        j = json.load(open(js))
        md, qc = j.get("max_drop", {}), j["qconfig"]
        steps, fl = md.get("steps", []), md.get("float_layers", [])
        if md.get("rank") != "tensor":
            why.append("rank %r, tensor is the default" % md.get("rank"))
        if "detection outputs" not in so:
            why.append("stdout does not say how the layers are ranked")
        taken = [l for s_ in steps[1:] for l in s_.get("layers", [])]
        if len(taken) != len(set(taken)) or len(taken) > 6:
            why.append("steps repeat layers or pass --max-float: %s" % [s_.get("layers") for s_ in steps[1:]])
        if not md.get("met") or steps[0]["drop_pts"] > 0:
            if len(steps) < 2 or any(not s_.get("layers") or s_["layer"] != s_["layers"][0] for s_ in steps[1:]):
                why.append("steps %s" % [(s_.get("layer"), s_.get("layers")) for s_ in steps])
            # the answer is a prefix of the steps: the best one, or the first within the budget
            ks = [len(s_.get("layers", [])) for s_ in steps]
            prefixes = [sorted(taken[:sum(ks[1:k + 1])]) for k in range(len(steps))]
            if sorted(fl) not in prefixes:
                why.append("float_layers %s is not a prefix of the steps %s" % (fl, taken))
        m = re.search(r"^skip_layers = ([0-9,]+)$", qc, re.M)
        if fl and (not m or sorted(int(x) for x in m.group(1).split(",")) != sorted(fl)):
            why.append("qconfig %r does not record float_layers %s" % (qc, fl))
    report("FAIL" if why else "PASS", name, "; ".join(why))

    name = "quantize_max_drop_usage"
    why = []
    for extra, what in ((["--max-drop", "-1"], "--max-drop"), (["--max-drop", "0.5", "--skip-layers", "3"], "skip"),
                        (["--max-drop", "0.5", "--rank", "bogus"], "--rank"), (["--max-drop", "x"], "--max-drop")):
        rc, so, se, _ = run(["quantize"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"]] + extra)
        if rc != 2 or what not in se:
            why.append("%s: rc %d %r" % (" ".join(extra), rc, se[-200:]))
    report("FAIL" if why else "PASS", name, "; ".join(why))


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def check_target(d):
    """quantize --target: the accuracy is the named engine's, in the table, the JSON, the package
    (inspect shows it); a target that is not here is refused before any work, nothing written."""
    base = ["quantize"] + common(d) + ["--val", d["val_images"], "--labels", d["val_labels"], "--bootstrap", "0",
                                       "--layers", "0", "--no-tune"]
    name = "quantize_target_cpu_named"
    pkg, js = os.path.join(d["tmp"], "tcpu.yqp"), os.path.join(d["tmp"], "tcpu.json")
    rc, so, se, _ = run(base + ["--target", "cpu", "-o", pkg, "--json", js])
    why = []
    if rc != 0:
        why.append("rc %d: %s" % (rc, se[-300:]))
    else:
        # the summary line names every setting (the defaults: head float, first conv int8)
        if not re.search(r"^qconfig: 8 bits, per-channel weights, calib \S+, head float, first conv int8, "
                         r"equalize (on|off), bias correction \S+$", so, re.M):
            why.append("the qconfig line: %r" % [l for l in so.splitlines() if l.startswith("qconfig:")])
        j = json.load(open(js))
        if j.get("target") != "cpu" or "CPU" not in j.get("target_engine", ""):
            why.append("target %r / %r" % (j.get("target"), j.get("target_engine")))
        eng = {r["name"]: r.get("engine") for r in j.get("rows", [])}
        if eng.get("int8") != "cpu":
            why.append("int8 row engine %r" % eng.get("int8"))
        if "target cpu" not in so:
            why.append("the table does not name the target: %r" % so[-300:])
        rc2, so2, se2, _ = run(["inspect", pkg])
        m = re.search(r"^  int8 +mAP +([0-9.]+) +mAP50 +([0-9.]+) +on (\S+)", so2, re.M)
        if rc2 != 0 or not m or m.group(3) != "cpu":
            why.append("inspect: rc %d, int8 row %r" % (rc2, m.group(0) if m else None))
        elif abs(float(m.group(1)) - 100 * next(r["map"] for r in j["rows"] if r["name"] == "int8")) > 0.006:
            why.append("inspect's int8 mAP %s is not the JSON's" % m.group(1))
    report("FAIL" if why else "PASS", name, "; ".join(why))

    name = "quantize_target_refused"
    why = []
    cases = [(["--target", "bogus"], "--target bogus: expected cpu, cuda or cuda:N"), (["--target", "cuda:64"], "--target")]
    if not has_gpu():
        cases.append((["--target", "cuda"], "no CUDA device"))
    for extra, what in cases:
        out = os.path.join(d["tmp"], "tref.yqp")
        rc, so, se, dt = run(base + extra + ["-o", out])
        if rc != 2 or what not in se or os.path.exists(out) or dt > 20:
            why.append("%s: rc %d in %.1f s, %r%s" % (" ".join(extra), rc, dt, se[-200:],
                                                     ", wrote the package" if os.path.exists(out) else ""))
    # --max-drop judges its budget on the target's engine: another --lat-device is refused
    rc, so, se, _ = run(base + ["--target", "cpu", "--lat-device", "cuda", "--max-drop", "1"])
    if rc != 2 or "--lat-device" not in se:
        why.append("--target cpu --lat-device cuda --max-drop: rc %d %r" % (rc, se[-200:]))
    report("FAIL" if why else "PASS", name, "; ".join(why))


def main():
    if not os.access(YQ, os.X_OK):
        print("FAIL sweep_binary: %s not built (make build/yquant)" % YQ)
        return 1
    need = [os.path.join(DATA, "models", MODEL), os.path.join(DATA, "datasets", "coco-mini", "val2017", "labels"),
            os.path.join(DATA, "datasets", "coco-mini", "val2017_unlabelled", "images")]
    missing = [p for p in need if not os.path.isdir(p)]
    if missing:
        for n in ("sweep_ci_16_points", "sweep_resume", "sweep_device_cuda_labels_cpu_without_gpu", "sweep_report_chromium",
                  "sensitivity_layers_2", "quantize_max_drop", "quantize_request_resolved_plan", "quantize_target"):
            report("SKIP", n, "%s not found (set YQ_DATA)" % missing[0])
        return 0
    with tempfile.TemporaryDirectory(prefix="yq_sweep_test.") as tmp:
        d = make_sets(tmp)
        d["tmp"] = tmp
        t0 = time.time()
        check_bad_grids(d)
        out = check_sweep(d)
        check_resume(d, out)
        check_device_cuda_fallback(d)
        check_chromium(d, out)
        check_sensitivity(d)
        check_max_drop(d)
        check_request_and_plan(d)
        check_target(d)
        print("# sweep_test: %.1f s in all" % (time.time() - t0))
    return 1 if any(s == "FAIL" for s, _, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
