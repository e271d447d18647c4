#!/usr/bin/env bash
# `yquant sweep` of yolo-fastest-1.1-xl with GPU latency, on a lent device machine that has
# no OpenCV/HDF5 development packages: the 16-point grid of bench/results/sweep_2026-11-29.md
# (mAP on the CPU int8 reference engine, latency of the int8 forward with tuned kernels on
# the GPU), then `yquant quantize --max-drop 0.5` on the same sets, both run by build/gpu/yqgpu
# (`yqgpu yquant ...`: the whole CLI, images decoded by yquant's own libjpeg/libpng decoders;
# the raw sidecars below are a cross-check of those decoders against the device's cv2 only).
#
#   bench/gpu/sweep_gpu.sh pack   here: builds yqgpu for the H200 (sm_90 only, in $YQ_BUILD,
#                                 default build/dev), then .gpusweep/ gets it stripped and
#                                 gzipped, cJSON's library, yolo-fastest-1.1-xl, coco-mini's val2017
#                                 and val2017_unlabelled images, the val annotations, and
#                                 decode.sha256: the sha256 of every image's pixels as our own
#                                 decoder (libjpeg/libpng, build/tests/test_session --write-raw) gives
#                                 them.  Prints the size and the carry list (~40 MB).
#   bench/gpu/sweep_gpu.sh run [all|sweep|maxdrop]
#                                 there (carry .gpusweep), from the repository root: the
#                                 sidecars (bench/gpu/sidecars.py, cv2; checked against
#                                 decode.sha256), then the sweep and/or --max-drop; logs (each
#                                 line stamped with its second) and results to $OUT (default
#                                 /tmp/gpusweep-out), a summary at the end.
# Time: each point costs one evaluation of the 79 images on the CPU int8 reference engine
# plus keep_float's choice (simulated runs of the float engine on 16 calibration images):
# ~17 s + ~30 s on one core of the 2-core development machine (OPENBLAS_NUM_THREADS=1), so
# 16 points take ~12-13 min there; the GPU adds the tuning of the first point and a few
# seconds of CUDA-graph replays per point.  On the GPU machine the mAP is measured on the
# GPU int8 engine (sweep's default there), which leaves keep_float's choice as the cost of a
# point: 16 points took 538 s there at 8154a87 (that choice is about twice as fast since);
# a sweep cut short leaves $OUT/sweep/points.jsonl: put it in .gpusweep/ and the next
# `run sweep` resumes from it.  Steps are cut to $BUDGET (570 s: one device
# command may run 600 s; `all` keeps 120 s of it for --max-drop), so where one command cannot
# hold both, run `run sweep` and `run maxdrop` as two.  A sweep cut short still has every
# finished point in sweep.log.  `pack` again after a local `run` (it leaves files in .gpusweep).
# Environment: YQ_DATA (pack: default ../shared), YQ_BUILD (pack: default build/dev),
# YQ_COMMIT (run: the commit, when the tree has no .git), PYTHON (default python3), and for
# run: GRID (default the 16 points), SWEEP_ARGS / QUANT_ARGS (more flags, e.g. "--device cpu"
# / "--lat-device cpu --no-tune"), BUDGET (seconds, default 570), T_SWEEP / T_QUANT
# (timeouts, default all that is left), T_QUANT_MIN (what `all` keeps for --max-drop).
set -uo pipefail
cd "$(dirname "$0")/../.."
D=.gpusweep
VAL=datasets/coco-mini/val2017/images
CAL=datasets/coco-mini/val2017_unlabelled/images
ANN=datasets/coco-mini/annotations/instances_val2017_mini.json
MODEL=yolo-fastest-1.1-xl
PY="${PYTHON:-python3}"

