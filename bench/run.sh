#!/usr/bin/env bash
# CPU FP32 throughput: yquant against Debian's darknet (the peer), same model, same machine,
# same run.  Prints a table and writes it, with the machine and the profile, to
# bench/results/cpu_fp32_<date>.md.
#
#   bench/run.sh                     (or `make bench`)
#
# Environment: YQ_DATA (default ../shared), YQ_BENCH_MODEL (default yolo-fastest-1.1-xl),
# YQ_BENCH_RUNS (ours, default 50), YQ_BENCH_DN_RUNS (darknet, default 20),
# YQ_BENCH_BATCH (the larger batch, default 8).
#
# Threads, stated in the table for every row: Debian's darknet has its own gemm and no
# OpenMP, so it runs on one thread (its CPU/wall column shows it).  Ours runs with
# OPENBLAS_NUM_THREADS=1 and =2: OpenBLAS's sgemm (dense and 1x1 conv) uses that many
# threads, yquant's own kernels (depthwise conv, pooling, ...) one.  The ratio that compares
# like with like is the 1-thread row's.
# The machine may be shared: CPU/wall well under the thread count means the run was starved
# and its times are pessimistic.
set -euo pipefail
cd "$(dirname "$0")/.."
export YQ_DATA="${YQ_DATA:-../shared}"
model="${YQ_BENCH_MODEL:-yolo-fastest-1.1-xl}"
runs="${YQ_BENCH_RUNS:-50}"
dn_runs="${YQ_BENCH_DN_RUNS:-20}"
big="${YQ_BENCH_BATCH:-8}"
mdir="$YQ_DATA/models/$model"

make -s build/bench/bench_cpu
peer=0
if [ -f /usr/lib/darknet/libdarknet.so ] && [ -f /usr/lib/darknet/include/darknet.h ]; then
    mkdir -p build/bench
    cc -O2 -I/usr/lib/darknet/include bench/darknet_peer/bench_darknet.c -L/usr/lib/darknet -ldarknet \
        -Wl,-rpath,/usr/lib/darknet -lm -lpthread -o build/bench/bench_darknet
    peer=1
else
    echo "bench: /usr/lib/darknet not installed (apt-get install darknet): no peer rows, no ratios" >&2
fi

log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# field NAME FILE: the value of NAME=... on the RESULT line of FILE
field() { sed -n "s/^RESULT .*[ ]$1=\([^ ]*\).*/\1/p" "$2"; }

