#!/usr/bin/env python3
"""Reader for dn_dump's OUT.bin (format "YQDN" version 1, documented in tests/peer/dn_dump.c).

    python3 tests/peer/read_dump.py OUT.bin          # prints name, shape, min, max, mean per tensor

As a module: read_dump(path) -> list of (name, numpy float32 array of shape (c, h, w)).
"""
import struct
import sys

import numpy as np

MAGIC = b"YQDN"
VERSION = 1


def read_dump(path):
    with open(path, "rb") as f:
        buf = f.read()
    pos = 0

    def take(n, what):
        nonlocal pos
        if n < 0 or pos + n > len(buf):
            raise ValueError(f"{path}: truncated reading {what} at byte {pos}")
        b = buf[pos:pos + n]
        pos += n
        return b

    if take(4, "magic") != MAGIC:
        raise ValueError(f"{path}: bad magic (not a dn_dump file)")
    version, n = struct.unpack("<ii", take(8, "header"))
    if version != VERSION:
        raise ValueError(f"{path}: version {version}, this reader knows {VERSION}")
    if n < 0 or n > 4096:
        raise ValueError(f"{path}: implausible tensor count {n}")
    tensors = []
    for i in range(n):
        (name_len,) = struct.unpack("<i", take(4, f"tensor {i} name length"))
        if name_len < 0 or name_len > 4096:
            raise ValueError(f"{path}: tensor {i}: bad name length {name_len}")
        name = take(name_len, f"tensor {i} name").decode("utf-8")
        c, h, w = struct.unpack("<iii", take(12, f"tensor {i} ({name}) shape"))
        if min(c, h, w) <= 0:
            raise ValueError(f"{path}: tensor {name}: bad shape {c}x{h}x{w}")
        count = c * h * w
        data = np.frombuffer(take(4 * count, f"tensor {name} data"), dtype="<f4")
        tensors.append((name, data.astype(np.float32).reshape(c, h, w)))
    if pos != len(buf):
        raise ValueError(f"{path}: {len(buf) - pos} trailing bytes after {n} tensors")
    return tensors


def main(argv):
    if len(argv) != 2:
        print("usage: read_dump.py OUT.bin", file=sys.stderr)
        return 2
    try:
        tensors = read_dump(argv[1])
    except (OSError, ValueError) as e:
        print(f"read_dump: {e}", file=sys.stderr)
        return 1
    for name, t in tensors:
        finite = np.isfinite(t).all()
        print(f"{name:12s} {'x'.join(map(str, t.shape)):14s} min {t.min():+.6g}  max {t.max():+.6g}"
              f"  mean {t.mean():+.6g}{'' if finite else '  NON-FINITE'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