case "${1:-}" in
pack)
    DATA="${YQ_DATA:-../shared}"
    B="${YQ_BUILD:-build/dev}"
    for p in "models/$MODEL" "$VAL" "$CAL" "$ANN"; do
        [ -e "$DATA/$p" ] || { echo "sweep_gpu: $DATA/$p is missing (YQ_DATA?)" >&2; exit 1; }
    done
    make -j2 B="$B" NVCC_ARCHS="-gencode arch=compute_90,code=sm_90" "$B/gpu/yqgpu" >/dev/null || exit 1
    TS="${YQ_TEST_SESSION:-build/tests/test_session}"
    [ -x "$TS" ] || make -j2 "$TS" >/dev/null || exit 1
    rm -rf "$D" && mkdir -p "$D/data/models" "$D/data/$VAL" "$D/data/$CAL" "$D/data/$(dirname "$ANN")" || exit 1
    strip -o "$D/yqgpu" "$B/gpu/yqgpu" && gzip -f9 "$D/yqgpu" && cp "$B/gpu/libcjson.so.1" "$D/" || exit 1
    cp -r "$DATA/models/$MODEL" "$D/data/models/" && cp "$DATA/$ANN" "$D/data/$ANN" || exit 1
    cp "$DATA/$VAL"/* "$D/data/$VAL/" && cp "$DATA/$CAL"/* "$D/data/$CAL/" || exit 1
    chmod -R u+w "$D"
    # Our decoder's pixels, hashed (the sidecars are written into a scratch copy: they are
    # ~1 MB an image and are made again there).
    tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
    cp "$D/data/$VAL"/* "$D/data/$CAL"/* "$tmp/" || exit 1
    find "$tmp" -maxdepth 1 -type f -iregex '.*\.\(jpe?g\|png\)' -print0 | xargs -0 "$TS" --write-raw || exit 1
    (cd "$tmp" && sha256sum -- *.rgb) | sort -k2 > "$D/decode.sha256" || exit 1
    echo "decode.sha256: $(wc -l < "$D/decode.sha256") images decoded by $TS"
    rm -f "$D/data/$VAL"/*.rgb "$D/data/$CAL"/*.rgb
    du -sh "$D"
    mb=$(du -sm "$D" | cut -f1)
    [ "$mb" -lt 50 ] || echo "sweep_gpu: WARNING: $D is $mb MB (carry is capped at 64 MiB)" >&2
    echo "carry: [\"$D\"]"
    echo "then: OUT=\$OUT bench/gpu/sweep_gpu.sh run"
    ;;
run)
    WHAT="${2:-all}"
    case "$WHAT" in all|sweep|maxdrop) ;; *) echo "usage: bench/gpu/sweep_gpu.sh run [all|sweep|maxdrop]" >&2; exit 2;; esac
    OUT="${OUT:-/tmp/gpusweep-out}"
    BUDGET="${BUDGET:-570}"
    mkdir -p "$OUT" || exit 1
    [ -s "$D/yqgpu.gz" ] || { echo "sweep_gpu: $D/yqgpu.gz missing: bench/gpu/sweep_gpu.sh pack here first, carry $D" >&2; exit 1; }
    gunzip -c "$D/yqgpu.gz" > "$D/yqgpu" && chmod +x "$D/yqgpu" || exit 1
    BIN="$D/yqgpu"
    . bench/gpu/env.sh
    export YQ_DATA="$PWD/$D/data"
    W="$D/work"
    mkdir -p "$W"
    {
        echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "gpu (name, driver_version):"
        nvidia-smi --query-gpu=name,driver_version --format=csv 2>&1 | sed 's/^/  /'
        echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc), OPENBLAS_NUM_THREADS ${OPENBLAS_NUM_THREADS:-unset}"
        echo "yquant: ${YQ_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}$(git status --porcelain 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"
        echo "binary: $("$BIN" yquant --version 2>&1), yqgpu.gz sha256 $(sha256sum "$D/yqgpu.gz" | cut -c1-16)"
        echo "run: $WHAT, budget ${BUDGET} s"
    } | tee "$OUT/env.txt"

    # step NAME TIMEOUT CMD...: runs, logs to $OUT/NAME.log (each line with the seconds since
    # the step began), reports failures, goes on.  The timeout is cut to what is left of
    # $BUDGET (the device's limit on one command is 600 s: a step killed by its own timeout
    # still leaves its log, and the sweep's log has every finished point).
    step() {
        local name=$1 t=$2 t0=$SECONDS left=$((BUDGET - SECONDS))
        shift 2
        [ "$t" -gt "$left" ] && t=$left
        if [ "$t" -lt 10 ]; then echo "!! $name: skipped, no time left of the ${BUDGET} s budget"; return 1; fi
        echo
        echo "== $name (timeout ${t}s): $*"
        timeout "$t" "$@" 2>&1 | while IFS= read -r l; do printf '%4d  %s\n' $((SECONDS - t0)) "${l##*$'\r'}"; done > "$OUT/$name.log"
        local rc=${PIPESTATUS[0]}
        echo "== $name: exit $rc, $((SECONDS - t0)) s" | tee -a "$OUT/$name.log"
        [ "$rc" -eq 0 ] || { echo "!! $name exited $rc$([ "$rc" -eq 124 ] && echo ' (timed out)'); last lines:"; tail -15 "$OUT/$name.log"; }
        return "$rc"
    }

    step sidecars 120 "$PY" bench/gpu/sidecars.py "$D/data/$VAL" "$D/data/$CAL" --check "$D/decode.sha256"
    grep '^ *[0-9]*  sidecars:' "$OUT/sidecars.log"

    # One calibration cache in $W, shared by the sweep and --max-drop (same model and images).
    if [ "$WHAT" != maxdrop ]; then
        GRID_TEXT="${GRID:-bits=8,6; calib=max,percentile:99.99,kl,mse; weights=per_channel,per_tensor}"
        reserve=0
        [ "$WHAT" = all ] && reserve="${T_QUANT_MIN:-120}"
        # The points an earlier call finished (its $OUT/sweep/points.jsonl, copied here into
        # .gpusweep before packing the call): the sweep goes on from them (--resume).
        resume=
        if [ -s "$D/points.jsonl" ]; then
            mkdir -p "$OUT/sweep" && cp "$D/points.jsonl" "$OUT/sweep/points.jsonl" && resume=--resume
            echo "resuming from $D/points.jsonl ($(wc -l < "$D/points.jsonl") points)"
        fi
        step sweep $(( ${T_SWEEP:-600} < BUDGET - SECONDS - reserve ? ${T_SWEEP:-600} : BUDGET - SECONDS - reserve )) \
            "$BIN" yquant sweep "$MODEL" --calib "$YQ_DATA/$CAL" --val "$YQ_DATA/$VAL" \
            --ann "$YQ_DATA/$ANN" --grid "$GRID_TEXT" --calib-cache "$W/calib.h5" --out "$OUT/sweep" \
            --json "$OUT/sweep.json" $resume ${SWEEP_ARGS:-}
    fi
    if [ "$WHAT" != sweep ]; then
        # The sweep's tuning log, as the package's (xl.tune.jsonl): --max-drop's latency and
        # the package's tuning (yquant tune, batch 1 and 32) start from the sweep's kernels.
        [ -s "$OUT/sweep/tune.jsonl" ] && cp "$OUT/sweep/tune.jsonl" "$OUT/xl.tune.jsonl"
        step maxdrop "${T_QUANT:-600}" "$BIN" yquant quantize "$MODEL" --calib "$YQ_DATA/$CAL" --val "$YQ_DATA/$VAL" \
            --ann "$YQ_DATA/$ANN" --max-drop 0.5 --calib-cache "$W/calib.h5" \
            --json "$OUT/maxdrop.json" -o "$OUT/xl.yqp" ${QUANT_ARGS:-}
    fi

    echo
    echo "==== summary ($SECONDS s)"
    sed -n 's/^ *[0-9]*  sidecars: check/decode check/p' "$OUT/sidecars.log"
    unstamp() { sed 's/^ *[0-9]*  //'; }
    if [ -s "$OUT/sweep.log" ]; then
        grep -E '^ *[0-9]+  (sweep|fp32):|^ *[0-9]+  \[ *[0-9]+/' "$OUT/sweep.log"
        sed -n '/points on .* images; latency/,/Pareto front/p' "$OUT/sweep.log" | unstamp
        grep '^== sweep' "$OUT/sweep.log"
    fi
    if [ -s "$OUT/maxdrop.log" ]; then
        echo
        sed -n '/accuracy-aware mode/,/per-layer int8 vs FP32/p' "$OUT/maxdrop.log" | grep -v 'per-layer int8 vs' | unstamp
        grep -E '^ *[0-9]+  (wrote|tuning|warning)|^== maxdrop' "$OUT/maxdrop.log" | unstamp
    fi
    echo "logs and results in $OUT: $(cd "$OUT" && ls | tr '\n' ' ')"
    ;;
*)
    echo "usage: bench/gpu/sweep_gpu.sh pack | run [all|sweep|maxdrop]" >&2
    exit 2
    ;;
esac
