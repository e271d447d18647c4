#!/usr/bin/env bash
# Issue 13's side-by-side: yquant int8 (tuned per layer, every family: CUTLASS, our
# tensor-core and dp4a kernels) against yquant FP16 (cuDNN, NHWC, graph API), in the same
# process on the same GPU, for five detectors at batch 1, 8, 32 and 128; the ratios, and
# YOLOv3's per-layer table at batch 32 (TOPS and % of the int8 mma.sync peak).
#
#   make gpu-bench B=build/dev NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"   (here)
#   bench/gpu/int8_gpu.sh                                                          (there)
#
# Environment: YQGPU (default build/gpu/yqgpu), YQ_DATA (default ../shared: models/),
# YQ_GPU_RUNS (timed runs per configuration, default 30), YQ_GPU_BATCHES (default
# 1,8,32,128), YQ_GPU_LOG and OUT (below).
# PyTorch and cuDNN's own int8 convs are bench/gpu/run_gpu.sh's.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${YQGPU:-build/gpu/yqgpu}"
DATA="${YQ_DATA:-../shared}"
RUNS="${YQ_GPU_RUNS:-30}"
BATCHES="${YQ_GPU_BATCHES:-1,8,32,128}"
# the logs: $YQ_GPU_LOG, default a temporary folder; with $OUT set (the lent device machine,
# which returns few files) packed into $OUT/int8_logs.tgz at exit, the table copied there
OUTD="${YQ_GPU_LOG:-$(mktemp -d)}"
mkdir -p "$OUTD"
[ -n "${OUT:-}" ] && trap 'tar czf "$OUT/int8_logs.tgz" -C "$OUTD" . 2>/dev/null; cp "$OUTD/int8_gpu.md" "$OUT/" 2>/dev/null' EXIT
# shellcheck source=/dev/null
. bench/gpu/env.sh
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)"
    echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "yquant: ${YQ_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    echo "runs: $RUNS timed per configuration, median; the better of eager and CUDA-graph replay"
} > "$OUTD/env.txt"
cat "$OUTD/env.txt"

run() {   # run NAME MODEL ARGS...: one bench over every batch, logged
    local name=$1
    shift
    echo "== $name"
    timeout 400 "$BIN" bench --device cuda "$@" --batch "$BATCHES" --precision fp16,int8 --head int8 --tune \
        --log "$OUTD/$name.tune.jsonl" --runs "$RUNS" --json "$OUTD/$name.json" > "$OUTD/$name.txt" 2>&1 ||
        echo "!! $name exited $?"
    grep -E '^RESULT engine=yquant precision=(fp16|int8) .*(kernels=tuned$|img_s=[0-9.]+$)|tuning_s' "$OUTD/$name.txt"
}
CFG="$DATA/models/cfg-only"
run yolov3 "$CFG/yolov3.cfg" --weights synthetic --size 416
run yolov4 "$CFG/yolov4.cfg" --weights synthetic --size 416
run yolov4-tiny "$CFG/yolov4-tiny.cfg" --weights synthetic --size 416
run fastest-1.1-xl "$DATA/models/yolo-fastest-1.1-xl"
run fastest-1.1 "$DATA/models/yolo-fastest-1.1"
# YOLOv3's layers at batch 32, each on its tuned kernel (fused shortcuts included)
echo "== yolov3 profile, batch 32"
timeout 200 "$BIN" bench --device cuda "$CFG/yolov3.cfg" --weights synthetic --size 416 --batch 32 --precision int8 \
    --head int8 --tune --log "$OUTD/yolov3.tune.jsonl" --runs "$RUNS" --profile > "$OUTD/yolov3.profile.txt" 2>&1 ||
    echo "!! profile exited $?"
python3 bench/gpu/int8_report.py "$OUTD" | tee "$OUTD/int8_gpu.md"
