#!/usr/bin/env bash
# GPU benchmark, every engine in the same run on the same GPU (issue 13's side by side):
# per model and batch, yquant int8 tuned per layer (`yquant bench --tune`, int8 heads: the
# untuned default, tuned over every family, dp4a only, mma only), yquant FP16 (cuDNN),
# PyTorch FP16 channels_last replayed from a CUDA graph, built from the same .cfg
# (bench/gpu/peer_torch.py), and cuDNN's own int8 convolutions summed over the network's
# convs (yqgpu cudnn_int8).  Models: YOLOv3-416, yolov4-416 and yolov4-tiny-416
# (architecture only: synthetic weights), yolo-fastest-1.1-xl and yolo-fastest-1.1 (their
# COCO weights, 320x320), and on request the YOLOv8n ONNX export (yolov8n: yquant's int8
# and FP16 only; no peer is built from an ONNX graph); batches 1, 8, 32 and 128.  bench/gpu/report.py prints the tables
# (ratios, targets, the per-layer table with TOPS and % of the mma.sync peak, depthwise
# layers in GB/s) into bench/results/gpu_<date>[_<tag>].md with the GPU, driver and commit.
#
#   make gpu-bench NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"    (here: no GPU needed)
#   bench/gpu/run_gpu.sh                                              (there)
#
# Environment: YQGPU (default build/gpu/yqgpu), YQ_DATA (default ../shared), YQ_GPU_RUNS
# (timed runs per configuration, default 100), YQ_GPU_MODELS (a subset of: yolov3 yolov4
# yolov4-tiny fastest-xl fastest yolov8n), YQ_GPU_BATCHES (default 1,8,32,128), YQ_GPU_TAG (a
# suffix of the results file, for a run split over several calls), YQ_GPU_BUDGET_S (seconds
# for the steps: each is cut to what is left and later ones are skipped, so that the report
# is always written, with what ran; default none), YQ_COMMIT (the commit,
# when the tree has no .git), YQ_GPU_LOG (where the logs go; default a temporary folder,
# packed into $OUT/gpu_logs.tgz at exit when $OUT is set: the device returns few files).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${YQGPU:-build/gpu/yqgpu}"
export YQ_DATA="${YQ_DATA:-../shared}"
RUNS="${YQ_GPU_RUNS:-100}"
MODELS="${YQ_GPU_MODELS:-yolov3 yolov4 yolov4-tiny fastest-xl fastest}"
BATCHES="${YQ_GPU_BATCHES:-1,8,32,128}"
LOG="${YQ_GPU_LOG:-$(mktemp -d)}"
mkdir -p "$LOG"
[ -n "${OUT:-}" ] && trap 'tar czf "$OUT/gpu_logs.tgz" -C "$LOG" . 2>/dev/null' EXIT
export PYTHONUNBUFFERED=1

# cuDNN: system-wide, or the one PyTorch's wheels carry.
. bench/gpu/env.sh

M="$YQ_DATA/models"
commit="${YQ_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1)"
    echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc)"
    echo "yquant: $commit; $BIN"
    python3 -c 'import torch; print(f"torch: {torch.__version__}, its cuDNN {torch.backends.cudnn.version()}")' 2>/dev/null
    echo "runs: $RUNS timed per configuration after warm-up (yquant 10, PyTorch 20), median; batches $BATCHES"
    echo "models: $MODELS"
} > "$LOG/env.txt"
cat "$LOG/env.txt"
# this card's roof, measured in the same run (the layer table's "% of this card" columns)
"$BIN" ceilings > "$LOG/ceilings.json" 2> "$LOG/ceilings.err" && cat "$LOG/ceilings.json"

step() {   # step NAME TIMEOUT CMD...: runs, logs to $LOG/NAME.txt, reports failures, goes on
    local name=$1 t=$2
    shift 2
    echo
    if [ -n "${YQ_GPU_BUDGET_S:-}" ]; then
        local left=$(( YQ_GPU_BUDGET_S - SECONDS ))
        if [ "$left" -lt 10 ]; then echo "== $name: skipped (YQ_GPU_BUDGET_S spent)"; return; fi
        [ "$left" -lt "$t" ] && t=$left
    fi
    echo "== $name: $*"
    local t0=$SECONDS
    timeout "$t" "$@" > "$LOG/$name.txt" 2> "$LOG/$name.err"
    local rc=$?
    grep '^RESULT' "$LOG/$name.txt" | grep -v 'kernels=tuned:\|kernels=default' | tail -12
    [ -s "$LOG/$name.err" ] && tail -3 "$LOG/$name.err"
    [ $rc -eq 0 ] || echo "!! $name exited $rc"
    echo "($(( SECONDS - t0 )) s)"
}

for m in $MODELS; do
    prof=()
    case $m in
    yolov3) cfg=$M/cfg-only/yolov3.cfg; yq=("$cfg" --weights synthetic --size 416); th=("$cfg" --size 416); prof=(--profile) ;;
    yolov4) cfg=$M/cfg-only/yolov4.cfg; yq=("$cfg" --weights synthetic --size 416); th=("$cfg" --size 416) ;;
    yolov4-tiny) cfg=$M/cfg-only/yolov4-tiny.cfg; yq=("$cfg" --weights synthetic --size 416); th=("$cfg" --size 416) ;;
    fastest-xl) d=$M/yolo-fastest-1.1-xl; cfg=$d/yolo-fastest-1.1-xl.cfg; yq=("$d"); th=("$cfg" --weights "$d/yolo-fastest-1.1-xl.weights")
        prof=(--profile) ;;
    fastest) d=$M/yolo-fastest-1.1; cfg=$d/yolo-fastest-1.1.cfg; yq=("$d"); th=("$cfg" --weights "$d/yolo-fastest-1.1.weights") ;;
    yolov8n) cfg=; yq=("$M/onnx/yolov8n-640/yolov8n.onnx"); th=() ;;   # ONNX: yquant's engines only
    *) echo "unknown model $m"; continue ;;
    esac
    sz=()
    [ "${yq[1]:-}" = --weights ] && sz=(--size 416)
    step "$m.yq" 420 "$BIN" bench --device cuda "${yq[@]}" --batch "$BATCHES" --precision fp16,int8 --head int8 --tune \
        --log "$LOG/$m.tune.jsonl" --runs "$RUNS" "${prof[@]}" --json "$LOG/$m.yq.json"
    [ -n "$cfg" ] || continue   # no PyTorch or cuDNN peer built from an ONNX graph yet
    step "$m.torch" 240 python3 bench/gpu/peer_torch.py "${th[@]}" --batch "$BATCHES" --precision fp16 --runs "$RUNS" \
        --json "$LOG/$m.torch.json"
    step "$m.cudnn8" 180 "$BIN" cudnn_int8 "$cfg" "${sz[@]}" --batch "$BATCHES" --runs 10 --json "$LOG/$m.cudnn8.json"
done

mkdir -p bench/results
out="bench/results/gpu_$(date +%Y-%m-%d)${YQ_GPU_TAG:+_$YQ_GPU_TAG}.md"
python3 bench/gpu/report.py "$LOG" > "$out"
[ -n "${OUT:-}" ] && cp "$out" "$OUT/"
echo
sed -n '/^## Side by side/,/^## Layers/p' "$out" | grep -v '^## Layers'
echo "wrote $out"
