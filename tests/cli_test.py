#!/usr/bin/env python3
"""`yquant inspect` on broken input: an error line, never a crash or a leak.

For every broken fixture in tests/fixtures/ (cfg files, read with --weights
synthetic) and every broken weights file (generated here, in a temp folder
beside a copy of tests/fixtures/tiny.cfg), build/yquant must
  - exit with status 1 (a load error; 2 is kept for usage errors), not a signal,
  - write exactly one line on stderr, starting with "yquant: " and naming the file,
  - write nothing on stderr that mentions "Sanitizer" or "Segmentation",
and under valgrind (when installed) report no memory error and no definite or
indirect leak.  Valid inputs (tiny.cfg with good v0.2 and v0.1 weights) exit 0.
Also: inspect of yolov3 at 416 (65.86 GFLOPs, 107 layers, JSON), --help, and
an unknown option; `yquant tune` errors (missing or damaged package, a bad tuning
log, no GPU, bad options: one line each).

Prints PASS/FAIL/SKIP lines (counted by tests/run.sh); exits 0 if none failed.
Run from anywhere; paths are relative to the repository root.  YQ_BIN overrides
the binary (default build/yquant); YQ_DATA the data folder (default ../shared).
"""
import json
import hashlib
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
YQ = os.path.abspath(os.environ.get("YQ_BIN") or os.path.join(ROOT, "build", "yquant"))  # the binary under test
FIX = os.path.join(ROOT, "tests", "fixtures")
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
VALGRIND = shutil.which("valgrind")
VG_ARGS = ["--leak-check=full", "--errors-for-leak-kinds=definite,indirect", "--error-exitcode=99", "-q"]
VG_STATUS = 99

# The broken cfg fixtures: (file, what the one error line must contain besides the name)
BROKEN_CFGS = [
    ("unknown_section.cfg", ":8:"),
    ("unsupported_section.cfg", ":8:"),
    ("bad_value.cfg", ":7:"),
    ("not_integer.cfg", ":7:"),
    ("route_missing.cfg", ":8:"),
    ("route_ahead.cfg", ":8:"),
    ("shortcut_missing.cfg", ":8:"),
    ("channel_mismatch.cfg", ":11:"),
    ("groups_mismatch.cfg", ":6:"),
    ("head_mismatch.cfg", ":9:"),
    ("no_net.cfg", ":1:"),
    ("empty.cfg", "no sections"),
    ("bad_activation.cfg", ":7:"),
    ("malformed_section.cfg", ":5:"),
]

# tiny.cfg needs 333 floats; see tests/test_ir.c for the layout.
TINY_FLOATS = 333
L0_VAR, L0_W, L2_B = 12, 16, 124

results = []  # (status, name, why), printed in order at the end


def report(status, name, why=""):
    results.append((status, name, why))


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(args, prefix=(), timeout=300):
    """Runs build/yquant ARGS (under PREFIX, e.g. valgrind) from the repository root."""
    env = dict(os.environ, YQ_DATA=DATA)
    p = subprocess.run(list(prefix) + [YQ] + list(args), cwd=ROOT, env=env, capture_output=True,
                       timeout=timeout, preexec_fn=no_core)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def tiny_floats():
    return [0.05 + 0.01 * (i % 11) for i in range(TINY_FLOATS)]


def weights_bytes(floats, header="v2"):
    if header == "v2":
        h = struct.pack("<iiiq", 0, 2, 0, 123456)
    else:  # version 0.1: 'seen' is 32 bits
        h = struct.pack("<iiii", 0, 1, 0, 4242)
    return h + struct.pack("<%df" % len(floats), *floats)


