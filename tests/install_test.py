#!/usr/bin/env python3
"""`make install` into a fresh prefix, then a program built against the installed copy alone.

  - `make install PREFIX=<tmp>` installs every header of include/, libyq.a, libyq.so.<version> with the
    soname libyq.so.<major> and its two links, lib/pkgconfig/yquant.pc and bin/yquant;
  - each installed header compiles alone, as C11 and as C++ (-Wall -Wextra -Werror);
  - pkg-config (PKG_CONFIG_PATH=<tmp>/lib/pkgconfig) reports the version of include/yq.h and
    flags that name only the prefix;
  - examples/detect.c, compiled outside the tree with `cc detect.c $(pkg-config --cflags
    --libs yquant)`, links the shared library (readelf: NEEDED libyq.so.<major>), runs on a
    shared model and image, and prints the same detections as build/examples/detect;
  - examples/quantize.c (the quantizer, include/yq_quant.h) builds the same way;
  - the installed yquant runs (`--version`); `make uninstall` removes every file again.

Prints PASS/FAIL/SKIP lines (counted by tests/run.sh); exits 0 if none failed."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.abspath(os.path.join(ROOT, os.environ.get("YQ_DATA") or "../shared"))
failed = 0


def report(name, ok, why=""):
    global failed
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}")
    failed += not ok


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    if not shutil.which("pkg-config"):
        print("SKIP install: pkg-config not found")
        return 0
    version = re.search(r'#define YQ_VERSION "([^"]+)"', open(os.path.join(ROOT, "include", "yq.h")).read()).group(1)
    major = version.split(".")[0]
    tmp = tempfile.mkdtemp(prefix="yq_install_")
    try:
        pfx = os.path.join(tmp, "prefix")
        r = run(["make", "-s", "-C", ROOT, "install", f"PREFIX={pfx}"])
        report("install_make", r.returncode == 0, r.stderr[-400:])
        if r.returncode:
            return 1
        lib = os.path.join(pfx, "lib")
        headers = sorted(f for f in os.listdir(os.path.join(ROOT, "include")) if f.endswith(".h"))
        want = [os.path.join(pfx, "include", h) for h in headers] + [os.path.join(lib, "libyq.a"),
                os.path.join(lib, f"libyq.so.{version}"), os.path.join(lib, "pkgconfig", "yquant.pc"),
                os.path.join(pfx, "bin", "yquant")]
        missing = [p for p in want if not os.path.isfile(p)]
        links = {f"libyq.so.{major}": f"libyq.so.{version}", "libyq.so": f"libyq.so.{major}"}
        bad_links = [k for k, v in links.items() if os.readlink(os.path.join(lib, k)) != v] \
            if all(os.path.islink(os.path.join(lib, k)) for k in links) else list(links)
        report("install_files", not missing and not bad_links, f"missing {missing}, links {bad_links}")
        cc = os.environ.get("CC", "cc")
        bad = []
        for h in headers:
            for comp, std in ((cc, "-std=c11"), ("c++", "-std=c++17")):
                if comp == "c++" and not shutil.which("c++"):
                    continue
                r = run([comp, std, "-Wall", "-Wextra", "-Werror", "-fsyntax-only", f"-I{pfx}/include", "-x",
                         "c" if comp == cc else "c++", "-"], input=f'#include "{h}"\nint yq_header_probe;\n')
                if r.returncode:
                    bad.append(f"{h} ({std}): {r.stderr.strip()[-200:]}")
        report("install_headers_standalone", not bad and len(headers) >= 4, "; ".join(bad) or f"{len(headers)} headers")
        so = run(["readelf", "-d", os.path.join(lib, f"libyq.so.{version}")]).stdout
        report("install_soname", f"[libyq.so.{major}]" in so and "SONAME" in so, so[-300:])

        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(lib, "pkgconfig"))
        mv = run(["pkg-config", "--modversion", "yquant"], env=env).stdout.strip()
        flags = run(["pkg-config", "--cflags", "--libs", "yquant"], env=env).stdout.split()
        report("install_pkgconfig", mv == version and f"-L{lib}" in flags and f"-I{pfx}/include" in flags and "-lyq" in flags,
               f"version {mv!r} (want {version}), flags {flags}")

        # examples/detect.c outside the tree, against the installed copy only
        src = os.path.join(tmp, "detect.c")
        shutil.copy(os.path.join(ROOT, "examples", "detect.c"), src)
        exe = os.path.join(tmp, "detect")
        cflags = run(["pkg-config", "--cflags", "yquant"], env=env).stdout
        libs = run(["pkg-config", "--libs", "yquant"], env=env).stdout
        r = run([cc, "-std=c11", "-o", exe, src] + shlex.split(cflags) + shlex.split(libs), cwd=tmp)
        report("install_build_example", r.returncode == 0, r.stderr[-600:])
        if r.returncode:
            return 1
        qsrc = os.path.join(tmp, "quantize.c")
        shutil.copy(os.path.join(ROOT, "examples", "quantize.c"), qsrc)
        r = run([cc, "-std=c11", "-o", os.path.join(tmp, "quantize"), qsrc] + shlex.split(cflags) + shlex.split(libs), cwd=tmp)
        report("install_build_quantize_example", r.returncode == 0, r.stderr[-600:])
        fsrc = os.path.join(tmp, "frames.c")
        shutil.copy(os.path.join(ROOT, "examples", "frames.c"), fsrc)
        fexe = os.path.join(tmp, "frames")
        r = run([cc, "-std=c11", "-o", fexe, fsrc] + shlex.split(cflags) + shlex.split(libs), cwd=tmp)
        report("install_build_frames_example", r.returncode == 0, r.stderr[-600:])
        need = run(["readelf", "-d", exe]).stdout
        report("install_links_shared", f"[libyq.so.{major}]" in need, need[-300:])

        model = os.path.join(DATA, "models", "yolo-fastest-1.1")
        img = os.path.join(DATA, "datasets", "darknet-samples", "dog.jpg")
        if not (os.path.isdir(model) and os.path.isfile(img)):
            print(f"SKIP install_run_example: {model} or {img} not found")
        else:
            renv = dict(os.environ, LD_LIBRARY_PATH=lib, CUDA_VISIBLE_DEVICES="")   # the CPU engine
            a = run([exe, model, img], env=renv)
            b = run([os.path.join(ROOT, "build", "examples", "detect"), model, img], env=renv)
            dets = [l for l in a.stdout.splitlines() if l.strip()]
            report("install_run_example", a.returncode == 0 and len(dets) > 0 and a.stdout == b.stdout,
                   f"exit {a.returncode}, {len(dets)} lines; differs from build/examples/detect: {a.stdout != b.stdout}; "
                   f"{a.stderr[-300:]}")
            # the frames example: the image's pixels as BGR frames in memory, the file's detections
            fr = run([fexe, model, img, "3"], env=renv)
            want = [l for l in a.stdout.splitlines()[2:] if l.startswith("  ")]
            got = [l for l in fr.stdout.splitlines() if l.startswith("  ")]
            report("install_run_frames_example", fr.returncode == 0 and got and got == want,
                   f"exit {fr.returncode}; frames {got[:3]} vs file {want[:3]}; {fr.stderr[-300:]}")
        v = run([os.path.join(pfx, "bin", "yquant"), "--version"])
        report("install_cli", v.returncode == 0 and version in v.stdout, v.stdout + v.stderr)

        r = run(["make", "-s", "-C", ROOT, "uninstall", f"PREFIX={pfx}"])
        left = [os.path.join(d, f) for d, _, fs in os.walk(pfx) for f in fs] + \
               [os.path.join(lib, k) for k in links if os.path.lexists(os.path.join(lib, k))]
        report("install_uninstall", r.returncode == 0 and not left, f"exit {r.returncode}, left {left}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
