#!/usr/bin/env python3
"""The library takes no switch from the environment and never prints.  Every getenv() in its
sources (ir/, quant/, calib/, runtime/, kernels/, pipeline/, datasets/) is one of the allowed
reads below, each of which only locates a file, never changes what is computed or which kernel
runs.  Options (yq_session_opt, plan flags, the bench's flags) are how a caller chooses; the CLI
reads YQ_DATA and SOURCE_DATE_EPOCH for its own defaults.  No call in those sources writes to
stdout or stderr (printf, puts, perror, or an f-function on stdout/stderr): warnings, notes and
progress go to the caller's callbacks, errors into its yq_error.

Prints PASS/FAIL lines (counted by tests/run.sh); exits 0 if none failed."""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB_DIRS = ["ir", "quant", "calib", "runtime", "kernels", "pipeline", "datasets"]
# (file, variable): the calibration cache's default folder
ALLOWED = {("pipeline/quantize.c", "XDG_CACHE_HOME"), ("pipeline/quantize.c", "HOME")}
CALL = re.compile(r'\bgetenv\s*\(\s*("?)([A-Za-z0-9_]*)\1?\s*\)')
PRINT = re.compile(r'(?<![A-Za-z0-9_])(printf|vprintf|puts|putchar|perror)\s*\(|'
                   r'\b(fprintf|vfprintf|fputs|fputc|putc|fwrite|fflush)\s*\((?:[^;]*,)?\s*(stderr|stdout)\s*[),]')


def main():
    failed = 0
    prints = 0
    seen = set()
    for d in LIB_DIRS:
        for path in sorted(glob.glob(os.path.join(ROOT, d, "**", "*.*"), recursive=True)):
            if not path.endswith((".c", ".h", ".cu", ".cuh", ".cc", ".cpp")):
                continue
            rel = os.path.relpath(path, ROOT)
            with open(path, encoding="utf-8", errors="replace") as f:
                for ln, line in enumerate(f, 1):
                    code = line.split("//")[0]
                    if PRINT.search(code) and not code.lstrip().startswith(("*", "/*")):
                        print(f"FAIL print[{rel}:{ln}]: the library writes to the terminal: {code.strip()[:100]} "
                              "(report through the caller's callbacks or yq_error)")
                        prints += 1
                    for m in CALL.finditer(line):
                        var = m.group(2) if m.group(1) else "<" + m.group(2) + ">"
                        if (rel, var) in ALLOWED:
                            seen.add((rel, var))
                            continue
                        print(f"FAIL env[{rel}:{ln}]: the library reads {var} from the environment "
                              "(make it an option of the session, plan or command)")
                        failed += 1
    missing = ALLOWED - seen
    if missing:   # a stale allowance would let a new read of that name in unnoticed
        for rel, var in sorted(missing):
            print(f"FAIL env[allowed]: {rel} no longer reads {var}: take it off ALLOWED")
        failed += len(missing)
    if not failed:
        print(f"PASS env: the library's only environment reads are {sorted(v for _, v in ALLOWED)} (the cache's folder)")
    if not prints:
        print("PASS print: no library source writes to stdout or stderr")
    return 1 if failed or prints else 0


if __name__ == "__main__":
    sys.exit(main())
