#!/usr/bin/env bash
# Calibration on the GPU, on a lent device machine that has no OpenCV/HDF5 development
# packages: tests/test_calib_cuda.c (GPU statistics against the CPU's) and bench/calib_gpu.c
# (calibration time of YOLOv3-416, CPU engine against the GPU), from one static program.
#
#   bench/gpu/calib_gpu.sh pack    here: make gpu-calib (H200 only), then .gpucal/ gets the
#                                  stripped, gzipped program, cJSON's library, yolo-fastest-1.1-xl,
#                                  yolov3.cfg and the first $YQ_CALIB_IMAGES (64) calibration JPEGs
#   bench/gpu/calib_gpu.sh run     there (carry .gpucal): the JPEGs' pixels as IMAGE.rgb
#                                  sidecars (PIL; a cross-check only: the program decodes
#                                  the JPEGs itself), the test,
#                                  the benchmark; logs to $OUT when set
# Environment: YQ_DATA (default ../shared), YQ_COMMIT (the commit, for the log),
# YQ_CALIB_IMAGES (default 64), YQ_CALIB_ARGS (more bench flags, e.g. --tune).
set -uo pipefail
cd "$(dirname "$0")/../.."
D=.gpucal
N="${YQ_CALIB_IMAGES:-64}"
IMG=datasets/coco-mini/val2017_unlabelled/images
case "${1:-}" in
pack)
    DATA="${YQ_DATA:-../shared}"
    make -j2 gpu-calib NVCC_ARCHS="-gencode arch=compute_90,code=sm_90" >/dev/null || exit 1
    rm -rf "$D" && mkdir -p "$D/data/models/cfg-only" "$D/data/$IMG" || exit 1
    strip -o "$D/yqcal" build/gpu/yqcal && gzip -f "$D/yqcal" && cp build/gpu/libcjson.so.1 "$D/" || exit 1
    cp -r "$DATA/models/yolo-fastest-1.1-xl" "$D/data/models/" && cp "$DATA/models/cfg-only/yolov3.cfg" "$D/data/models/cfg-only/" || exit 1
    ls "$DATA/$IMG"/*.jpg | sort | head -n "$N" | xargs -I{} cp {} "$D/data/$IMG/" || exit 1
    chmod -R u+w "$D"
    du -sh "$D"
    ;;
run)
    LOG="${OUT:-/tmp}"
    gunzip -c "$D/yqcal.gz" > "$D/yqcal" && chmod +x "$D/yqcal" || exit 1
    . bench/gpu/env.sh
    python3 - "$D/data/$IMG"/*.jpg <<'PY' || exit 1
import sys
from PIL import Image
for f in sys.argv[1:]:
    with Image.open(f) as im:
        open(f + '.rgb', 'wb').write(im.convert('RGB').tobytes())
PY
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)"
        echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
        echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc)"
        echo "yquant: ${YQ_COMMIT:-unknown}"
    } | tee "$LOG/calib_env.txt"
    echo "== yqcal test"
    YQ_DATA="$PWD/$D/data" timeout 120 "$D/yqcal" test 2>&1 | tee "$LOG/calib_test.txt"
    echo "== yqcal bench"
    YQ_DATA="$PWD/$D/data" timeout 240 "$D/yqcal" bench "$D/data/models/cfg-only/yolov3.cfg" --weights synthetic \
        --size 416 --calib "$D/data/$IMG" --images "$N" ${YQ_CALIB_ARGS:-} 2>&1 | tee "$LOG/calib_bench.txt"
    ;;
*)
    echo "usage: bench/gpu/calib_gpu.sh pack|run" >&2
    exit 2
    ;;
esac
