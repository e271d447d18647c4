#!/usr/bin/env python3
"""The CLI on the public API: every header a cli/*.c file reaches, directly or through other
headers (the compiler's own dependency list, `cc -MM`), is under include/ or one of cli/'s own
headers other than cli/internal.h.

The files not yet moved onto the public API are listed in PENDING: they are reported in a note
line, not checked.  A listed file that has become clean fails the test until it is taken off
the list, so the list only shrinks.

Prints PASS/FAIL lines (counted by tests/run.sh); exits 0 if none failed."""
import glob
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# still on the graph, the pipeline layer or the CUDA runtime (issue 16)
PENDING = set()


def internal_headers(src):
    """The headers of this tree that src reaches and that are not public; None if cc failed."""
    cc = os.environ.get("CC", "cc")
    flags = subprocess.run(["pkg-config", "--cflags", "libcjson", "hdf5-serial", "openblas"], capture_output=True,
                           text=True).stdout
    r = subprocess.run([cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-MM", "-Iinclude", "-I."] + shlex.split(flags) +
                       [src], capture_output=True, text=True, cwd=ROOT)
    if r.returncode:
        print(r.stderr[-500:])
        return None
    deps = r.stdout.replace("\\\n", " ").split(":", 1)[1].split()
    bad = []
    for d in deps:
        if d.startswith("/") or d == src:
            continue                                  # system headers, the file itself
        if d.startswith("include/"):
            continue
        if d.startswith("cli/") and d != "cli/internal.h":
            continue
        bad.append(d)
    return bad


def main():
    failed = 0
    clean, pending_used, stale = [], [], []
    for src in sorted(glob.glob(os.path.join(ROOT, "cli", "*.c"))):
        rel = os.path.relpath(src, ROOT)
        name = os.path.basename(src)
        bad = internal_headers(rel)
        if bad is None:
            print(f"FAIL cli_boundary[{name}]: cc -MM failed")
            failed += 1
        elif name in PENDING:
            (stale if not bad else pending_used).append(name)
        elif bad:
            print(f"FAIL cli_boundary[{name}]: reaches internal headers: {' '.join(bad[:8])}"
                  f"{' ...' if len(bad) > 8 else ''}")
            failed += 1
        else:
            clean.append(name)
    missing = sorted(p for p in PENDING if not os.path.exists(os.path.join(ROOT, "cli", p)))
    if clean and not failed:
        print(f"PASS cli_boundary_public: {len(clean)} files on the public headers alone ({', '.join(clean)})")
    if stale or missing:
        print(f"FAIL cli_boundary_pending_list: on the public API now or gone, take off PENDING: "
              f"{', '.join(stale + missing)}")
        failed += 1
    else:
        print(f"PASS cli_boundary_pending_list")
    print(f"# note: {len(pending_used)} cli files still reach internal headers (issue 16): {', '.join(pending_used)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
