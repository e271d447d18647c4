#!/usr/bin/env bash
# CPU int8 side by side (issue 19): yquant's int8 engine against yquant FP32 (OpenBLAS), the
# exact dgemm path it replaced, Debian's darknet, and ONNX Runtime (FP32 and int8, the Q/DQ
# export of the same package), at 1 and 2 threads, batch 1, in one run.  Prints the table and
# writes it with the machine to bench/results/cpu_int8_<date>.md.
#
#   bench/cpu_int8.sh
#
# Models: yolo-fastest-1.1-xl and yolo-fastest-1.1 (COCO weights), yolov3-tiny (synthetic
# weights, 416), and the YOLOv8n export (640).  Each is quantized once into a package
# (`yquant quantize --target cpu`, calibrated on the shared calibration images): yquant int8
# runs that package (its float convs, listed in the row, in their exact FP32) and, for
# comparison, the model with every conv int8 but the heads (`bench --precision int8`, scales
# uncalibrated: the speed does not depend on them); ONNX Runtime int8 runs the package's Q/DQ
# export (`yquant export PKG`), ONNX Runtime FP32 the model's ONNX form (`yquant export MODEL`
# for the Darknet models, the export itself for YOLOv8n).
# Environment: YQ_DATA (default ../shared), YQ_BENCH_RUNS (default 30), YQ_BENCH_DN_RUNS
# (darknet, default 10), YQ_BENCH_MODELS (a subset of: xl fastest yolov3-tiny yolov8n).
# The machine may be shared: the load average before the run is in the results.
set -euo pipefail
cd "$(dirname "$0")/.."
export YQ_DATA="${YQ_DATA:-../shared}"
runs="${YQ_BENCH_RUNS:-30}"
dn_runs="${YQ_BENCH_DN_RUNS:-10}"
models="${YQ_BENCH_MODELS:-xl fastest yolov3-tiny yolov8n}"
make -s build/yquant
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

peer=0
if [ -f /usr/lib/darknet/libdarknet.so ] && [ -f /usr/lib/darknet/include/darknet.h ]; then
    mkdir -p build/bench
    cc -O2 -I/usr/lib/darknet/include bench/darknet_peer/bench_darknet.c -L/usr/lib/darknet -ldarknet \
        -Wl,-rpath,/usr/lib/darknet -lm -lpthread -o build/bench/bench_darknet
    peer=1
fi
ort=0
python3 -c 'import onnxruntime' 2>/dev/null && ort=1

rows=()   # "model|engine|threads|ms"
ms_of() { sed -n 's/^RESULT .* median_ms=\([^ ]*\).*/\1/p' "$1" | tail -1; }
yq() {   # yq MODEL_LABEL ENGINE_LABEL THREADS ARGS...
    local m=$1 e=$2 t=$3
    shift 3
    local f="$log/$(echo "$m-$e-$t" | tr -c 'a-zA-Z0-9-' _).txt"
    build/yquant bench "$@" --device cpu --threads "$t" --runs "$runs" --warmup 3 > "$f" 2>&1 ||
        { echo "bench: yquant bench $* failed:" >&2; tail -3 "$f" >&2; return 1; }
    rows+=("$m|$e|$t|$(ms_of "$f")")
    echo "  $e, $t thread(s): $(ms_of "$f") ms"
}

