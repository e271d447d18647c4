#!/usr/bin/env bash
# Runs every test program (build/tests/test_*) and every Python harness (tests/*_test.py),
# counts their PASS/FAIL/SKIP lines, and ends with one line: N passed, N failed, N skipped.
# YQ_TEST_ONLY=substr runs only the tests whose name contains substr.
# YQ_BUILD=DIR takes the programs from DIR (default build); YQ_ASAN=1 (make test-asan) runs
# the C tests under AddressSanitizer/UBSan and a few CLI cases instead of the Python harnesses,
# and counts any sanitizer report as a failure.
set -u
cd "$(dirname "$0")/.."
export YQ_DATA="${YQ_DATA:-../shared}"
BUILD="${YQ_BUILD:-build}"
ASAN="${YQ_ASAN:-0}"
if [ "$ASAN" = 1 ]; then
    # protect_shadow_gap=0: the CUDA runtime maps memory where ASan's shadow gap would be
    export ASAN_OPTIONS="detect_leaks=1:protect_shadow_gap=0:exitcode=86:abort_on_error=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=87"
    export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
crashed=0
for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    echo "== $t"
    "$t" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    # A program that dies (signal, abort) has a failure the per-test lines cannot show.
    if [ "$rc" -gt 1 ]; then
        echo "FAIL $(basename "$t"): exited with status $rc" | tee -a "$log"
        crashed=$((crashed + 1))
    fi
done
if [ "$ASAN" = 1 ]; then
    # a few CLI cases on the sanitizer build: bad input, a real model, a package round trip
    Y="$BUILD/yquant"
    M="$YQ_DATA/models/yolo-fastest-1.1"
    S="$YQ_DATA/datasets/darknet-samples"
    tmp=$(mktemp -d)
    cli_case() {   # name, expected exit status (0 or "nz"), command...
        local name=$1 want=$2; shift 2
        "$@" > "$tmp/out" 2>&1
        local rc=$?
        if grep -q "ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer" "$tmp/out"; then
            echo "FAIL asan_cli_$name: sanitizer report"; sed -n 1,40p "$tmp/out"
        elif { [ "$want" = 0 ] && [ $rc -ne 0 ]; } || { [ "$want" = nz ] && { [ $rc -eq 0 ] || [ $rc -gt 2 ]; }; }; then
            echo "FAIL asan_cli_$name: exit status $rc"; tail -5 "$tmp/out"
        else
            echo "PASS asan_cli_$name"
        fi
    } >> "$log"
    printf '[net]\nwidth=32\n[convolutional]\nfilters=-4\n' > "$tmp/bad.cfg"
    cli_case bad_cfg nz "$Y" inspect "$tmp/bad.cfg"
    printf 'not a package' > "$tmp/bad.yqp"
    cli_case bad_package nz "$Y" inspect "$tmp/bad.yqp"
    if [ -d "$M" ] && [ -d "$S" ]; then
        cli_case inspect_model 0 "$Y" inspect "$M"
        cli_case detect_fp32 0 "$Y" detect "$M" "$S" --json "$tmp/d.json"
        # an image with nothing in it: no candidate survives (post-processing sorts none)
        cli_case detect_empty 0 "$Y" detect "$M" fuzz/corpus/image/gray.png
        cli_case detect_damaged nz "$Y" detect "$M" fuzz/corpus/image/adobe-error-midway.bin
        cli_case quantize 0 "$Y" quantize "$M" --calib "$S" --no-val --layers 0 --set keep_float=0 -o "$tmp/m.yqp"
        # keep_float's choice rewrites the graph again (the first rewrite's memory freed)
        cli_case quantize_keep_float 0 "$Y" quantize "$M" --calib "$S" --no-val --layers 0 --set keep_float=2 -o "$tmp/k.yqp"
        cli_case detect_int8 0 "$Y" detect "$tmp/m.yqp" "$S" --json "$tmp/q.json"
        cli_case inspect_package 0 "$Y" inspect "$tmp/m.yqp"
    else
        echo "SKIP asan_cli_models: $M or $S not found" >> "$log"
    fi
    rm -rf "$tmp"
    cat "$log" | grep '^[A-Z]* asan_cli' || true
fi
for t in tests/*_test.py; do
    [ -f "$t" ] || continue
    [ "$ASAN" = 1 ] && break
    echo "== $t"
    python3 "$t" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -gt 1 ]; then
        echo "FAIL $(basename "$t"): exited with status $rc" | tee -a "$log"
    fi
done
# The fuzzers (libFuzzer; clang): 60 s each in CI, 10 s locally unless YQ_FUZZ_TIME says.
if [ "${YQ_FUZZ_TIME:-}" = 0 ]; then
    :   # fuzzers not asked for (make test-asan)
elif command -v clang >/dev/null && [ -z "${YQ_TEST_ONLY:-}" ]; then
    ft=${YQ_FUZZ_TIME:-$([ "${CI:-}" = true ] && echo 60 || echo 10)}
    echo "== fuzzers, ${ft} s each"
    if [ "$ft" -gt 0 ] && make -s fuzz FUZZ_TIME="$ft" > build/fuzz.log 2>&1; then
        echo "PASS fuzz (cfg, weights, qconfig, package, coco, labels, image: ${ft} s each)" | tee -a "$log"
    elif [ "$ft" -gt 0 ]; then
        tail -30 build/fuzz.log
        echo "FAIL fuzz: see build/fuzz.log and build/fuzz/artifacts/" | tee -a "$log"
    fi
else
    echo "SKIP fuzz: clang not found" | tee -a "$log"
fi
p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
echo
grep '^FAIL ' "$log" || true
echo "$p passed, $f failed, $s skipped"
[ "$f" -eq 0 ]
