#!/usr/bin/env bash
# Every GPU test in one device call, most important first, each under its own time limit
# and all under one budget, so that a short lease still returns the answers that matter:
# test_cuda (every kernel configuration and every model, byte for byte), then test_session
# (sessions, GPU post-processing, faults), test_tune (the tuner and the GPU latency), test_api
# (the public headers' GPU rows) and test_cudnn.  Prints one line per test (rc, seconds,
# its PASS/FAIL/SKIP counts) and keeps each log.
#
#   make gpu-bench gpu-test NVCC_ARCHS="-gencode arch=compute_90,code=sm_90"    (here)
#   YQ_DATA=... bench/gpu/verify_gpu.sh                                         (there)
#
# Environment: YQGPU (default build/gpu/yqgpu), YQ_SESSION_BIN (default build/gpu/test_session),
# YQ_DATA (default ../shared), YQ_GPU_BUDGET_S (seconds for all of it, default 540),
# YQ_GPU_LOG (the logs' folder; default $OUT when set, else a temporary one).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${YQGPU:-build/gpu/yqgpu}"
SES="${YQ_SESSION_BIN:-build/gpu/test_session}"
export YQ_DATA="${YQ_DATA:-../shared}"
BUDGET="${YQ_GPU_BUDGET_S:-540}"
LOG="${YQ_GPU_LOG:-${OUT:-$(mktemp -d)}}"
mkdir -p "$LOG"
. bench/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
bad=0
run() {   # run NAME LIMIT CMD...
    local name=$1 lim=$2 left=$(( BUDGET - SECONDS ))
    shift 2
    if [ "$left" -lt 10 ]; then echo "$name: not run (budget spent)"; bad=1; return; fi
    [ "$left" -lt "$lim" ] && lim=$left
    local t0=$SECONDS
    timeout "$lim" "$@" > "$LOG/$name.txt" 2>&1
    local rc=$?
    printf '%s: rc %d in %d s (limit %d): %d PASS, %d FAIL, %d SKIP\n' "$name" "$rc" $(( SECONDS - t0 )) "$lim" \
        "$(grep -c '^PASS' "$LOG/$name.txt")" "$(grep -c '^FAIL' "$LOG/$name.txt")" "$(grep -c '^SKIP' "$LOG/$name.txt")"
    grep -E '^FAIL|configurations compared' "$LOG/$name.txt" | head -5
    [ "$rc" -ne 0 ] && bad=1
    [ "$rc" -eq 124 ] && echo "  (cut by its limit; the last test it finished: $(grep -E '^(PASS|FAIL|SKIP)' "$LOG/$name.txt" | tail -1))"
}
run test_cuda 200 "$BIN" test_cuda
run test_session 240 "$SES"
run test_tune 90 "$BIN" test_tune
run test_api 60 "$BIN" test_api
run test_cudnn 60 "$BIN" test_cudnn
exit $bad
