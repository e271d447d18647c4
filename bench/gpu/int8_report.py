#!/usr/bin/env python3
"""The table of bench/gpu/int8_gpu.sh: yquant int8 tuned against yquant FP16 per model and
batch (from the RESULT lines of each bench log), PyTorch FP16 (CUDA graph) and cuDNN's int8
convs from the same run where they were measured, issue 13's targets marked met or not,
YOLOv3's batch-32 layer table with % of the int8 mma.sync peak (1300 TOPS measured) and its
1x1 convs' bandwidth, and yolo-fastest-1.1-xl's depthwise convs' bandwidth (4.2 TB/s copy)."""
import json
import os
import re
import sys

MODELS = [("yolov3", "YOLOv3-416 (synthetic weights)"), ("yolov4", "YOLOv4-416 (synthetic weights)"),
          ("yolov4-tiny", "YOLOv4-tiny-416 (synthetic weights)"), ("fastest-1.1-xl", "yolo-fastest-1.1-xl (its weights)"),
          ("fastest-1.1", "yolo-fastest-1.1 (its weights)")]
PEAK = 1300.0
COPY_GBS = 4200.0   # device-to-device copy bandwidth measured on this H200 (GB/s)


def load_json(path):
    """The JSON at path, or {} when it is missing or unreadable (a step that did not run)."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def torch_fp16(path):
    """{batch: best ms} of PyTorch FP16 (the graph replay where it was captured)."""
    out = {}
    for r in load_json(path).get("results", []):
        if r.get("precision") != "fp16":
            continue
        ms = [v for v in (r.get("median_ms"), r.get("graph_median_ms")) if v and v > 0]
        if ms:
            out[r["batch"]] = min(ms)
    return out


def cudnn_int8(path):
    """{batch: text} of cuDNN's int8 convs (convs only): the fastest configuration that ran every
    conv, and where a configuration that refused some convs (cuDNN's graph API takes no grouped
    convs) was faster, that one too, with how many it ran: for a depthwise model the legacy path
    runs its grouped convs at a fraction of a TOP/s, which alone would read as cuDNN being slow
    everywhere."""
    full, part = {}, {}
    for c in load_json(path).get("configs", []):
        ran, n, ms = c.get("layers_ran", 0), c.get("layers", 0), c.get("sum_ms", 0)
        if ran <= 0 or ms <= 0:
            continue
        b = c["batch"]
        if ran == n:
            full[b] = min(full.get(b, 1e30), ms)
        elif b not in part or ms < part[b][0]:
            part[b] = (ms, ran, n)
    out = {}
    for b in set(full) | set(part):
        t = [f"{full[b]:.3f}"] if b in full else []
        if b in part and (b not in full or part[b][0] < full[b]):
            t.append(f"{part[b][0]:.3f} ({part[b][1]} of {part[b][2]} convs)")
        out[b] = "; ".join(t)
    return out


def shape_bytes(shape, batch):
    """int8 bytes a conv reads and writes: 'CxHxW -> FxOHxOW ...' at this batch."""
    m = re.match(r"(\d+)x(\d+)x(\d+) -> (\d+)x(\d+)x(\d+)", shape)
    if not m:
        return 0
    c, h, w, f, oh, ow = (int(g) for g in m.groups())
    return batch * (c * h * w + f * oh * ow)


def profile_convs(path):
    """(header, [(layer, us, tops, shape)]) of the tuned int8 profile of a bench --profile run:
    every conv from its --json (PATH with .json for .txt) where it exists, else the log's
    table (its 30 slowest nodes)."""
    rows, head, on = [], None, False
    for r in load_json(path[:-4] + ".json").get("results", []):
        if r.get("precision") == "int8" and r.get("kernels") == "tuned" and r.get("profile"):
            return ("json", [(e["layer"], e["us"], e.get("tops", 0), e["shape"]) for e in r["profile"]
                             if e.get("op") == "conv"])
    if not os.path.exists(path):
        return head, rows
    for line in open(path):
        if line.startswith("profile:"):
            on = line.startswith("profile: int8 yquant int8 tuned")
            if on:
                head = line.strip()
            continue
        if not on:
            continue
        m = re.match(r"\s+(\d+)\s+conv\s+([\d.]+)\s+[\d.]+%\s+([\d.]+)\s+(.*\S)", line)
        if m:
            rows.append((int(m.group(1)), float(m.group(2)), float(m.group(3)), m.group(4)))
        if line.startswith("  by op:"):
            on = False
    return head, rows


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
    print("| model | batch | yquant FP16 ms | yquant int8 tuned ms | int8 img/s | PyTorch FP16 graph ms | "
          "cuDNN int8 convs ms | int8 x yquant FP16 | int8 x PyTorch FP16 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios, vs_torch = {}, {}
    for key, label in MODELS:
        r = results(os.path.join(d, key + ".txt"))
        th = torch_fp16(os.path.join(d, key + ".torch.json"))
        dn = cudnn_int8(os.path.join(d, key + ".cudnn8.json"))
        for b in sorted({k[1] for k in r}):
            f, i = r.get(("fp16", b, "")), r.get(("int8", b, "tuned"))
            if not f or not i:
                continue
            ratios[(key, b)] = (f, i)
            t = th.get(b)
            if t:
                vs_torch[(key, b)] = t / i
            ms = lambda v: f"{v:.3f}" if v else "-"
            xt = f"{t / i:.2f}" if t else "-"
            print(f"| {label} | {b} | {f:.3f} | {i:.3f} | {b / i * 1e3:.0f} | {ms(t)} | {dn.get(b, '-')} | {f / i:.2f} | {xt} |")
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
        for b in (8, 32, 128):
            if (key, b) in vs_torch:
                x = vs_torch[(key, b)]
                print(f"- {label}, batch {b}: int8 {x:.2f}x PyTorch FP16 (target 2x): {'met' if x >= 2 else 'NOT met'}")
        if (key, 1) in vs_torch:
            x = vs_torch[(key, 1)]
            print(f"- {label}, batch 1: int8 {x:.2f}x PyTorch FP16 (target: never slower): {'met' if x >= 1 else 'NOT met'}")
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


def bandwidth(d):
    """1x1 convs of YOLOv3 and depthwise convs of yolo-fastest-1.1-xl at batch 32: GB/s."""
    for key, what, pick in (("yolov3", "1x1 convs", lambda sh: " 1x1/" in sh),
                            ("fastest-1.1-xl", "depthwise convs", lambda sh: sh.endswith(" dw"))):
        head, rows = profile_convs(os.path.join(d, key + ".profile.txt"))
        rows = [r for r in rows if pick(r[3])]
        if not rows:
            continue
        print()
        print(f"{key}, batch 32, int8 tuned, {what} (each alone; int8 in and out, the weights left out; "
              f"heads write float: 4 bytes an output, counted as 1 here):")
        print()
        print("| layer | shape | us | GB/s | % of 4.2 TB/s |")
        print("|---:|---|---:|---:|---:|")
        for layer, us, _, shape in rows:
            gbs = shape_bytes(shape, 32) / (us * 1e-6) / 1e9
            print(f"| {layer} | {shape} | {us:.1f} | {gbs:.0f} | {100 * gbs / COPY_GBS:.0f}% |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
    bandwidth(sys.argv[1] if len(sys.argv) > 1 else ".")