def weights_cases(tmp):
    """(name, args, file named in the message or None for a valid case) for each weights fixture."""
    def folder(case, data):
        d = os.path.join(tmp, case)
        os.mkdir(d)
        shutil.copy(os.path.join(FIX, "tiny.cfg"), d)
        if data is not None:
            with open(os.path.join(d, case + ".weights"), "wb") as f:
                f.write(data)
        return d

    f = tiny_floats()
    out = []
    out.append(("weights_valid", ["inspect", folder("valid", weights_bytes(f))], None))
    out.append(("weights_old_header", ["inspect", folder("old_header", weights_bytes(f, "v1"))], None))
    out.append(("weights_truncated", ["inspect", folder("truncated", weights_bytes(f[:-1]))], "truncated.weights"))
    out.append(("weights_overlong", ["inspect", folder("overlong", weights_bytes(f + [1.0]))], "overlong.weights"))
    g = list(f); g[L0_W + 5] = float("nan")
    out.append(("weights_nan", ["inspect", folder("nan", weights_bytes(g))], "nan.weights"))
    g = list(f); g[L2_B + 1] = float("inf")
    out.append(("weights_inf_bias", ["inspect", folder("inf_bias", weights_bytes(g))], "inf_bias.weights"))
    g = list(f); g[L0_VAR + 1] = -0.25
    out.append(("weights_negative_variance", ["inspect", folder("negative_variance", weights_bytes(g))],
                "negative_variance.weights"))
    g = list(f); g[4 + 2] = 1e38; g[L0_VAR + 2] = 0.0  # finite, but folding BN overflows
    out.append(("weights_bn_overflow", ["inspect", folder("bn_overflow", weights_bytes(g))], "bn_overflow.weights"))
    out.append(("weights_empty", ["inspect", folder("empty", b"")], "empty.weights"))
    # A folder without weights is read as cfg only (inspect allows that), so name the missing file.
    d = folder("missing", None)
    out.append(("weights_missing", ["inspect", os.path.join(d, "tiny.cfg"), "--weights",
                                    os.path.join(d, "missing.weights")], "missing.weights"))
    return out


def check_error_run(name, rc, err, fname, must):
    """None if the run is a proper error run, else why not."""
    if rc < 0:
        return "killed by signal %d" % -rc
    if rc != 1:
        return "exit status %d, expected 1" % rc
    for bad in ("Sanitizer", "Segmentation"):
        if bad in err:
            return "stderr mentions %s: %r" % (bad, err[:300])
    lines = err.splitlines()
    if len(lines) != 1:
        return "%d lines on stderr, expected 1: %r" % (len(lines), err[:300])
    if not lines[0].startswith("yquant: "):
        return "stderr does not start with 'yquant: ': %r" % lines[0]
    if fname not in lines[0]:
        return "stderr does not name %s: %r" % (fname, lines[0])
    if must and must not in lines[0]:
        return "stderr does not say %r: %r" % (must, lines[0])
    return None


def check_case(name, args, fname, must=None):
    rc, out, err = run(args)
    if fname is None:  # a valid input
        if rc != 0 or err:
            report("FAIL", name, "exit %d, stderr %r" % (rc, err[:300]))
        elif "total: 8 layers (3 conv), 321 params" not in out:
            report("FAIL", name, "unexpected table: %r" % out[-300:])
        else:
            report("PASS", name)
        return
    why = check_error_run(name, rc, err, fname, must)
    report("FAIL" if why else "PASS", name, why or "")


def valgrind_case(name, args, fname):
    """(status, name, why) for one case under valgrind."""
    try:
        rc, _, err = run(args, prefix=[VALGRIND] + VG_ARGS, timeout=600)
    except subprocess.TimeoutExpired:
        return ("FAIL", "valgrind_" + name, "timed out")
    if rc == VG_STATUS:
        return ("FAIL", "valgrind_" + name, "valgrind errors: %s" % err[-1500:])
    want = 0 if fname is None else 1
    if rc != want:
        return ("FAIL", "valgrind_" + name, "exit status %d under valgrind, expected %d" % (rc, want))
    return ("PASS", "valgrind_" + name, "")