for key in $models; do
    case $key in
    xl) label="yolo-fastest-1.1-xl (320)"; src=(yolo-fastest-1.1-xl); dn=yolo-fastest-1.1-xl ;;
    fastest) label="yolo-fastest-1.1 (320)"; src=(yolo-fastest-1.1); dn=yolo-fastest-1.1 ;;
    yolov3-tiny) label="yolov3-tiny (416, synthetic weights)"; src=("$YQ_DATA/models/cfg-only/yolov3-tiny.cfg" --weights synthetic --size 416); dn= ;;
    yolov8n) label="YOLOv8n (640)"; src=("$YQ_DATA/models/onnx/yolov8n-640/yolov8n.onnx"); dn= ;;
    *) echo "bench: unknown model $key" >&2; exit 2 ;;
    esac
    echo "== $label"
    # the package yquant int8 runs and ONNX Runtime's Q/DQ model is exported from
    build/yquant quantize "${src[@]}" --calib "$YQ_DATA/datasets/coco-mini/val2017_unlabelled/images" --no-val --target cpu \
        -o "$log/$key.yqp" -q > "$log/quantize-$key.txt" 2>&1 || { tail -3 "$log/quantize-$key.txt" >&2; exit 1; }
    int8=("$log/$key.yqp")
    fp32_onnx="${src[0]}"
    if [ "$ort" = 1 ]; then
        build/yquant export "$log/$key.yqp" -o "$log/$key-qdq.onnx" > /dev/null
        [ "$key" != yolov8n ] && fp32_onnx="$log/$key.onnx" && build/yquant export "${src[@]}" -o "$fp32_onnx" > /dev/null
    fi
    # the convs the package keeps in float (they run in their exact FP32, kernels/cpu_fp32.c)
    floats=$(build/yquant inspect "$log/$key.yqp" --json - | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(",".join(str(l["index"]) for l in d["layers"] if l["type"] == "conv" and "[float" in l["detail"]) or "none")')
    for t in 1 2; do
        yq "$label" "yquant FP32 (OpenBLAS)" "$t" "${src[@]}" --precision fp32
        yq "$label" "yquant int8 (the package; float convs: $floats)" "$t" "${int8[@]}"
        yq "$label" "yquant int8, every conv int8 but the heads (uncalibrated)" "$t" "${src[@]}" --precision int8
    done
    yq "$label" "yquant int8, exact dgemm path (before)" 2 "${int8[@]}" --cpu-engine dgemm
    if [ "$peer" = 1 ] && [ -n "$dn" ]; then
        d="$YQ_DATA/models/$dn"
        build/bench/bench_darknet "$(ls "$d"/*.cfg | head -1)" "$(ls "$d"/*.weights | head -1)" --runs "$dn_runs" \
            > "$log/dn-$key.txt" 2>/dev/null
        rows+=("$label|darknet FP32 (Debian, no OpenMP)|1|$(ms_of "$log/dn-$key.txt")")
        echo "  darknet: $(ms_of "$log/dn-$key.txt") ms"
    fi
    if [ "$ort" = 1 ]; then
        for t in 1 2; do
            for m in fp32 int8; do
                f="$fp32_onnx"; [ $m = int8 ] && f="$log/$key-qdq.onnx"
                python3 bench/onnx/ort_time.py "$f" --threads "$t" --runs "$runs" > "$log/ort-$key-$m-$t.txt"
                e="ONNX Runtime FP32"; [ $m = int8 ] && e="ONNX Runtime int8 (yquant's Q/DQ export)"
                rows+=("$label|$e|$t|$(ms_of "$log/ort-$key-$m-$t.txt")")
                echo "  $e, $t thread(s): $(ms_of "$log/ort-$key-$m-$t.txt") ms"
            done
        done
    fi
done

# per model and thread count: ratios against yquant FP32 and, where it ran, ONNX Runtime int8
table() {
    echo "| model | engine | threads | ms (median) | img/s | x yquant FP32 | x ORT int8 |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for r in "${rows[@]}"; do
        IFS='|' read -r m e t ms <<< "$r"
        fp="-"; oi="-"
        for q in "${rows[@]}"; do
            IFS='|' read -r m2 e2 t2 ms2 <<< "$q"
            [ "$m2" = "$m" ] && [ "$t2" = "$t" ] && [ "$e2" = "yquant FP32 (OpenBLAS)" ] && fp=$(awk -v a="$ms" -v b="$ms2" 'BEGIN { printf "%.2f", b / a }')
            [ "$m2" = "$m" ] && [ "$t2" = "$t" ] && [[ "$e2" == "ONNX Runtime int8"* ]] && oi=$(awk -v a="$ms" -v b="$ms2" 'BEGIN { printf "%.2f", b / a }')
        done
        printf "| %s | %s | %s | %.2f | %.1f | %s | %s |\n" "$m" "$e" "$t" "$ms" "$(awk -v a="$ms" 'BEGIN { print 1000 / a }')" "$fp" "$oi"
    done
}
echo
table

mkdir -p bench/results
out="bench/results/cpu_int8_$(date +%Y-%m-%d).md"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | wc -l)
[ "$dirty" -gt 0 ] && commit="$commit (+ uncommitted changes to $dirty tracked files)"
{
    echo "# CPU int8: yquant's engine against yquant FP32, darknet and ONNX Runtime, one run"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average before the run: $load_before"
    echo "- machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), nproc $(nproc); flags: $(grep -o -w 'avx2\|avx512bw\|avx512_vnni\|avx_vnni' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    echo "- yquant: git $commit; int8 engine: $(grep -h -o 'CPU int8 ([a-z0-9-]*' "$log"/*.txt | head -1 | sed 's/.*(//')"
    echo "- OpenBLAS $(pkg-config --modversion openblas 2>/dev/null || echo '?'); darknet $(dpkg-query -W -f='${Version}' darknet 2>/dev/null || echo 'not installed') (own gemm, one thread); onnxruntime $(python3 -c 'import onnxruntime; print(onnxruntime.__version__)' 2>/dev/null || echo 'not installed')"
    echo "- batch 1, $runs timed runs after 3 warm-up (darknet $dn_runs), median; the same deterministic input for every yquant engine"
    echo "- command: bench/cpu_int8.sh (YQ_BENCH_RUNS=$runs YQ_BENCH_MODELS=\"$models\")"
    echo
    table
    echo
    echo "\"x yquant FP32\": yquant FP32's time over the row's at the same thread count (above 1: faster);"
    echo "\"x ORT int8\" likewise against ONNX Runtime running yquant's Q/DQ export of the same package."
    echo "Every yquant int8 engine gives the same bytes (tests/test_int8.c, tests/test_cpu8*.c)."
} > "$out"
echo "wrote $out"
