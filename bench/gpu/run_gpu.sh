#!/usr/bin/env bash
# GPU benchmark, every engine in the same run on the same GPU: yquant int8 (our dp4a and
# tensor-core kernels: the untuned default, and tuned per layer by `yquant bench --tune`,
# any family / dp4a only / mma only, with the tuning time, first and again from the log),
# yquant FP32 and FP16 (cuDNN), PyTorch FP16 channels_last replayed from a CUDA
# graph (and FP32) built from the same .cfg (bench/gpu/peer_torch.py), and cuDNN's own int8
# convolutions summed over the network's convs (yqgpu cudnn_int8).  Models: YOLOv3 at 416
# (architecture only: synthetic weights) and yolo-fastest-1.1-xl (its COCO weights).
# Batch 1 and 32.  Prints the table and writes it, with the GPU, driver and commit, to
# bench/results/gpu_<date>.md (and to $OUT when set, for the lent device machine).
#
#   make gpu-bench NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"    (here: no GPU needed)
#   bench/gpu/run_gpu.sh                                              (there)
#
# Environment: YQGPU (default build/gpu/yqgpu), YQ_DATA (default ../shared), YQ_GPU_RUNS
# (timed runs per configuration, default 100), YQ_COMMIT (the commit, when the tree has no
# .git), YQ_GPU_LOG (where the logs go; default a temporary folder, packed into
# $OUT/gpu_logs.tgz at exit when $OUT is set: the device returns few files).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${YQGPU:-build/gpu/yqgpu}"
export YQ_DATA="${YQ_DATA:-../shared}"
RUNS="${YQ_GPU_RUNS:-100}"
LOG="${YQ_GPU_LOG:-$(mktemp -d)}"
mkdir -p "$LOG"
[ -n "${OUT:-}" ] && trap 'tar czf "$OUT/gpu_logs.tgz" -C "$LOG" . 2>/dev/null' EXIT
export PYTHONUNBUFFERED=1

# cuDNN: system-wide, or the one PyTorch's wheels carry.
. bench/gpu/env.sh

v3cfg="$YQ_DATA/models/cfg-only/yolov3.cfg"
fdir="$YQ_DATA/models/yolo-fastest-1.1-xl"
fcfg="$fdir/yolo-fastest-1.1-xl.cfg"
fw="$fdir/yolo-fastest-1.1-xl.weights"

commit="${YQ_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "gpu: $(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -1)"
    echo "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
    echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc)"
    echo "yquant: $commit; $("$BIN" bench --help >/dev/null 2>&1 && echo "$BIN")"
    python3 - <<'EOF' 2>/dev/null
import torch
p = torch.cuda.get_device_properties(0)
clk = None
try:
    import subprocess
    clk = float(subprocess.check_output(['nvidia-smi', '--query-gpu=clocks.max.sm', '--format=csv,noheader,nounits']).split()[0])
except Exception:
    clk = 1980.0
print(f"torch: {torch.__version__}, its cuDNN {torch.backends.cudnn.version()}")
print(f"sms: {p.multi_processor_count}, max SM clock {clk:.0f} MHz")
print(f"dp4a_peak_tops={p.multi_processor_count * clk * 1e6 * 64 * 8 / 1e12:.1f}")
EOF
    echo "runs: $RUNS timed per configuration after warm-up (yquant 10, PyTorch 20), median"
} > "$LOG/env.txt"
cat "$LOG/env.txt"

step() {   # step NAME TIMEOUT CMD...: runs, logs to $LOG/NAME.txt, reports failures, goes on
    local name=$1 t=$2
    shift 2
    echo
    echo "== $name: $*"
    timeout "$t" "$@" > "$LOG/$name.txt" 2> "$LOG/$name.err"
    local rc=$?
    grep -v '^RESULT' "$LOG/$name.txt" | grep -v '^profile\|^ *[0-9]\+  \|^layer\|^  by op' | tail -20
    [ -s "$LOG/$name.err" ] && tail -5 "$LOG/$name.err"
    [ $rc -eq 0 ] || echo "!! $name exited $rc"
}

