#!/usr/bin/env bash
# Issue 13's side-by-side: yquant int8 (tuned per layer, every family: CUTLASS, our
# tensor-core and dp4a kernels) against yquant FP16 (cuDNN, NHWC, graph API), in the same
# process on the same GPU, for five detectors at batch 1, 8, 32 and 128; in the same run
# PyTorch FP16 channels_last replayed from a CUDA graph (bench/gpu/peer_torch.py, the same
# .cfg) and cuDNN's own int8 convs summed (yqgpu cudnn_int8); the ratios, the targets, and
# the batch-32 layer tables of YOLOv3 (TOPS and % of the int8 mma.sync peak; 1x1 GB/s) and
# yolo-fastest-1.1-xl (its depthwise convs in GB/s against the 4.2 TB/s copy bandwidth).
#
#   make gpu-bench B=build/dev NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"   (here)
#   bench/gpu/int8_gpu.sh                                                          (there)
#
# Environment: YQGPU (default build/gpu/yqgpu), YQ_DATA (default ../shared: models/),
# YQ_GPU_RUNS (timed runs per configuration, default 30), YQ_GPU_BATCHES (default
# 1,8,32,128), YQ_GPU_PEERS (default 1; 0: yquant only), YQ_GPU_CUDNN8 (default 1; 0: leave
# out cuDNN's int8 convs, which take minutes on YOLOv4), YQ_GPU_MODELS (default all five:
# yolov3,yolov4,yolov4-tiny,fastest-1.1-xl,fastest-1.1; a run split over two device calls
# gives each a part, and int8_report.py reads both parts' logs from one folder),
# YQ_GPU_LOG and OUT (below).
# bench/gpu/run_gpu.sh adds yquant FP32, the untuned kernels and the tuning log's reuse.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${YQGPU:-build/gpu/yqgpu}"
DATA="${YQ_DATA:-../shared}"
RUNS="${YQ_GPU_RUNS:-30}"
BATCHES="${YQ_GPU_BATCHES:-1,8,32,128}"
PEERS="${YQ_GPU_PEERS:-1}"
CUDNN8="${YQ_GPU_CUDNN8:-1}"
MODELS=",${YQ_GPU_MODELS:-yolov3,yolov4,yolov4-tiny,fastest-1.1-xl,fastest-1.1},"
want() { [[ "$MODELS" == *",$1,"* ]]; }
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

run() {   # run NAME CFG WEIGHTS SIZE: one bench over every batch, then the peers, logged
    local name=$1 cfg=$2 weights=$3 size=$4
    want "$name" || return 0
    local sz=()
    [ "$size" != - ] && sz=(--size "$size")
    echo "== $name"
    timeout 400 "$BIN" bench --device cuda "$cfg" --weights "$weights" "${sz[@]}" --batch "$BATCHES" --precision fp16,int8 \
        --head int8 --tune --log "$OUTD/$name.tune.jsonl" --runs "$RUNS" --json "$OUTD/$name.json" > "$OUTD/$name.txt" 2>&1 ||
        echo "!! $name exited $?"
    grep -E '^RESULT engine=yquant precision=(fp16|int8) .*(kernels=tuned$|img_s=[0-9.]+$)|tuning_s' "$OUTD/$name.txt"
    [ "$PEERS" = 0 ] && return
    local tw=()
    [ "$weights" != synthetic ] && tw=(--weights "$weights")
    timeout 300 python3 bench/gpu/peer_torch.py "$cfg" "${tw[@]}" "${sz[@]}" --batch "$BATCHES" --precision fp16 \
        --runs "$RUNS" --json "$OUTD/$name.torch.json" > "$OUTD/$name.torch.txt" 2>&1 || echo "!! $name torch exited $?"
    grep '^RESULT' "$OUTD/$name.torch.txt"
    [ "$CUDNN8" = 0 ] && return
    timeout 300 "$BIN" cudnn_int8 "$cfg" "${sz[@]}" --batch "$BATCHES" --json "$OUTD/$name.cudnn8.json" \
        > "$OUTD/$name.cudnn8.txt" 2>&1 || echo "!! $name cudnn_int8 exited $?"
}
CFG="$DATA/models/cfg-only"
XL="$DATA/models/yolo-fastest-1.1-xl"
F11="$DATA/models/yolo-fastest-1.1"
run yolov3 "$CFG/yolov3.cfg" synthetic 416
run yolov4 "$CFG/yolov4.cfg" synthetic 416
run yolov4-tiny "$CFG/yolov4-tiny.cfg" synthetic 416
run fastest-1.1-xl "$XL/yolo-fastest-1.1-xl.cfg" "$XL/yolo-fastest-1.1-xl.weights" -
run fastest-1.1 "$F11/yolo-fastest-1.1.cfg" "$F11/yolo-fastest-1.1.weights" -
# YOLOv3's layers at batch 32, each on its tuned kernel (fused shortcuts included)
if want yolov3; then
    echo "== yolov3 profile, batch 32"
    timeout 200 "$BIN" bench --device cuda "$CFG/yolov3.cfg" --weights synthetic --size 416 --batch 32 --precision int8 \
        --head int8 --tune --log "$OUTD/yolov3.tune.jsonl" --runs "$RUNS" --profile --json "$OUTD/yolov3.profile.json" \
        > "$OUTD/yolov3.profile.txt" 2>&1 || echo "!! profile exited $?"
fi
# yolo-fastest-1.1-xl's, for its depthwise convs' bandwidth
if want fastest-1.1-xl; then
    echo "== fastest-1.1-xl profile, batch 32"
    timeout 200 "$BIN" bench --device cuda "$XL/yolo-fastest-1.1-xl.cfg" --weights "$XL/yolo-fastest-1.1-xl.weights" \
        --batch 32 --precision int8 --head int8 --tune --log "$OUTD/fastest-1.1-xl.tune.jsonl" --runs "$RUNS" --profile \
        --json "$OUTD/fastest-1.1-xl.profile.json" > "$OUTD/fastest-1.1-xl.profile.txt" 2>&1 || echo "!! profile exited $?"
fi
python3 bench/gpu/int8_report.py "$OUTD" | tee "$OUTD/int8_gpu.md"
