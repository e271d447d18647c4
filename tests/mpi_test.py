#!/usr/bin/env python3
"""yquant over MPI (issue 20): the same answers at any number of ranks, on the CPU.

With Open MPI's `mpirun --oversubscribe` (SKIP with one line where there is no mpirun, or
where build/yquant was built without MPI), on yolo-fastest-1.1-xl with 4 calibration images
(darknet samples) and 8 labelled validation images (coco-mini val2017, its COCO json):
  - eval, FP32 and int8 (--calib: rank 0 calibrates and fills the cache first): the --json
    and --dets files of -np 2 and -np 3 (an uneven split: 8 images over 3 ranks) byte-identical
    to one process's;
  - sweep, a 4-point grid: every point's qconfig, mAP, mAP50 and float convs in the --json file of
    -np 2 and -np 3 equal to one process's (latencies are measured, not compared: ranks share
    the CPU), and points.jsonl holds each point once;
  - --resume across different N: a 6-point grid with -np 3 in the -np 2 run's folder reads
    its 4 points back and computes the 2 others (the same mAPs as one process computes them);
  - sensitivity of 4 layers: the --json and sensitivity.csv of -np 2 and -np 3 byte-identical
    to one process's;
  - quantize --max-drop (head ranking, at most 3 float convs): the answer, its drop and every
    step's mAP in --json equal at -np 1, 2 and 3;
  - a rank that fails (rank 1's images missing, by Open MPI's MPMD form): the job exits non-zero,
    one line names rank 1, and no --json file (nor its temporary) is left;
  - a command that does not split (quantize without --max-drop) under -np 2: exit 2 and one
    line, from rank 0.
Prints PASS/FAIL/SKIP lines (counted by tests/run.sh); exits 0 if none failed.  YQ_BIN
overrides the binary, YQ_DATA the data folder."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
YQ = os.path.abspath(os.environ.get("YQ_BIN") or os.path.join(ROOT, "build", "yquant"))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
MODEL = "yolo-fastest-1.1-xl"
failed = 0


def report(name, ok, why=""):
    global failed
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}", flush=True)
    failed += not ok


def mpirun(np_, args, env):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np_), YQ] + args
    t = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return r, time.time() - t


def same_at_any_n(env, args_of, files_of, label):
    """Runs mpirun -np 1, 2, 3 with args_of(n); the files files_of(n) must exist and hold the
    same bytes at every N.  Returns {n: the files' bytes} (for more checks by the caller)."""
    outs, why = {}, []
    for n in (1, 2, 3):
        r, dt = mpirun(n, args_of(n), env)
        files = files_of(n)
        if r.returncode or not all(os.path.isfile(f) for f in files):
            why.append(f"-np {n}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        outs[n] = tuple(open(f, "rb").read() for f in files)
        print(f"# {label} -np {n}: {dt:.1f} s")
    for n in (2, 3):
        if n in outs and 1 in outs and outs[n] != outs[1]:
            why.append(f"-np {n}: {', '.join(os.path.basename(f) for f in files_of(n))} differ from one process's")
    return outs, why


def main():
    mr = shutil.which("mpirun")
    if not mr:
        print("SKIP mpi: no mpirun (Debian: openmpi-bin, libopenmpi-dev; scripts/install-deps.sh)")
        return 0
    if not os.access(YQ, os.X_OK):
        print(f"SKIP mpi: {YQ} not built")
        return 0
    if b"libmpi" not in subprocess.run(["ldd", YQ], capture_output=True).stdout:
        print(f"SKIP mpi: {YQ} was built without MPI (make with Open MPI's development files)")
        return 0
    val = os.path.join(DATA, "datasets", "coco-mini", "val2017", "images")
    ann = os.path.join(DATA, "datasets", "coco-mini", "annotations", "instances_val2017_mini.json")
    samples = os.path.join(DATA, "datasets", "darknet-samples")
    if not (os.path.isdir(val) and os.path.isfile(ann) and os.path.isdir(os.path.join(DATA, "models", MODEL))):
        print(f"SKIP mpi: the shared data is not at {DATA} (set YQ_DATA)")
        return 0
    env = dict(os.environ, YQ_DATA=DATA, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    with tempfile.TemporaryDirectory(prefix="yq_mpi_") as tmp:
        calib, images, labels = (os.path.join(tmp, n) for n in ("calib", "val", "labels"))
        for d in (calib, images, labels):
            os.makedirs(d)
        for f in ("dog.jpg", "horses.jpg", "person.jpg", "eagle.jpg"):
            os.symlink(os.path.join(samples, f), os.path.join(calib, f))
        lab_src = os.path.join(DATA, "datasets", "coco-mini", "val2017", "labels")
        for f in sorted(os.listdir(val))[:8]:
            os.symlink(os.path.join(val, f), os.path.join(images, f))
            stem = os.path.splitext(f)[0] + ".txt"
            if os.path.isfile(os.path.join(lab_src, stem)):
                os.symlink(os.path.join(lab_src, stem), os.path.join(labels, stem))
        cache = os.path.join(tmp, "calib.h5")

        # eval: FP32 and int8, byte for byte
        for prec, extra in (("fp32", []), ("int8", ["--calib", calib, "--calib-cache", cache])):
            paths = lambda n: (os.path.join(tmp, f"e_{prec}_{n}.json"), os.path.join(tmp, f"d_{prec}_{n}.json"))
            outs, why = same_at_any_n(
                env, lambda n: ["eval", MODEL, "--images", images, "--ann", ann, "--device", "cpu",
                                                "--json", paths(n)[0], "--dets", paths(n)[1], "-q"] + extra,
                paths, f"eval {prec}")
            if 1 in outs:
                print(f"# eval {prec}: mAP {json.loads(outs[1][0])['map']:.4f}")
            report(f"mpi_eval_{prec}_same_at_any_n", not why and len(outs) == 3, "; ".join(why))

        # sweep: 4 points at 1, 2, 3 ranks
        grid4 = "bits=8,6; calib=max,kl"
        common = ["sweep", MODEL, "--calib", calib, "--calib-cache", cache, "--images", images, "--ann", ann,
                  "--device", "cpu", "-q"]
        pts, why = {}, []
        for n in (1, 2, 3):
            out, js = os.path.join(tmp, f"s{n}"), os.path.join(tmp, f"s{n}.json")
            r, dt = mpirun(n, common + ["--grid", grid4, "--out", out, "--json", js], env)
            if r.returncode or not os.path.isfile(js):
                why.append(f"-np {n}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                continue
            pts[n] = [(p["name"], p["qconfig"], p["map"], p["map50"], p["float_convs"]) for p in json.load(open(js))["points"]]
            lines = [json.loads(l)["asked"] for l in open(os.path.join(out, "points.jsonl"))]
            if len(lines) != 4 or len(set(lines)) != 4:
                why.append(f"-np {n}: points.jsonl has {len(lines)} lines, {len(set(lines))} points")
            print(f"# sweep of 4 points -np {n}: {dt:.1f} s")
        for n in (2, 3):
            if n in pts and 1 in pts and pts[n] != pts[1]:
                why.append(f"-np {n}: points {pts[n]} vs one process's {pts[1]}")
        report("mpi_sweep_same_at_any_n", not why and len(pts) == 3 and len(pts[1]) == 4, "; ".join(why))

        # --resume with another N: 6 points in the -np 2 folder, 4 of them there
        grid6 = "bits=8,6,4; calib=max,kl"
        out, js, js1 = os.path.join(tmp, "s2"), os.path.join(tmp, "r3.json"), os.path.join(tmp, "r1.json")
        r, _ = mpirun(3, common + ["--grid", grid6, "--out", out, "--json", js, "--resume"], env)
        r1, _ = mpirun(1, common + ["--grid", grid6, "--out", os.path.join(tmp, "r1"), "--json", js1], env)
        why = []
        if r.returncode or r1.returncode or not os.path.isfile(js) or not os.path.isfile(js1):
            why.append(f"exit {r.returncode} / {r1.returncode}: {r.stderr.strip()[-300:]} {r1.stderr.strip()[-200:]}")
        else:
            got = json.load(open(js))["points"]
            ref = json.load(open(js1))["points"]
            resumed = sum(1 for p in got if p.get("resumed"))
            key = lambda ps: [(p["name"], p["qconfig"], p["map"], p["map50"]) for p in ps]
            if resumed != 4 or key(got) != key(ref):
                why.append(f"{resumed} points resumed (want 4); points equal to one process's: {key(got) == key(ref)}")
            n_lines = sum(1 for _ in open(os.path.join(out, "points.jsonl")))
            if n_lines != 6:
                why.append(f"points.jsonl: {n_lines} lines, want 6")
        report("mpi_sweep_resume_other_n", not why, "; ".join(why))

        # sensitivity: 4 layers split over 1, 2, 3 ranks (rank r measures rows r, r + N, ...)
        outs, why = same_at_any_n(
            env,
            lambda n: ["sensitivity", MODEL, "--calib", calib, "--calib-cache", cache, "--val", images, "--ann", ann,
                       "--calib-device", "cpu", "--layers", "4", "--sqnr-images", "2", "-o",
                       os.path.join(tmp, f"sens{n}"), "--json", os.path.join(tmp, f"sens{n}.json"), "-q"],
            lambda n: (os.path.join(tmp, f"sens{n}.json"), os.path.join(tmp, f"sens{n}", "sensitivity.csv")),
            "sensitivity of 4 layers")
        if 1 in outs and len(json.loads(outs[1][0])["layers"]) != 4:
            why.append("one process's table does not have 4 layers")
        report("mpi_sensitivity_same_at_any_n", not why and len(outs) == 3, "; ".join(why))

        # quantize --max-drop, head ranking: the ranking's head SQNRs and the steps split
        got, why = {}, []
        for n in (1, 2, 3):
            js = os.path.join(tmp, f"md{n}.json")
            r, dt = mpirun(n, ["quantize", MODEL, "--calib", calib, "--calib-cache", cache, "--val", images, "--ann",
                               ann, "--max-drop", "0", "--max-float", "3", "--rank", "head", "--target", "cpu",
                               "--lat-device", "cpu", "-o", os.path.join(tmp, f"md{n}.yqp"), "--json", js, "-q"], env)
            if r.returncode not in (0, 3) or not os.path.isfile(js):     # 3: the budget not met
                why.append(f"-np {n}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                continue
            md = json.load(open(js))["max_drop"]
            got[n] = (md["float_layers"], md["met"], md["drop_pts"], [s["map"] for s in md["steps"]],
                      [s.get("layers") for s in md["steps"]])
            if n > 1 and os.path.exists(os.path.join(tmp, f"md{n}.yqp")) != os.path.exists(os.path.join(tmp, "md1.yqp")):
                why.append(f"-np {n}: the package is not written as one process writes it")
            print(f"# quantize --max-drop (head) -np {n}: {dt:.1f} s, {len(got[n][3])} steps, float {got[n][0]}")
        for n in (2, 3):
            if n in got and 1 in got and got[n] != got[1]:
                why.append(f"-np {n}: {got[n]} vs one process's {got[1]}")
        report("mpi_max_drop_same_at_any_n", not why and len(got) == 3, "; ".join(why))

        # a rank that fails: rank 1 of 2 gets a validation folder that does not exist
        # (Open MPI's MPMD form gives each rank its own command line)
        js = os.path.join(tmp, "fail.json")
        args = ["eval", MODEL, "--ann", ann, "--device", "cpu", "--json", js, "-q"]
        cmd = ["mpirun", "--oversubscribe", "-np", "1", YQ] + args + ["--images", images, ":", "-np", "1", YQ] + args + \
              ["--images", os.path.join(tmp, "no-such-folder")]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        left = [f for f in os.listdir(tmp) if f.startswith("fail.json")]
        named = [l for l in r.stderr.splitlines() if l.startswith("yquant: rank 1 of 2 failed")]
        report("mpi_rank_failure", r.returncode != 0 and len(named) == 1 and "no-such-folder" in r.stderr and not left,
               f"exit {r.returncode}, {len(named)} 'rank 1 of 2 failed' lines, left behind: {left}: {r.stderr.strip()[-300:]}")

        # a command that does not split its work
        r, _ = mpirun(2, ["quantize", MODEL, "--calib", calib, "--no-val", "-o", os.path.join(tmp, "x.yqp")], env)
        lines = [l for l in r.stderr.splitlines() if l.startswith("yquant")]
        report("mpi_unsupported_command", r.returncode == 2 and len(lines) == 1 and "does not run over MPI" in lines[0]
               and not os.path.exists(os.path.join(tmp, "x.yqp")), f"exit {r.returncode}: {r.stderr.strip()[-300:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