def check_yolov3():
    cfg = os.path.join(DATA, "models", "cfg-only", "yolov3.cfg")
    if not os.path.exists(cfg):
        for n in ("inspect_yolov3_416", "inspect_yolov3_json_file", "inspect_yolov3_json_stdout"):
            report("SKIP", n, "%s not found (set YQ_DATA)" % cfg)
        return
    rc, out, err = run(["inspect", "yolov3", "--size", "416"])
    if rc != 0 or err:
        report("FAIL", "inspect_yolov3_416", "exit %d, stderr %r" % (rc, err[:300]))
    elif not re.search(r"^total: 107 layers \(75 conv\), .* 65\.86 GFLOPs at 416x416$", out, re.M):
        report("FAIL", "inspect_yolov3_416", "no '107 layers (75 conv) ... 65.86 GFLOPs at 416x416' line: %r" % out[-300:])
    else:
        report("PASS", "inspect_yolov3_416")

    def check_json(name, text):
        try:
            j = json.loads(text)
        except ValueError as e:
            return "not valid JSON (%s); starts %r" % (e, text[:80])
        layers = j.get("layers")
        if not isinstance(layers, list) or len(layers) != 107 or j.get("layers_total") != 107:
            return "%s layers, layers_total %s, expected 107" % (len(layers) if isinstance(layers, list) else None,
                                                                 j.get("layers_total"))
        if j.get("convs") != 75 or round(j.get("gflops", 0), 2) != 65.86:
            return "convs %s, gflops %s" % (j.get("convs"), j.get("gflops"))
        if j.get("input") != {"width": 416, "height": 416, "channels": 3}:
            return "input %s" % j.get("input")
        return None

    with tempfile.TemporaryDirectory(prefix="yq_cli_json.") as tmp:
        path = os.path.join(tmp, "yolov3.json")
        rc, out, err = run(["inspect", "yolov3", "--size", "416", "--json", path])
        why = "exit %d, stderr %r" % (rc, err[:300]) if rc or err else None
        if not why:
            with open(path) as f:
                why = check_json("file", f.read())
        report("FAIL" if why else "PASS", "inspect_yolov3_json_file", why or "")
    # '--json -': stdout must be the JSON document alone, so that it can be piped.
    rc, out, err = run(["inspect", "yolov3", "--size", "416", "--json", "-"])
    why = "exit %d, stderr %r" % (rc, err[:300]) if rc or err else check_json("stdout", out)
    report("FAIL" if why else "PASS", "inspect_yolov3_json_stdout", why or "")


def check_tables():
    """inspect on a package with activation tables (the fuzzer's seed of tiny_table.cfg): its mish and
    logistic convs are int8 with a table, in the text and in the JSON; the head conv is not."""
    pkg = os.path.join(ROOT, "fuzz", "corpus", "package", "tables.h5")
    rc, out, err = run(["inspect", pkg, "--json", "-"])
    why = "exit %d, stderr %r" % (rc, err[:300]) if rc or err else None
    if not why:
        try:
            convs = [l for l in json.loads(out)["layers"] if l["type"] == "conv"]
            got = [(l["index"], l.get("precision"), l.get("activation_table", False)) for l in convs]
            if got != [(0, "int8", True), (1, "int8", True), (3, "fp16w", False)]:
                why = "convs %r" % got
        except (ValueError, KeyError) as e:
            why = "bad JSON: %s" % e
    if not why:
        rc, out, err = run(["inspect", pkg])
        tab = [l for l in out.splitlines() if "[int8 table " in l]
        if rc or len(tab) != 2 or "mish" not in tab[0] or "logistic" not in tab[1]:
            why = "text: exit %d, table lines %r" % (rc, tab)
    report("FAIL" if why else "PASS", "inspect_tables", why or "")


def check_usage():
    for name, args in (("help", ["--help"]), ("inspect_help", ["inspect", "--help"])):
        rc, out, err = run(args)
        if rc != 0 or err or not out.startswith(("yquant", "usage: yquant")):
            report("FAIL", name, "exit %d, stdout %r, stderr %r" % (rc, out[:80], err[:200]))
        else:
            report("PASS", name)
    for name, args, opt in (("inspect_unknown_option", ["inspect", "tests/fixtures/tiny.cfg", "--frobnicate"], "--frobnicate"),
                            ("unknown_command_option", ["--frobnicate"], "--frobnicate")):
        rc, out, err = run(args)
        lines = err.splitlines()
        if rc != 2:
            report("FAIL", name, "exit %d, expected 2" % rc)
        elif len(lines) != 1 or not lines[0].startswith("yquant: ") or opt not in lines[0]:
            report("FAIL", name, "stderr %r" % err[:300])
        else:
            report("PASS", name)


def check_device_strings():
    """Every device option goes through the one parser (yq_device_parse): the same values are
    refused with one usage line (exit 2) before any work, whichever command reads them."""
    cfg = "tests/fixtures/tiny.cfg"
    why = []
    for bad in ("cuda:1024", "cuda:-1", "cuda:1x", "CPU", "cuda:"):
        for args in (["bench", cfg, "--device", bad], ["tune", cfg, "--device", bad],
                     ["quantize", cfg, "--calib", "tests/fixtures", "--calib-device", bad, "--no-val"],
                     ["quantize", cfg, "--calib", "tests/fixtures", "--target", bad, "--no-val"],
                     ["sweep", cfg, "--calib", "tests/fixtures", "--val", "tests/fixtures", "--labels", "tests/fixtures",
                      "--grid", "bits=8", "--device", bad]):
            rc, out, err = run(args, timeout=60)
            lines = err.strip().splitlines()
            if rc != 2 or len(lines) != 1 or bad not in lines[0]:
                why.append("%s: exit %d, %r" % (" ".join(args[:1] + args[-2:]), rc, err[-160:]))
    report("FAIL" if why else "PASS", "device_strings_one_parser", "; ".join(why[:4]))