rows=()   # "engine|batch|threads|ms_per_img|min_ms_per_img|cpu_ms_per_img|img_s|cpu_util"
if [ "$peer" = 1 ]; then
    cfg=$(ls "$mdir"/*.cfg | head -1)
    weights=$(ls "$mdir"/*.weights | head -1)
    echo "== darknet: $cfg, $dn_runs runs"
    build/bench/bench_darknet "$cfg" "$weights" --runs "$dn_runs" 2>/dev/null | tee "$log/dn.txt" | grep -v '^RESULT'
    f="$log/dn.txt"
    rows+=("darknet (Debian 2018)|1|1 (no OpenMP)|$(field ms_per_img "$f")|$(field min_ms_per_img "$f")|$(field cpu_ms_per_img "$f")|$(field img_s "$f")|$(field cpu_util "$f")")
fi
for b in 1 "$big"; do
    for t in 1 2; do
        echo "== yquant: batch $b, OPENBLAS_NUM_THREADS=$t, $runs runs"
        OPENBLAS_NUM_THREADS=$t build/bench/bench_cpu "$model" --batch "$b" --threads "$t" --runs "$runs" \
            --json "$log/yq_b${b}_t$t.json" > "$log/yq_b${b}_t$t.txt"
        grep -E '^(timed| {9})' "$log/yq_b${b}_t$t.txt"
        f="$log/yq_b${b}_t$t.txt"
        rows+=("yquant FP32|$b|$t|$(field ms_per_img "$f")|$(field min_ms_per_img "$f")|$(field cpu_ms_per_img "$f")|$(field img_s "$f")|$(field cpu_util "$f")")
    done
done

dn_ms=""; dn_min=""
[ "$peer" = 1 ] && { dn_ms=$(field ms_per_img "$log/dn.txt"); dn_min=$(field min_ms_per_img "$log/dn.txt"); }
# The ratio is images/s over darknet's: on medians (the headline), and on the fastest run of
# each (less sensitive to other load on a shared machine).
table() {
    echo "| engine | batch | threads | ms/img median | ms/img min | CPU ms/img | img/s (median) | x darknet (median) | x darknet (min) | CPU/wall |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    for r in "${rows[@]}"; do
        IFS='|' read -r e b t ms mn cpu ips cu <<< "$r"
        ratio="-"; ratio_min="-"
        if [ -n "$dn_ms" ]; then
            ratio=$(awk -v a="$ms" -v d="$dn_ms" 'BEGIN { printf "%.2f", d / a }')
            ratio_min=$(awk -v a="$mn" -v d="$dn_min" 'BEGIN { printf "%.2f", d / a }')
        fi
        printf "| %s | %s | %s | %.2f | %.2f | %.2f | %.1f | %s | %s | %.2f |\n" "$e" "$b" "$t" "$ms" "$mn" "$cpu" "$ips" "$ratio" "$ratio_min" "$cu"
    done
}
echo
table

# The results file.
mkdir -p bench/results
out="bench/results/cpu_fp32_$(date +%Y-%m-%d).md"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain --untracked-files=no 2>/dev/null | wc -l)
[ "$dirty" -gt 0 ] && commit="$commit (+ uncommitted changes to $dirty tracked files)"
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
blas=$(sed -n 's/^threads: .*; //p' "$log/yq_b1_t1.txt")
{
    echo "# CPU FP32: yquant vs Debian's darknet, $model at its cfg size"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: $cpu, nproc $(nproc), load average before the run $load_before"
    echo "- OpenBLAS: $(pkg-config --modversion openblas 2>/dev/null || echo '?') ($blas)"
    echo "- darknet: $(dpkg-query -W -f='${Package} ${Version}' darknet 2>/dev/null || echo 'not installed'), own gemm, no OpenMP: 1 thread"
    echo "- yquant: git $commit; threads = OPENBLAS_NUM_THREADS for OpenBLAS sgemm (dense, 1x1 conv), 1 for yquant's own kernels (depthwise conv, pooling, shortcut, route, upsample)"
    echo "- runs: darknet $dn_runs, yquant $runs (after warm-up), same deterministic input, median per run"
    echo "- command: bench/run.sh (YQ_BENCH_MODEL=$model YQ_BENCH_RUNS=$runs YQ_BENCH_DN_RUNS=$dn_runs YQ_BENCH_BATCH=$big)"
    echo
    table
    echo
    if [ -n "$dn_ms" ]; then
        f="$log/yq_b1_t1.txt"
        awk -v dm="$dn_ms" -v dc="$(field cpu_ms_per_img "$log/dn.txt")" -v ym="$(field ms_per_img "$f")" \
            -v yc="$(field cpu_ms_per_img "$f")" 'BEGIN {
            printf "Like for like (batch 1, one thread each): yquant is %.1fx darknet on median wall time", dm / ym
            printf " and %.1fx on CPU time per image.\n\n", dc / yc }'
    fi
    echo "CPU/wall is the process's CPU time over wall time during the timed runs: about the thread"
    echo "count when the run had the cores to itself, less when the machine was busy (then the wall"
    echo "times are pessimistic; for 1-thread rows CPU ms/img is close to what a free core would give)."
    echo "With 2 threads CPU ms/img also counts OpenBLAS's worker spinning between calls."
    echo
    echo "## yquant profile, batch 1, 1 thread (per-node clock hook)"
    echo
    echo '```'
    awk '/^profile:/ { p = 1 } /^RESULT/ { p = 0 } p' "$log/yq_b1_t1.txt" | sed '${/^$/d}'
    echo '```'
} > "$out"
echo
echo "wrote $out"
