#!/usr/bin/env python3
"""The table of bench/gpu/int8_gpu.sh: yquant int8 tuned against yquant FP16 per model and
batch (from the RESULT lines of each bench log), issue 13's targets marked met or not, and
YOLOv3's batch-32 layer table with % of the int8 mma.sync peak (1300 TOPS measured)."""
import os
import re
import sys

MODELS = [("yolov3", "YOLOv3-416 (synthetic weights)"), ("yolov4", "YOLOv4-416 (synthetic weights)"),
          ("yolov4-tiny", "YOLOv4-tiny-416 (synthetic weights)"), ("fastest-1.1-xl", "yolo-fastest-1.1-xl (its weights)"),
          ("fastest-1.1", "yolo-fastest-1.1 (its weights)")]
PEAK = 1300.0


def results(path):
    """{(precision, batch, kernels): best ms} from RESULT lines."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        if not line.startswith("RESULT engine=yquant precision="):
            continue
        kv = dict(re.findall(r"(\w+)=(\S+)", line))
        if "batch" not in kv:
            continue
        ms = [float(kv[k]) for k in ("median_ms", "graph_median_ms") if k in kv and float(kv[k]) > 0]
        if ms:
            out[(kv["precision"], int(kv["batch"]), kv.get("kernels", ""))] = min(ms)
    return out


def main(d):
    print(open(os.path.join(d, "env.txt")).read().strip() if os.path.exists(os.path.join(d, "env.txt")) else "")
    print()
    print("| model | batch | FP16 ms | int8 tuned ms | int8 img/s | x FP16 (> 1: int8 faster) |")
    print("|---|---:|---:|---:|---:|---:|")
    ratios = {}
    for key, label in MODELS:
        r = results(os.path.join(d, key + ".txt"))
        for b in sorted({k[1] for k in r}):
            f, i = r.get(("fp16", b, "")), r.get(("int8", b, "tuned"))
            if not f or not i:
                continue
            ratios[(key, b)] = (f, i)
            print(f"| {label} | {b} | {f:.3f} | {i:.3f} | {b / i * 1e3:.0f} | {f / i:.2f} |")
    print()
    print("Targets (issue 13):")
    for key, label in MODELS:
        for b in (8, 32, 128):
            if (key, b) in ratios:
                f, i = ratios[(key, b)]
                print(f"- {label}, batch {b}: int8 {f / i:.2f}x FP16 (target 1.5x): {'met' if f / i >= 1.5 else 'NOT met'}")
        if (key, 1) in ratios:
            f, i = ratios[(key, 1)]
            print(f"- {label}, batch 1: int8 {f / i:.2f}x FP16 (target: never slower): {'met' if i <= f else 'NOT met'}")
    for key, b, ms, what in (("yolov3", 32, 4.5, "at most 4.5 ms"), ("yolov3", 1, 0.70, "at most 0.70 ms"),
                             ("fastest-1.1-xl", 1, 0.40, "at most 0.40 ms")):
        if (key, b) in ratios:
            i = ratios[(key, b)][1]
            print(f"- {key} batch {b} {what}: {i:.3f} ms: {'met' if i <= ms else 'NOT met'}")
    if ("fastest-1.1-xl", 32) in ratios:
        i = ratios[("fastest-1.1-xl", 32)][1]
        print(f"- fastest-1.1-xl batch 32 at least 25000 img/s: {32 / i * 1e3:.0f}: {'met' if 32 / i * 1e3 >= 25000 else 'NOT met'}")
    p = os.path.join(d, "yolov3.profile.txt")
    if os.path.exists(p):
        print()
        print("YOLOv3-416, batch 32, int8 tuned, each node alone (`yquant bench --profile`):")
        print()
        print("| layer | shape | us | TOPS | % of 1300 |")
        print("|---:|---|---:|---:|---:|")
        big = []
        on = False
        for line in open(p):
            if line.startswith("profile:"):
                on = line.startswith("profile: int8 yquant int8 tuned")
                if on:
                    print("    " + line.strip())
                    print()
                continue
            if not on:
                continue
            m = re.match(r"\s+(\d+)\s+conv\s+([\d.]+)\s+[\d.]+%\s+([\d.]+)\s+(.*\S)", line)
            if m:
                layer, us, tops, shape = int(m.group(1)), float(m.group(2)), float(m.group(3)), m.group(4)
                print(f"| {layer} | {shape} | {us:.1f} | {tops:.0f} | {100 * tops / PEAK:.0f}% |")
                if "3x3/1" in shape and shape.split()[0].split("x")[0] in ("128", "256", "512"):
                    big.append(tops)
            if line.startswith("  by op:"):
                print()
                print("    " + line.strip())
                on = False
        if big:
            print()
            print(f"- large 3x3/1 convs (128-512 input channels): {min(big):.0f}-{max(big):.0f} TOPS = "
                  f"{100 * min(big) / PEAK:.0f}-{100 * max(big) / PEAK:.0f}% of 1300 (target 60%): "
                  f"{'met' if min(big) >= 0.6 * PEAK else 'NOT met'}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
