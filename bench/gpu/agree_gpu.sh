#!/usr/bin/env bash
# Issue 14's end-to-end agreement test: the same packages evaluated on the CPU int8 reference
# (here) and on the GPU (the device machine), detections compared one to one and mAP side by
# side (tests/tools/compare_dets.py: 99.5% of detections the same class with box within
# 0.5 px and score within 1e-3, mAP@[.5:.95] within 0.05 points).
#
#   bench/gpu/agree_gpu.sh pack   here: quantizes every shared model four ways (below,
#                                 --no-val: the evaluation is separate) into .gpuagree-pkg/, and
#                                 evaluates each package here on the CPU on every image set of
#                                 $SETS (yquant eval --dets, into .gpuagree-cpu/SET/)
#   bench/gpu/agree_gpu.sh stage SET...   here: builds yqgpu for the H200 (sm_90 only, in
#                                 $YQ_BUILD, default build/dev) from the working tree and puts
#                                 in .gpuagree/ what travels: the program and the packages
#                                 xz-compressed (6 + 6 MB, against 14 + 25 gzipped and plain),
#                                 and the images and annotations of those sets (replacing any
#                                 staged before).  Carry .gpuagree (64 MiB at most): the 287
#                                 images go in two runs, val2017 + train2017 (38 MB), coco128 (34)
#   bench/gpu/agree_gpu.sh run    there (carry .gpuagree), from the repository root: the same
#                                 evaluations with --device cuda on each staged set; their
#                                 detections and logs packed into $OUT/gpu_dets.tgz (default
#                                 OUT /tmp/gpuagree-out)
#   bench/gpu/agree_gpu.sh compare DIR...   here: each DIR holds a fetched gpu_dets.tgz; the
#                                 comparison table per set and package (and agree.json in the
#                                 first DIR), then the totals over the sets
#
# Image sets (SETS, default all three: the 287 labelled shared images): val2017 and train2017
# (coco-mini, 79 and 80 images), coco128 (128).
# The four packages of each model (what issue 14 asks for):
#   default   the default qconfig (float heads, keep_float 5: float layers in exact FP32)
#   head8     head = int8 (keep_float's float layers stay)
#   skip      the default plus skip_layers 5,9
#   int8      every layer int8 (keep_float 0, head int8)
# Every one must give the same head tensors on both engines (the float layers' FP32 is defined
# to the bit), so the detections match to the decode's float rounding.
# Environment: YQ_DATA (pack, stage; default ../shared), YQ_BUILD (pack), SETS (pack), MODELS
# (pack, default the five shared models with weights), PYTHON (compare, default python3).
set -uo pipefail
cd "$(dirname "$0")/../.."
D=.gpuagree
PKG=.gpuagree-pkg
CPU=.gpuagree-cpu
SETS="${SETS:-val2017 train2017 coco128}"
DATA="${YQ_DATA:-../shared}"
PY="${PYTHON:-python3}"
MODELS="${MODELS:-yolo-fastest-1.1-xl yolo-fastest-1.1 yolo-fastest-1.0 yolo-fastest-xl-1.0 yolo-lite-coco-trial6}"
set_images() {   # set_images SET: its image folder
    case "$1" in
    val2017|train2017) echo "$DATA/datasets/coco-mini/$1/images" ;;
    coco128) echo "$DATA/datasets/coco128/images" ;;
    *) echo "agree_gpu: unknown image set $1 (val2017, train2017, coco128)" >&2; return 1 ;;
    esac
}
set_ann() {      # set_ann SET: its annotations
    case "$1" in
    val2017|train2017) echo "$DATA/datasets/coco-mini/annotations/instances_$1_mini.json" ;;
    coco128) echo "$DATA/datasets/coco128/annotations/instances_train2017_coco128.json" ;;
    esac
}
variant_args() {
    case "$1" in
    default) ;;
    head8) echo "--set head=int8" ;;
    skip) echo "--skip-layers 5,9" ;;
    int8) echo "--set keep_float=0 --set head=int8" ;;
    esac
}

case "${1:-}" in
pack)
    for set in $SETS; do
        im=$(set_images "$set") || exit 1
        [ -d "$im" ] && [ -f "$(set_ann "$set")" ] || { echo "agree_gpu: no images or annotations for $set" >&2; exit 1; }
    done
    CAL="$DATA/datasets/coco-mini/val2017_unlabelled/images"
    make -j2 all >/dev/null || exit 1
    rm -rf "$PKG" "$CPU" && mkdir -p "$PKG" "$CPU" || exit 1
    for m in $MODELS; do
        for v in default head8 skip int8; do
            n="$m-$v"
            # shellcheck disable=SC2046
            build/yquant quantize "$DATA/models/$m" --calib "$CAL" --no-val --layers 0 --no-tune $(variant_args "$v") \
                -o "$PKG/$n.yqp" > "$PKG/$n.log" 2>&1 || { echo "agree_gpu: quantize $n failed:"; tail -3 "$PKG/$n.log"; exit 1; }
            for set in $SETS; do
                mkdir -p "$CPU/$set"
                build/yquant eval "$PKG/$n.yqp" --images "$(set_images "$set")" --ann "$(set_ann "$set")" --device cpu \
                    --dets "$CPU/$set/$n.json" --json "$CPU/$set/$n.stats.json" > "$CPU/$set/$n.log" 2>&1 ||
                    { echo "agree_gpu: cpu eval $n on $set failed:"; tail -3 "$CPU/$set/$n.log"; exit 1; }
            done
            echo "packed $n"
        done
    done
    printf '%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +changes)" > "$PKG/commit"
    du -sh "$PKG"
    ;;