def check_tune():
    """`yquant tune`: its help, and one clear line (exit 1; 2 for usage) for a missing or
    damaged package, a bad tuning log, and no GPU; with a GPU, a tiny model tunes."""
    rc, out, err = run(["tune", "--help"])
    opts = ["--batch", "--budget", "--trials", "--early-stopping", "--tuner", "--log", "--seed", "--families",
            "--retune", "--no-write", "--json", "--device", "--weights", "--size", "--head"]
    missing = [o for o in opts if o not in out]
    if rc != 0 or err or missing:
        report("FAIL", "tune_help", "exit %d, stderr %r, options not in --help: %s" % (rc, err[:200], missing))
    else:
        report("PASS", "tune_help")
    tiny = os.path.join("tests", "fixtures", "tiny.cfg")
    with tempfile.TemporaryDirectory(prefix="yq_cli_tune.") as tmp:
        missing_pkg = os.path.join(tmp, "nowhere", "m.yqp")
        rc, out, err = run(["tune", missing_pkg])
        why = check_error_run("tune_missing_package", rc, err, missing_pkg, None)
        report("FAIL" if why else "PASS", "tune_missing_package", why or "")

        fake = os.path.join(tmp, "fake.yqp")
        with open(fake, "w") as f:
            f.write("not a package\n")
        rc, out, err = run(["tune", fake])
        why = check_error_run("tune_not_a_package", rc, err, fake, "not a yquant package")
        report("FAIL" if why else "PASS", "tune_not_a_package", why or "")

        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"key":"c3x32x32-f4-k3s1p1-g1-u8s8-b1","arch":"sm_90","cfg":"dp4a_64x64","ok":true,"us":2}\n')
            f.write('{"key":"c3x32x32-f4-k3s1p1-g1-u8s8-b1","arch":"sm_90","cfg":"mma_9x9x9_s9","ok":true,"us":2}\n')
        rc, out, err = run(["tune", tiny, "--weights", "synthetic", "--log", bad])
        why = check_error_run("tune_bad_log", rc, err, bad + ":2:", "unknown kernel configuration 'mma_9x9x9_s9'")
        report("FAIL" if why else "PASS", "tune_bad_log", why or "")

        log = os.path.join(tmp, "ok.jsonl")
        rc, out, err = run(["tune", tiny, "--weights", "synthetic", "--log", log, "--budget", "60"])
        if "no CUDA device" in err:
            why = check_error_run("tune_no_gpu", rc, err, "tune", "no CUDA device")
            report("FAIL" if why else "PASS", "tune_no_gpu", why or "")
        elif rc != 0 or not os.path.exists(log) or os.path.getsize(log) == 0:
            report("FAIL", "tune_no_gpu", "with a GPU: exit %d, stderr %r" % (rc, err[-300:]))
        else:
            report("PASS", "tune_no_gpu", "")   # a GPU is present: the tiny model was tuned

    for name, args, opt in (("tune_unknown_tuner", ["tune", tiny, "--tuner", "xgb"], "--tuner xgb"),
                            ("tune_cpu_device", ["tune", tiny, "--device", "cpu"], "--device cpu"),
                            ("tune_bad_trials", ["tune", tiny, "--trials", "-1"], "--trials: '-1'"),
                            ("bench_tune_cpu", ["bench", tiny, "--weights", "synthetic", "--device", "cpu", "--tune"],
                             "--tune")):
        rc, out, err = run(args)
        lines = err.splitlines()
        if rc != 2:
            report("FAIL", name, "exit %d, expected 2 (stderr %r)" % (rc, err[:200]))
        elif len(lines) != 1 or not lines[0].startswith("yquant: ") or opt not in lines[0]:
            report("FAIL", name, "stderr %r" % err[:300])
        else:
            report("PASS", name)


