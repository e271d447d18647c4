#!/usr/bin/env bash
# Installs what yquant needs to build and test on Debian 12, and nothing that is already there.
#
#   scripts/install-deps.sh        (as root, or as a user with sudo)
#
# Debian packages: compiler and fuzzer runtimes, OpenBLAS, HDF5, cJSON, libjpeg, libpng, OpenSSL,
# cairo and the DejaVu fonts (pictures),
# OpenCV (only as the test peer of the image decoders),
# darknet (the peer the FP32 graph is compared with), chromium (headless, for the report
# screenshot test), python3 and pip.  apt is run only when
# dpkg-query reports a package missing, so a second run takes about a second.
# Python packages: scripts/requirements-test.txt, installed with pip only when one is missing;
# scripts/requirements-build.txt (CUTLASS's headers, PyPI nvidia-cutlass, pinned: the CUDA
# build includes them; installed --no-deps, as only its headers are used).
# CUDA is NOT installed here: the toolkit is expected at /usr/local/cuda (or nvcc on PATH);
# without it only the GPU parts are skipped, so this prints a warning and goes on.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PKGS=(
    build-essential pkg-config
    clang libclang-rt-14-dev          # the fuzzers (-fsanitize=fuzzer)
    libopenblas-dev libhdf5-dev hdf5-tools libcjson-dev libjpeg-dev libpng-dev libssl-dev zlib1g-dev
    protobuf-c-compiler libprotobuf-c-dev libonnx-dev   # ONNX models: onnx.proto turned into C (ir/onnx.c)
    libcairo2-dev fonts-dejavu-core   # pictures: anti-aliased labels and charts (datasets/paint.c)
    libopencv-dev                     # the test peer of the image decoders (tests/test_harden.c)
    darknet                           # the peer: /usr/lib/darknet/libdarknet.so
    libopenmpi-dev openmpi-bin        # yquant over MPI (mpirun -np N yquant eval|sweep; tests/mpi_test.py)
    chromium                          # tests/sweep_test.py renders report.html headless (skipped without)
    python3 python3-pip
)
REQS=scripts/requirements-test.txt
BUILD_REQS=scripts/requirements-build.txt

say() { printf 'install-deps: %s\n' "$*"; }
die() { printf 'install-deps: error: %s\n' "$*" >&2; exit 1; }

# ---- Debian packages ----
missing=()
for p in "${APT_PKGS[@]}"; do
    st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$st" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    say "Debian packages: all ${#APT_PKGS[@]} present"
else
    say "Debian packages missing: ${missing[*]}"
    command -v apt-get >/dev/null || die "no apt-get here (this script targets Debian 12); install by hand: ${missing[*]}"
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=()
    elif command -v sudo >/dev/null; then
        SUDO=(sudo)
    else
        die "not root and no sudo; as root run: apt-get install -y ${missing[*]}"
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${SUDO[@]}" apt-get update
    "${SUDO[@]}" apt-get install -y "${missing[@]}"
fi

# ---- CUDA: never installed here ----
if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    say "warning: nvcc not found (neither on PATH nor /usr/local/cuda/bin); the CUDA kernels" \
        "will not build and GPU tests will be skipped. Install the CUDA toolkit separately."
fi

# ---- Python packages ----
# Prints the requirements of file $1 that are not satisfied (all of them when this cannot tell).
reqs_missing() {
python3 - "$1" <<'PY'
import re, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    try:                                  # pip carries its own copy
        from pip._vendor.packaging.requirements import Requirement
    except ImportError:
        Requirement = None
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    if line.startswith("-"):          # an option line (-r, --index-url): let pip decide
        print(line)
        continue
    try:
        if Requirement:
            r = Requirement(line)
            if r.marker and not r.marker.evaluate():
                continue
            if not r.specifier.contains(metadata.version(r.name), prereleases=True):
                print(line)
        else:
            name = re.match(r"[A-Za-z0-9._-]+", line).group(0)
            metadata.version(name)
            if name != line:             # a version constraint this cannot check
                print(line)
    except Exception:
        print(line)
PY
}

# Installs requirements file $1 when any is missing; $2...: extra pip arguments.
pip_reqs() {
    local file=$1; shift
    [ -f "$file" ] || die "$file is missing"
    local missing
    missing=$(reqs_missing "$file")
    if [ -z "$missing" ]; then
        say "Python packages: all in $file present ($(python3 --version 2>&1))"
        return
    fi
    say "Python packages missing: ${missing//$'\n'/, }"
    python3 -m pip --version >/dev/null 2>&1 || die "python3 has no pip ($(command -v python3))"
    local log
    log=$(mktemp)
    if ! python3 -m pip install --disable-pip-version-check "$@" -r "$file" 2>&1 | tee "$log"; then
        # Debian's own python3 refuses (PEP 668); only then override it.
        grep -q externally-managed-environment "$log" || { rm -f "$log"; die "pip install -r $file failed"; }
        say "pip refused (externally managed environment); retrying with --break-system-packages"
        python3 -m pip install --disable-pip-version-check --break-system-packages "$@" -r "$file" || { rm -f "$log"; die "pip install -r $file failed"; }
    fi
    rm -f "$log"
}

command -v python3 >/dev/null || die "python3 not found after installing it"
pip_reqs "$REQS"
pip_reqs "$BUILD_REQS" --no-deps
say "done"
