#!/usr/bin/env python3
"""Raw pixel sidecars: the device's cv2 decoding, to check yquant's own decoders against
(the GPU builds decode with libjpeg and libpng themselves; they no longer read these).

    bench/gpu/sidecars.py [--manifest FILE] [--check FILE] DIR...

For every .jpg/.jpeg/.png (any case) in each DIR writes DIR/NAME.rgb as yq_image_write_raw
writes it: width x height x 3 bytes, RGB, row major.  Decoded with
cv2.imdecode(bytes, IMREAD_COLOR | IMREAD_IGNORE_ORIENTATION), then BGR -> RGB.

  --manifest FILE  writes "sha256  NAME.rgb" for every sidecar written (sorted by name)
  --check FILE     compares the sidecars with such a manifest (one written here by our own
                   decoder: bench/gpu/sweep_gpu.sh pack) and prints how many match, differ,
                   and are missing on either side; the exit status stays 0 either way
Names in the manifest are the sidecars' file names without their folder.
"""
import argparse
import hashlib
import os
import sys

EXTS = ('.jpg', '.jpeg', '.png')


def images(d):
    return sorted(f for f in os.listdir(d) if f.lower().endswith(EXTS) and os.path.isfile(os.path.join(d, f)))


def read_manifest(path):
    m = {}
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            parts = line.split(None, 1)
            if len(parts) != 2:
                sys.exit(f'{path}:{ln}: expected "sha256  NAME.rgb"')
            m[os.path.basename(parts[1].strip())] = parts[0].lower()
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('dirs', nargs='+', metavar='DIR')
    ap.add_argument('--manifest', metavar='FILE', help='write "sha256  NAME.rgb" lines')
    ap.add_argument('--check', metavar='FILE', help='compare with a manifest (exit 0 either way)')
    a = ap.parse_args()

    import cv2
    import numpy as np

    flags = cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION
    sums, bad = {}, 0
    for d in a.dirs:
        for f in images(d):
            p = os.path.join(d, f)
            with open(p, 'rb') as fh:
                buf = np.frombuffer(fh.read(), dtype=np.uint8)
            im = cv2.imdecode(buf, flags) if buf.size else None
            if im is None or im.ndim != 3 or im.shape[2] != 3 or im.dtype != np.uint8:
                print(f'sidecars: {p}: cannot be decoded to 8-bit BGR (skipped)', file=sys.stderr)
                bad += 1
                continue
            raw = np.ascontiguousarray(cv2.cvtColor(im, cv2.COLOR_BGR2RGB)).tobytes()
            name = f + '.rgb'
            with open(os.path.join(d, name), 'wb') as out:
                out.write(raw)
            if name in sums:
                print(f'sidecars: {name} is in more than one folder; the manifest keeps the last', file=sys.stderr)
            sums[name] = hashlib.sha256(raw).hexdigest()
    print(f'sidecars: {len(sums)} written (cv2 {cv2.__version__}), {bad} failed, in {", ".join(a.dirs)}')

    if a.manifest:
        with open(a.manifest, 'w') as f:
            for name in sorted(sums):
                f.write(f'{sums[name]}  {name}\n')
        print(f'sidecars: manifest {a.manifest} ({len(sums)} lines)')
    if a.check:
        ref = read_manifest(a.check)
        match = sorted(n for n in sums if n in ref and ref[n] == sums[n])
        differ = sorted(n for n in sums if n in ref and ref[n] != sums[n])
        extra = sorted(n for n in sums if n not in ref)
        missing = sorted(n for n in ref if n not in sums)
        ok = not differ and not missing and not extra
        print(f'sidecars: check against {a.check}: {len(match)} match, {len(differ)} differ, '
              f'{len(missing)} in the manifest but not written, {len(extra)} written but not in the manifest'
              f' -> {"SAME BYTES as the manifest" if ok else "NOT THE SAME BYTES as the manifest"}')
        for n in differ[:10]:
            print(f'  differs: {n}')
        for n in missing[:10]:
            print(f'  not written: {n}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
