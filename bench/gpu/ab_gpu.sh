#!/usr/bin/env bash
# A/B of two yquant GPU builds in one run: each bench (FP16 and int8 tuned, fresh tuning) with
# the old build, then with the new one, on four detectors; prints the RESULT lines prefixed
# "old MODEL" / "new MODEL".  Used for bench/results/int8_gpu_tables_2026-12-02.md.
#
#   OLD=path/to/old/yqgpu NEW=path/to/new/yqgpu YQ_DATA=... bench/gpu/ab_gpu.sh
set -uo pipefail
OLD="${OLD:?the old yqgpu}"
NEW="${NEW:?the new yqgpu}"
M="${YQ_DATA:-../shared}/models"
RUNS="${YQ_GPU_RUNS:-20}"
TMP="$(mktemp -d)"
for bin in old new; do
    B=$NEW; [ $bin = old ] && B=$OLD
    for spec in "yolov3|$M/cfg-only/yolov3.cfg --weights synthetic --size 416|8,32" \
                "yolov4-tiny|$M/cfg-only/yolov4-tiny.cfg --weights synthetic --size 416|8,32" \
                "xl|$M/yolo-fastest-1.1-xl|1,32" \
                "yolov4|$M/cfg-only/yolov4.cfg --weights synthetic --size 416|1,32"; do
        IFS='|' read -r name args batches <<< "$spec"
        # shellcheck disable=SC2086
        timeout 120 "$B" bench --device cuda $args --batch "$batches" --precision fp16,int8 --head int8 --tune \
            --runs "$RUNS" > "$TMP/${name}_$bin.txt" 2>&1 || echo "!! $bin $name exited $?"
        grep -E "^RESULT engine=yquant precision=(fp16|int8) .*(kernels=tuned$|img_s=[0-9.]+$)" "$TMP/${name}_$bin.txt" |
            sed "s/^/$bin $name /"
    done
done
rm -rf "$TMP"