def check_reproducible():
    """The same quantize with SOURCE_DATE_EPOCH set writes the same package bytes twice
    (no times but 'created' in the file); and the package calibrated on the GPU
    (--calib-device cuda) is the one calibrated on the CPU, byte for byte (issue 14:
    calibration in the exact FP32 definition on both engines).  The second needs a GPU."""
    model = os.path.join(DATA, "models", "yolo-fastest-1.1")
    samples = os.path.join(DATA, "datasets", "darknet-samples")
    if not os.path.isdir(model) or not os.path.isdir(samples):
        for n in ("quantize_reproducible", "quantize_calib_device_same_package"):
            report("SKIP", n, "%s or %s not found" % (model, samples))
        return
    os.environ["SOURCE_DATE_EPOCH"] = "1764806400"
    try:
        with tempfile.TemporaryDirectory(prefix="yq_cli_repro.") as tmp:
            def quantize(out, device):
                return run(["quantize", model, "--calib", samples, "--calib-device", device, "--no-val",
                            "--no-tune", "--layers", "0", "--calib-cache", os.path.join(tmp, "c-%s.h5" % device),
                            "-o", os.path.join(tmp, out)])

            def digest(name):
                with open(os.path.join(tmp, name), "rb") as f:
                    return hashlib.sha256(f.read()).hexdigest()

            runs = [quantize(n, "cpu") for n in ("a.yqp", "b.yqp")]
            bad = [r for r in runs if r[0] != 0]
            if bad:
                report("FAIL", "quantize_reproducible", "exit %d: %r" % (bad[0][0], bad[0][2][-300:]))
            elif digest("a.yqp") != digest("b.yqp"):
                report("FAIL", "quantize_reproducible", "two runs wrote different bytes")
            else:
                report("PASS", "quantize_reproducible")
            rc, out, err = quantize("g.yqp", "cuda")
            fell_back = [l for l in err.splitlines() if "calibrating on the CPU" in l]
            if fell_back:   # no GPU (or no cuDNN): quantize said so and calibrated on the CPU
                report("SKIP", "quantize_calib_device_same_package", "no GPU here: " + fell_back[0][:140])
            elif rc != 0:
                report("FAIL", "quantize_calib_device_same_package", "exit %d: %r" % (rc, err[-300:]))
            elif not bad and digest("g.yqp") != digest("a.yqp"):
                report("FAIL", "quantize_calib_device_same_package",
                       "--calib-device cuda and cpu wrote different packages")
            elif not bad:
                report("PASS", "quantize_calib_device_same_package")
    finally:
        del os.environ["SOURCE_DATE_EPOCH"]


