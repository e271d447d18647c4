#!/usr/bin/env bash
# Runs every test program (build/tests/test_*) and every Python harness (tests/*_test.py),
# counts their PASS/FAIL/SKIP lines, and ends with one line: N passed, N failed, N skipped.
# YQ_TEST_ONLY=substr runs only the tests whose name contains substr.
set -u
cd "$(dirname "$0")/.."
export YQ_DATA="${YQ_DATA:-../shared}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
crashed=0
for t in build/tests/test_*; do
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
for t in tests/*_test.py; do
    [ -f "$t" ] || continue
    echo "== $t"
    python3 "$t" 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" -gt 1 ]; then
        echo "FAIL $(basename "$t"): exited with status $rc" | tee -a "$log"
    fi
done
# The fuzzers (libFuzzer; clang): 60 s each in CI, 10 s locally unless YQ_FUZZ_TIME says.
if command -v clang >/dev/null && [ -z "${YQ_TEST_ONLY:-}" ]; then
    ft=${YQ_FUZZ_TIME:-$([ "${CI:-}" = true ] && echo 60 || echo 10)}
    echo "== fuzzers, ${ft} s each"
    if [ "$ft" -gt 0 ] && make -s fuzz FUZZ_TIME="$ft" > build/fuzz.log 2>&1; then
        echo "PASS fuzz (cfg parser and weights reader, ${ft} s each)" | tee -a "$log"
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