stage)
    shift
    [ $# -gt 0 ] || { echo "agree_gpu: stage SET... (val2017, train2017, coco128)" >&2; exit 2; }
    [ -f "$PKG/commit" ] || { echo "agree_gpu: no packages in $PKG (run pack first)" >&2; exit 1; }
    B="${YQ_BUILD:-build/dev}"
    make -j2 B="$B" NVCC_ARCHS="-gencode arch=compute_90,code=sm_90" "$B/gpu/yqgpu" >/dev/null || exit 1
    rm -rf "$D" && mkdir -p "$D/data" || exit 1
    strip -o "$D/yqgpu" "$B/gpu/yqgpu" && xz -9 -T2 "$D/yqgpu" && cp "$B/gpu/libcjson.so.1" "$D/" || exit 1
    (cd "$PKG" && tar cJf - ./*.yqp) > "$D/pkg.tar.xz" || exit 1
    printf 'packages %s, yqgpu %s\n' "$(cat "$PKG/commit")" \
        "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +changes)" > "$D/commit"
    for set in "$@"; do
        im=$(set_images "$set") || exit 1
        mkdir -p "$D/data/$set/images" && cp "$im/"* "$D/data/$set/images/" && cp "$(set_ann "$set")" "$D/data/$set/ann.json" || exit 1
    done
    du -sh "$D"
    ;;
run)
    OUT="${OUT:-/tmp/gpuagree-out}"
    mkdir -p "$OUT" || exit 1
    # unpacked with Python's lzma (the machine may have no xz) into a folder of its own
    X=$(mktemp -d)
    python3 - "$D" "$X" <<'PYEOF' || exit 1
import lzma, shutil, sys, tarfile
d, x = sys.argv[1:]
with lzma.open(d + "/yqgpu.xz") as f, open(x + "/yqgpu", "wb") as o:
    shutil.copyfileobj(f, o)
with tarfile.open(d + "/pkg.tar.xz") as t:
    t.extractall(x + "/pkg")
shutil.copy(d + "/libcjson.so.1", x)
PYEOF
    chmod +x "$X/yqgpu" || exit 1
    # shellcheck source=/dev/null
    . bench/gpu/env.sh
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
    echo "commit $(cat "$D/commit")" | tee -a "$OUT/gpu.txt"
    G=$(mktemp -d)
    for sd in "$D"/data/*/; do
        set=$(basename "$sd")
        mkdir -p "$G/$set"
        for p in "$X"/pkg/*.yqp; do
            n=$(basename "$p" .yqp)
            "$X/yqgpu" yquant eval "$p" --images "$sd/images" --ann "$sd/ann.json" --device cuda \
                --dets "$G/$set/$n.json" --json "$G/$set/$n.stats.json" > "$G/$set/$n.log" 2>&1 ||
                { echo "agree_gpu: gpu eval $n on $set failed:"; tail -3 "$G/$set/$n.log"; continue; }
        done
        echo "evaluated $(ls "$X"/pkg/*.yqp | wc -l) packages on $set on the GPU"
    done
    cp "$OUT/gpu.txt" "$G/" && tar czf "$OUT/gpu_dets.tgz" -C "$G" . && rm -rf "$G" "$X"
    ;;
compare)
    shift
    [ $# -gt 0 ] || { echo "agree_gpu: compare DIR... (where each gpu_dets.tgz is)" >&2; exit 2; }
    G=$(mktemp -d)
    args=()
    for dir in "$@"; do
        t=$(mktemp -d -p "$G")
        tar xzf "$dir/gpu_dets.tgz" -C "$t" || exit 1
        cat "$t/gpu.txt"
        for sd in "$t"/*/; do
            set=$(basename "$sd")
            for c in "$CPU/$set"/*.stats.json; do
                n=$(basename "$c" .stats.json)
                if [ -f "$sd/$n.json" ]; then args+=("$set/$n" "$CPU/$set/$n.json" "$sd/$n.json")
                else echo "agree_gpu: no GPU result for $n on $set"; fi
            done
        done
    done
    "$PY" tests/tools/compare_dets.py --json "$1/agree.json" "${args[@]}"
    rc=$?
    "$PY" - "$1/agree.json" <<'PYEOF'
import json, sys
from collections import defaultdict
rows = json.load(open(sys.argv[1]))
tot = defaultdict(lambda: [0, 0, 0, 0, 0.0, 0])
for r in rows:
    t = tot[r["name"].split("/", 1)[1]]
    t[0] += r["dets_a"]; t[1] += r["dets_b"]; t[2] += r["matched"]; t[3] += 1
    t[4] = max(t[4], r["map_diff_points"] or 0); t[5] += r["met"]
print("\ntotals over the sets: package, sets, detections A / B, matched, largest mAP difference, sets that met the bar")
for n in sorted(tot):
    a, b, m, k, d, met = tot[n]
    print("%-36s %d sets %7d %7d %7.2f%% %6.3f  %d of %d met" % (n, k, a, b, 100.0 * m / max(a, b, 1), d, met, k))
PYEOF
    rm -rf "$G"
    exit $rc
    ;;
*)
    sed -n '2,38p' "$0"
    exit 2
    ;;
esac
