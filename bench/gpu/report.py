#!/usr/bin/env python3
"""Issue 13's side-by-side tables of one bench/gpu/run_gpu.sh run, as markdown on stdout.

  report.py LOGDIR    (LOGDIR holds env.txt and, per model M, M.yq.json (yquant bench:
                       FP16 and int8 untuned / tuned), M.torch.json (PyTorch FP16),
                       M.cudnn8.json (cuDNN int8 convs) as run_gpu.sh writes them)

Every time is the better of the engine's eager median and its CUDA-graph median, the
same rule for every engine.  Ratios are the peer's time over yquant int8 tuned's (> 1:
int8 is faster).  cuDNN int8 rows are sums over the conv layers alone (no other op, no
requantize): a lower bound of what a whole network on them would take, not an engine.
Targets are reported, never asserted."""
import json
import os
import re
import sys

MODELS = [('yolov3', 'YOLOv3-416 (synthetic weights)'), ('yolov4', 'yolov4-416 (synthetic weights)'),
          ('yolov4-tiny', 'yolov4-tiny-416 (synthetic weights)'), ('fastest-xl', 'yolo-fastest-1.1-xl-320 (COCO weights)'),
          ('fastest', 'yolo-fastest-1.1-320 (COCO weights)'), ('yolov8n', 'YOLOv8n-640 ONNX (COCO weights)')]
MMA_PEAK = 1300.0    # TOPS, int8 mma.sync measured on the H200 (the figure issue 13's targets name)
COPY_BW = 4200.0     # GB/s, copy bandwidth measured on the H200 (idem)


def ceilings(logdir):
    """This card's (copy GB/s, mma.sync TOPS) as `yqgpu ceilings` measured them in the run,
    else the H200's figures; and whether they were measured."""
    c = load(os.path.join(logdir, 'ceilings.json')) or {}
    if c.get('copy_gbs', 0) > 0 and c.get('mma_s8_tops', 0) > 0:
        return c['copy_gbs'], c['mma_s8_tops'], True
    return COPY_BW, MMA_PEAK, False


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def best(r):
    g = r.get('graph_median_ms', -1) or -1
    return g if 0 < g < r['median_ms'] else r['median_ms']


def fmt(v, p=3):
    return '-' if v is None else f'{v:.{p}f}'


def ratio(a, b):
    return f'{a / b:.2f}' if a and b else '-'


def engines(logdir, tag):
    """{batch: {engine: ms}} for yquant int8 tuned / default, FP16, PyTorch FP16, cuDNN int8."""
    out = {}
    yq = load(os.path.join(logdir, f'{tag}.yq.json')) or {}
    for r in yq.get('results', []):
        e = None
        if r['precision'] == 'fp16':
            e = 'fp16'
        elif r['precision'] == 'int8' and r.get('kernels') in ('tuned', 'default'):
            e = 'int8 ' + r['kernels']
        if e:
            out.setdefault(r['batch'], {})[e] = best(r)
    th = load(os.path.join(logdir, f'{tag}.torch.json')) or {}
    for r in th.get('results', []):
        if r['precision'] == 'fp16':
            out.setdefault(r['batch'], {})['torch'] = best(r)
    dn = load(os.path.join(logdir, f'{tag}.cudnn8.json')) or {}
    for c in dn.get('configs', []):
        if c.get('layers_ran', 0) > 0 and c.get('sum_ms', 0) > 0:
            d = out.setdefault(c['batch'], {})
            cur = d.get('cudnn8')
            full = c['layers_ran'] == c['layers']
            # the fastest configuration; a partial one (cuDNN refused some convs, the
            # depthwise ones typically) says how many convs its sum covers
            if cur is None or c['sum_ms'] < cur[0]:
                d['cudnn8'] = (c['sum_ms'], c['config'], full, c['layers_ran'], c['layers'])
    return out, yq


def side_by_side(logdir, out):
    out.append('\n## Side by side\n')
    out.append('| model | batch | int8 tuned ms | int8 img/s | FP16 (cuDNN) ms | PyTorch FP16 graph ms | cuDNN int8 convs ms '
               '| int8 vs FP16 | int8 vs PyTorch | target (b1: >= 1 both; else >= 1.5 FP16, >= 2 PyTorch) |')
    out.append('|---|---:|---:|---:|---:|---:|---:|---:|---:|---|')
    tuning = []
    for tag, title in MODELS:
        e, yq = engines(logdir, tag)
        if not e:
            continue
        for b in sorted(e):
            d = e[b]
            i8, f16, th = d.get('int8 tuned'), d.get('fp16'), d.get('torch')
            dn = d.get('cudnn8')
            dns = '-' if not dn else f'{dn[0]:.3f}' + ('' if dn[2] else f' ({dn[3]}/{dn[4]} convs)')
            if i8 and f16 and th:
                need = (1.0, 1.0) if b == 1 else (1.5, 2.0)
                ok = f16 / i8 >= need[0] and th / i8 >= need[1]
                verdict = 'met' if ok else 'NOT met'
            else:
                verdict = '-'
            out.append(f'| {title} | {b} | {fmt(i8)} | {b / (i8 * 1e-3):.0f} | {fmt(f16)} | {fmt(th)} | {dns} | '
                       f'{ratio(f16, i8)} | {ratio(th, i8)} | {verdict} |' if i8 else
                       f'| {title} | {b} | - | - | {fmt(f16)} | {fmt(th)} | {dns} | - | - | - |')
        t = yq.get('tuning')
        if t:
            tuning.append(f"- {title}: {t['seconds']:.1f} s, {t['tasks']} conv shape x batch tasks, "
                          f"{t['measured']} trials measured ({t['tuner']} tuner)")
    if tuning:
        out.append('\nTuning (in the same run, no log to start from):\n')
        out.extend(tuning)


