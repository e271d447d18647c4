#!/usr/bin/env bash
# Issue 14's end-to-end agreement test: the same packages evaluated on the CPU int8 reference
# (here) and on the GPU (the device machine), detections compared one to one and mAP side by
# side (tests/tools/compare_dets.py: 99.5% of detections the same class with box within
# 0.5 px and score within 1e-3, mAP@[.5:.95] within 0.05 points).
#
#   bench/gpu/agree_gpu.sh pack   here: builds yqgpu for the H200 (sm_90 only, in $YQ_BUILD,
#                                 default build/dev), quantizes every shared model four ways
#                                 (below, --no-val: the evaluation is separate), evaluates each
#                                 package here on the CPU (yquant eval --dets, into
#                                 .gpuagree-cpu/), and puts the program, the packages and the
#                                 images of $SET (default coco-mini/val2017, 79 images) in
#                                 .gpuagree/ (carry it; about 50 MB)
#   bench/gpu/agree_gpu.sh run    there (carry .gpuagree), from the repository root: the same
#                                 evaluations with --device cuda; their detections and logs
#                                 packed into $OUT/gpu_dets.tgz (default OUT /tmp/gpuagree-out)
#   bench/gpu/agree_gpu.sh compare DIR   here: DIR holds the fetched gpu_dets.tgz; the
#                                 comparison table (and DIR/agree.json)
#
# The four packages of each model (what issue 14 asks for):
#   default   the default qconfig (float heads, keep_float 5: float layers fp16w)
#   head8     head = int8 (keep_float's float layers stay)
#   skip      the default plus skip_layers 5,9
#   int8      every layer int8 (keep_float 0, head int8): the GPU must give the same bytes,
#             so its detections must match to decode's float rounding
# Environment: YQ_DATA (pack, default ../shared), YQ_BUILD (pack), SET (pack), MODELS (pack,
# default the five shared models with weights), PYTHON (run, default python3).
set -uo pipefail
cd "$(dirname "$0")/../.."
D=.gpuagree
CPU=.gpuagree-cpu
SET="${SET:-coco-mini/val2017}"
PY="${PYTHON:-python3}"
MODELS="${MODELS:-yolo-fastest-1.1-xl yolo-fastest-1.1 yolo-fastest-1.0 yolo-fastest-xl-1.0 yolo-lite-coco-trial6}"
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
    DATA="${YQ_DATA:-../shared}"
    B="${YQ_BUILD:-build/dev}"
    ANN=$(ls "$DATA/datasets/$(dirname "$SET")/annotations/"*"$(basename "$SET")"*.json 2>/dev/null | head -1)
    [ -n "$ANN" ] && [ -d "$DATA/datasets/$SET/images" ] || { echo "agree_gpu: no images or annotations for $SET" >&2; exit 1; }
    CAL="$DATA/datasets/coco-mini/val2017_unlabelled/images"
    make -j2 all >/dev/null || exit 1
    make -j2 B="$B" NVCC_ARCHS="-gencode arch=compute_90,code=sm_90" "$B/gpu/yqgpu" >/dev/null || exit 1
    rm -rf "$D" "$CPU" && mkdir -p "$D/pkg" "$CPU" "$D/data/images" || exit 1
    strip -o "$D/yqgpu" "$B/gpu/yqgpu" && gzip -f9 "$D/yqgpu" && cp "$B/gpu/libcjson.so.1" "$D/" || exit 1
    cp "$DATA/datasets/$SET/images/"* "$D/data/images/" && cp "$ANN" "$D/data/ann.json" || exit 1
    for m in $MODELS; do
        for v in default head8 skip int8; do
            n="$m-$v"
            # shellcheck disable=SC2046
            build/yquant quantize "$DATA/models/$m" --calib "$CAL" --no-val --layers 0 --no-tune $(variant_args "$v") \
                -o "$D/pkg/$n.yqp" > "$D/pkg/$n.log" 2>&1 || { echo "agree_gpu: quantize $n failed:"; tail -3 "$D/pkg/$n.log"; exit 1; }
            build/yquant eval "$D/pkg/$n.yqp" --images "$D/data/images" --ann "$D/data/ann.json" --device cpu \
                --dets "$CPU/$n.json" --json "$CPU/$n.stats.json" > "$CPU/$n.log" 2>&1 ||
                { echo "agree_gpu: cpu eval $n failed:"; tail -3 "$CPU/$n.log"; exit 1; }
            echo "packed $n"
        done
    done
    printf '%s\n' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" > "$D/commit"
    du -sh "$D"
    ;;
run)
    OUT="${OUT:-/tmp/gpuagree-out}"
    mkdir -p "$OUT" || exit 1
    gunzip -kf "$D/yqgpu.gz" && chmod +x "$D/yqgpu" || exit 1
    # shellcheck source=/dev/null
    . bench/gpu/env.sh
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
    echo "commit $(cat "$D/commit")" | tee -a "$OUT/gpu.txt"
    G=$(mktemp -d)
    for p in "$D"/pkg/*.yqp; do
        n=$(basename "$p" .yqp)
        "$D/yqgpu" yquant eval "$p" --images "$D/data/images" --ann "$D/data/ann.json" --device cuda \
            --dets "$G/$n.json" --json "$G/$n.stats.json" > "$G/$n.log" 2>&1 ||
            { echo "agree_gpu: gpu eval $n failed:"; tail -3 "$G/$n.log"; continue; }
        echo "evaluated $n on the GPU"
    done
    cp "$OUT/gpu.txt" "$G/" && tar czf "$OUT/gpu_dets.tgz" -C "$G" . && rm -rf "$G"
    ;;
compare)
    DIR="${2:?agree_gpu: compare DIR (where gpu_dets.tgz is)}"
    G=$(mktemp -d)
    tar xzf "$DIR/gpu_dets.tgz" -C "$G" || exit 1
    cat "$G/gpu.txt"
    args=()
    for c in "$CPU"/*.stats.json; do
        n=$(basename "$c" .stats.json)
        if [ -f "$G/$n.json" ]; then args+=("$n" "$CPU/$n.json" "$G/$n.json"); else echo "agree_gpu: no GPU result for $n"; fi
    done
    "$PY" tests/tools/compare_dets.py --json "$DIR/agree.json" "${args[@]}"
    rm -rf "$G"
    ;;
*)
    sed -n '2,28p' "$0"
    exit 2
    ;;
esac