step yolov3.yq 200 "$BIN" bench --device cuda "$v3cfg" --weights synthetic --size 416 --batch 1,32 --precision fp32,fp16,int8 \
    --runs "$RUNS" --profile --json "$LOG/yolov3.yq.json"
step yolov3.yq8 60 "$BIN" bench --device cuda "$v3cfg" --weights synthetic --size 416 --batch 1,32 --precision int8 --head int8 \
    --runs "$RUNS" --json "$LOG/yolov3.yq8.json"
step fastest.yq 60 "$BIN" bench --device cuda "$fdir" --batch 1,32 --precision fp32,fp16,int8 --runs "$RUNS" --profile \
    --json "$LOG/fastest.yq.json"
step fastest.yq8 40 "$BIN" bench --device cuda "$fdir" --batch 1,32 --precision int8 --head int8 --runs "$RUNS" \
    --json "$LOG/fastest.yq8.json"
# Per-layer tuning in process (int8 heads: all of YOLOv3's 23 conv shapes), then the same
# again reusing the log (it should take seconds).
step yolov3.tune 420 "$BIN" bench --device cuda "$v3cfg" --weights synthetic --size 416 --batch 1,32 --precision int8 \
    --head int8 --tune --log "$LOG/yolov3.tune.jsonl" --runs "$RUNS" --json "$LOG/yolov3.tuned.json"
step yolov3.tune2 120 "$BIN" bench --device cuda "$v3cfg" --weights synthetic --size 416 --batch 1,32 --precision int8 \
    --head int8 --tune --log "$LOG/yolov3.tune.jsonl" --runs "$RUNS" --json "$LOG/yolov3.tuned2.json"
step fastest.tune 300 "$BIN" bench --device cuda "$fdir" --batch 1,32 --precision int8 --head int8 --tune \
    --log "$LOG/fastest.tune.jsonl" --runs "$RUNS" --json "$LOG/fastest.tuned.json"
step yolov3.torch 120 python3 bench/gpu/peer_torch.py "$v3cfg" --size 416 --batch 1,32 --runs "$RUNS" \
    --json "$LOG/yolov3.torch.json"
step fastest.torch 60 python3 bench/gpu/peer_torch.py "$fcfg" --weights "$fw" --batch 1,32 --runs "$RUNS" \
    --json "$LOG/fastest.torch.json"
step yolov3.cudnn8 90 "$BIN" cudnn_int8 "$v3cfg" --size 416 --batch 1,32 --json "$LOG/yolov3.cudnn8.json"
step fastest.cudnn8 60 "$BIN" cudnn_int8 "$fcfg" --batch 1,32 --json "$LOG/fastest.cudnn8.json"

mkdir -p bench/results
out="bench/results/gpu_$(date +%Y-%m-%d).md"
python3 bench/gpu/report.py "$LOG" > "$out"
[ -s "$LOG/yolov3.tune.jsonl" ] && python3 bench/gpu/layers.py "$LOG" >> "$out"
# Optional, while the time budget lasts (YQ_GPU_BUDGET_S, seconds of this script; default
# none): the cuDNN graph API with bias + activation fused into the conv (engines compiled
# at planning time), YOLOv3 FP16.
if [ -n "${YQ_GPU_BUDGET_S:-}" ] && [ "$SECONDS" -lt "$YQ_GPU_BUDGET_S" ]; then
    step yolov3.fused $(( YQ_GPU_BUDGET_S - SECONDS + 10 )) "$BIN" bench --device cuda "$v3cfg" --weights synthetic \
        --size 416 --batch 1,32 --precision fp16 --fuse --runs "$RUNS" --json "$LOG/yolov3.fused.json"
    { echo; echo "## Extra: YOLOv3 FP16 with bias + leaky fused into the conv (cuDNN graph API, --fuse)"; echo
      echo '```'; sed -n '/^engine/,/^$/p' "$LOG/yolov3.fused.txt"; echo '```'; } >> "$out"
fi
[ -n "${OUT:-}" ] && cp "$out" "$OUT/"
echo
sed -n '/^## YOLOv3/,/^## yquant bench/p' "$out" | grep -v '^## yquant bench'
echo "wrote $out"