def targets(logdir, out):
    out.append('\n## Absolute targets (reported, not asserted)\n')
    v3, _ = engines(logdir, 'yolov3')
    xl, _ = engines(logdir, 'fastest-xl')

    def line(what, v, lim, le=True, unit='ms'):
        if v is None:
            return
        ok = v <= lim if le else v >= lim
        out.append(f'- {what}: {v:.3f} {unit} (target {"at most" if le else "at least"} {lim} {unit}: '
                   f'{"met" if ok else "NOT met"})' if unit == 'ms' else
                   f'- {what}: {v:.0f} {unit} (target at least {lim} {unit}: {"met" if ok else "NOT met"})')
    line('YOLOv3-416 batch 32, int8 tuned', v3.get(32, {}).get('int8 tuned'), 4.5)
    line('YOLOv3-416 batch 1, int8 tuned', v3.get(1, {}).get('int8 tuned'), 0.70)
    x32 = xl.get(32, {}).get('int8 tuned')
    if x32:
        line('yolo-fastest-1.1-xl batch 32, int8 tuned', 32 / (x32 * 1e-3), 25000, le=False, unit='img/s')
    line('yolo-fastest-1.1-xl batch 1, int8 tuned', xl.get(1, {}).get('int8 tuned'), 0.40)


SHAPE = re.compile(r'(\d+)x(\d+)x(\d+) -> (\d+)x(\d+)x(\d+) (\d+)x\d+/(\d+)')


def layer_rows(yq, batch, ridge):
    r = next((r for r in yq.get('results', []) if r['precision'] == 'int8' and r.get('kernels') == 'tuned'
              and r['batch'] == batch and r.get('profile')), None)
    rows = []
    for e in (r or {}).get('profile', []):
        m = SHAPE.match(e['shape'])
        if e['op'] != 'conv' or not m or e['us'] <= 0:
            continue
        c, h, w, f, oh, ow, k, s = map(int, m.groups())
        dense = 2.0 * f * oh * ow * k * k * c * batch * 1e-9
        groups = max(1, round(dense / e['gflop'])) if e.get('gflop') else 1
        # the bench's count (input, output, a fused residual at their types, weights once);
        # older logs: int8 in and out, weights
        by = e.get('bytes') or batch * (c * h * w + f * oh * ow) + f * c // groups * k * k
        ops = dense / groups * 1e9
        rows.append(dict(layer=e['layer'], c=c, h=h, w=w, f=f, oh=oh, ow=ow, k=k, s=s, g=groups, us=e['us'],
                         tops=e.get('tops', 0), gbs=by / (e['us'] * 1e-6) / 1e9,
                         bound='memory' if ops / by < ridge else 'compute'))
    return rows