def check_hardening():
    """Outputs onto inputs refused before any work, with the input intact; --max-dets out of
    range; a damaged package named as one; two .cfg files named; -o into a missing folder
    refused before calibration (issue 15)."""
    model = os.path.join(DATA, "models", "yolo-fastest-1.1")
    samples = os.path.join(DATA, "datasets", "darknet-samples")
    if not os.path.isdir(model) or not os.path.isdir(samples):
        report("SKIP", "harden_cli", "%s or %s not found" % (model, samples))
        return
    with tempfile.TemporaryDirectory(prefix="yq_cli_harden.") as tmp:
        m = os.path.join(tmp, "m")
        shutil.copytree(model, m)
        cal = os.path.join(tmp, "cal")
        os.mkdir(cal)
        for f in sorted(os.listdir(samples))[:3]:
            if f.endswith(".jpg"):
                shutil.copy(os.path.join(samples, f), cal)
        weights = [f for f in os.listdir(m) if f.endswith(".weights")][0]
        img = sorted(f for f in os.listdir(cal) if f.endswith(".jpg"))[0]

        def digest(path):
            with open(path, "rb") as fh:
                return hashlib.sha256(fh.read()).hexdigest()

        def refused(name, args, victim, must):
            before = digest(victim)
            rc, out, err = run(args, timeout=120)
            why = check_error_run(name, rc, err, os.path.basename(victim), must)
            if not why and digest(victim) != before:
                why = "%s was changed" % victim
            if not why and "calibrat" in err.lower():
                why = "work started before the refusal: %r" % err[:200]
            report("FAIL" if why else "PASS", name, why or "")

        refused("harden_out_onto_weights", ["quantize", m, "--calib", cal, "--no-val", "-o", os.path.join(m, weights)],
                os.path.join(m, weights), "would overwrite an input")
        refused("harden_out_onto_calib_image", ["quantize", m, "--calib", cal, "--no-val", "-o", os.path.join(cal, img)],
                os.path.join(cal, img), "would overwrite an input")
        refused("harden_json_onto_image", ["detect", m, os.path.join(cal, img), "--json", os.path.join(cal, img)],
                os.path.join(cal, img), "would overwrite an input")
        cfg0 = [f for f in os.listdir(m) if f.endswith(".cfg")][0]
        refused("harden_inspect_json_onto_cfg", ["inspect", m, "--json", os.path.join(m, cfg0)],
                os.path.join(m, cfg0), "would overwrite an input")
        # a sweep's report folder that is the calibration folder: its PNGs would become calibration images
        ann = os.path.join(DATA, "datasets", "coco-mini", "annotations", "instances_val2017_mini.json")
        val = os.path.join(DATA, "datasets", "coco-mini", "val2017", "images")
        if os.path.exists(ann):
            before = sorted(os.listdir(cal))
            rc, out, err = run(["sweep", m, "--calib", cal, "--val", val, "--ann", ann, "--grid", "bits=8", "-o", cal], timeout=120)
            why = check_error_run("harden_sweep_out_is_calib", rc, err, "cal", "is an input folder")
            if not why and sorted(os.listdir(cal)) != before:
                why = "the calibration folder changed"
            report("FAIL" if why else "PASS", "harden_sweep_out_is_calib", why or "")
        # -o into a missing folder: refused before calibration
        rc, out, err = run(["quantize", m, "--calib", cal, "--no-val", "-o", os.path.join(tmp, "no", "x.yqp")], timeout=120)
        why = check_error_run("harden_out_missing_folder", rc, err, "x.yqp", "does not exist")
        report("FAIL" if why else "PASS", "harden_out_missing_folder", why or "")
        # a damaged JPEG given to detect: one line, a non-zero exit, libjpeg silent
        with open(os.path.join(cal, img), "rb") as fh:
            b = fh.read()
        cut = os.path.join(tmp, "cut.jpg")
        with open(cut, "wb") as fh:
            fh.write(b[:len(b) // 3] + b[len(b) // 3 + 20000:])
        rc, out, err = run(["detect", m, cut])
        lines = [l for l in err.splitlines() if "cut.jpg" in l or "Corrupt" in l or "libjpeg" in l]
        ok = rc == 1 and any("corrupt JPEG" in l for l in lines) and not any(l.startswith("Corrupt") for l in err.splitlines())
        report("PASS" if ok else "FAIL", "harden_detect_damaged_jpeg", "" if ok else "exit %d, %r" % (rc, err[:300]))
        # --max-dets: a usage error with a message, not a silent exit 1
        rc, out, err = run(["detect", m, os.path.join(cal, img), "--max-dets", "2000000000"])
        ok = rc == 2 and "--max-dets" in err and "Sanitizer" not in err
        report("PASS" if ok else "FAIL", "harden_max_dets", "" if ok else "exit %d, %r" % (rc, err[:200]))
        # a damaged package given to inspect says it is a damaged package
        bad = os.path.join(tmp, "bad.yqp")
        with open(bad, "wb") as fh:
            fh.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 200)
        rc, out, err = run(["inspect", bad])
        why = check_error_run("harden_inspect_damaged_package", rc, err, "bad.yqp", "damaged")
        report("FAIL" if why else "PASS", "harden_inspect_damaged_package", why or "")
        # two .cfg files in a model folder: both named
        cfg = [f for f in os.listdir(m) if f.endswith(".cfg")][0]
        shutil.copy(os.path.join(m, cfg), os.path.join(m, "other.cfg"))
        rc, out, err = run(["inspect", m])
        why = check_error_run("harden_two_cfgs", rc, err, "other.cfg", cfg)
        report("FAIL" if why else "PASS", "harden_two_cfgs", why or "")


def main():
    if not os.access(YQ, os.X_OK):
        print("FAIL cli_binary: %s not built (make build/yquant)" % YQ)
        return 1
    with tempfile.TemporaryDirectory(prefix="yq_cli_test.") as tmp:
        cases = [("cfg_" + f[:-4], ["inspect", os.path.join("tests", "fixtures", f), "--weights", "synthetic"], f, must)
                 for f, must in BROKEN_CFGS]
        cases += [(n, a, fn, None) for n, a, fn in weights_cases(tmp)]
        for name, args, fname, must in cases:
            check_case(name, args, fname, must)
        if VALGRIND:
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
                for r in ex.map(lambda c: valgrind_case(c[0], c[1], c[2]), cases):
                    results.append(r)
        else:
            for name, _, _, _ in cases:
                report("SKIP", "valgrind_" + name, "valgrind not installed")
    check_yolov3()
    check_tables()
    check_usage()
    check_device_strings()
    check_tune()
    check_reproducible()
    check_hardening()
    for status, name, why in results:
        print("%s %s%s" % (status, name, ": " + why if why else ""))
    return 1 if any(s == "FAIL" for s, _, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