def layers(logdir, out):
    copy, peak, measured = ceilings(logdir)
    ridge = peak * 1e12 / (copy * 1e9)   # ops a byte: below it a layer is bound by memory
    card = (f'this card, measured in the run by `yqgpu ceilings`: copy {copy:.0f} GB/s, int8 mma.sync {peak:.0f} TOPS'
            if measured else 'this card not measured: the H200\'s figures')
    yq = load(os.path.join(logdir, 'yolov3.yq.json')) or {}
    batches = sorted({r['batch'] for r in yq.get('results', []) if r.get('profile') and r.get('kernels') == 'tuned'})
    if batches:
        out.append('\n## Layers: YOLOv3-416, int8 tuned, each conv timed alone\n')
        out.append('Per distinct conv shape: the mean time of its layers, TOPS and GB/s, each as a % of the H200\'s '
                   f'figures the targets name (1300 TOPS `mma.sync`, 4.2 TB/s copy) and of {card}.  Bytes: input, '
                   'output (a head\'s dequantized output in float) and a fused shortcut\'s residual at their types, the '
                   'weights once.  Each conv\'s kernels are timed alone: 10 launches back to back between two events, '
                   'the median of the runs\' means (the tuner\'s way).  "bound": memory where the layer\'s ops per byte '
                   f'are below this card\'s ridge ({ridge:.0f} = peak / copy bandwidth), else compute.\n')
        for b in batches:
            rows = layer_rows(yq, b, ridge)
            shapes = {}
            for r in rows:
                shapes.setdefault((r['c'], r['h'], r['w'], r['f'], r['k'], r['s']), []).append(r)
            out.append(f'\nbatch {b}:\n')
            out.append('| shape | layers | bound | us | TOPS | % of 1300 | % of card | GB/s | % of 4.2 TB/s | % of card |')
            out.append('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|')
            for (c, h, w, f, k, s), rs in shapes.items():
                us = sum(r['us'] for r in rs) / len(rs)
                tops = sum(r['tops'] for r in rs) / len(rs)
                gbs = sum(r['gbs'] for r in rs) / len(rs)
                out.append(f'| {c}x{h}x{w} -> {f}, {k}x{k}/{s} | {len(rs)} | {rs[0]["bound"]} | {us:.1f} | {tops:.0f} | '
                           f'{100 * tops / MMA_PEAK:.0f}% | {100 * tops / peak:.0f}% | {gbs:.0f} | '
                           f'{100 * gbs / COPY_BW:.0f}% | {100 * gbs / copy:.0f}% |')
            big = [r for r in rows if r['k'] == 3 and r['c'] >= 128]
            if big:
                t = sum(r['tops'] for r in big) / len(big)
                out.append(f'\nbatch {b}: the {len(big)} 3x3 convs over 128 channels or more average {t:.0f} TOPS, '
                           f'{100 * t / MMA_PEAK:.1f}% of {MMA_PEAK:.0f}' +
                           (f' (target at batch 32: 60%: {"met" if t >= 0.6 * MMA_PEAK else "NOT met"})' if b == 32 else '') +
                           (f'; {100 * t / peak:.1f}% of this card\'s {peak:.0f}' if measured else ''))
            one = [r for r in rows if r['k'] == 1]
            mem = [r for r in one if r['bound'] == 'memory']
            if one and b == 32:
                g = sum(r['gbs'] for r in one) / len(one)
                out.append(f'\nbatch {b}: the {len(one)} 1x1 convs average {g:.0f} GB/s, {100 * g / COPY_BW:.0f}% of 4.2 TB/s' +
                           (f', {100 * g / copy:.0f}% of this card\'s copy bandwidth' if measured else ''))
                if mem:
                    g = sum(r['gbs'] for r in mem) / len(mem)
                    out.append(f'\nbatch {b}: the {len(mem)} memory-bound 1x1 convs average {g:.0f} GB/s: '
                               f'{100 * g / COPY_BW:.1f}% of the H200\'s 4.2 TB/s (target 50%: '
                               f'{"met" if g >= 0.5 * COPY_BW else "NOT met"})' +
                               (f', {100 * g / copy:.1f}% of this card\'s {copy:.0f} GB/s '
                                f'({"met" if g >= 0.5 * copy else "NOT met"} on this card)' if measured else ''))
    xl = load(os.path.join(logdir, 'fastest-xl.yq.json')) or {}
    batches = sorted({r['batch'] for r in xl.get('results', []) if r.get('profile') and r.get('kernels') == 'tuned'})
    if batches:
        out.append('\n## Depthwise layers: yolo-fastest-1.1-xl, int8 tuned, each timed alone (GB/s of int8 in + out)\n')
        out.append('| batch | layers | us (sum) | GB/s (mean) | % of 4.2 TB/s | % of card | slowest layer |')
        out.append('|---:|---:|---:|---:|---:|---:|---|')
        for b in batches:
            dw = [r for r in layer_rows(xl, b, ridge) if r['g'] > 1 and r['g'] == r['c']]
            if not dw:
                continue
            g = sum(r['gbs'] for r in dw) / len(dw)
            w = min(dw, key=lambda r: r['gbs'])
            out.append(f"| {b} | {len(dw)} | {sum(r['us'] for r in dw):.1f} | {g:.0f} | {100 * g / COPY_BW:.0f}% | "
                       f"{100 * g / copy:.0f}% | {w['c']}x{w['h']}x{w['w']} {w['k']}x{w['k']}/{w['s']}: {w['gbs']:.0f} GB/s |")


def main():
    logdir = sys.argv[1]
    out = []
    try:
        with open(os.path.join(logdir, 'env.txt')) as f:
            env = f.read().strip()
    except OSError:
        env = ''
    out.append('# GPU side by side: yquant int8 tuned against yquant FP16 (cuDNN), PyTorch FP16 and cuDNN int8, one run\n')
    out.append('```\n' + env + '\n```')
    out.append('\nLatency: median of the timed runs between two CUDA events, the float batch on the device, its '
               'conversion timed; each engine\'s better of eager launches and CUDA-graph replay.  yquant int8: every '
               'conv int8 (heads too, as `--head int8`), kernels tuned per layer in the same run.  Ratios: the '
               'peer\'s time over int8\'s.')
    side_by_side(logdir, out)
    targets(logdir, out)
    layers(logdir, out)
    print('\n'.join(out))


if __name__ == '__main__':
    main()
