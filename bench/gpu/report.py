#!/usr/bin/env python3
"""Side-by-side table of one bench/gpu/run_gpu.sh run, as markdown on stdout.

  report.py LOGDIR    (LOGDIR holds <model>.yq.json, <model>.yq8.json, <model>.torch.json,
                       <model>.cudnn8.json, <model>.yq.txt and env.txt, as run_gpu.sh writes)

Per model and batch, every engine's median latency (eager launches, and replayed
from a CUDA graph where the engine was captured), images/s from the better of the
two, and the ratios to the two anchors measured in the same run: yquant's own FP32
cuDNN path and PyTorch FP16 channels_last from a CUDA graph (> 1: faster than the
anchor).  cuDNN int8 rows are sums over the conv layers alone (no other op, no
requantize): a lower bound of what a whole network on them would take."""
import json
import os
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def best(r):
    g = r.get('graph_median_ms', -1)
    return g if g and g > 0 and g < r['median_ms'] else r['median_ms']


def fmt(v, p=3):
    return '-' if v is None or v < 0 else f'{v:.{p}f}'


def model_section(logdir, tag, title, out):
    yq = load(os.path.join(logdir, f'{tag}.yq.json'))
    yq8 = load(os.path.join(logdir, f'{tag}.yq8.json'))
    th = load(os.path.join(logdir, f'{tag}.torch.json'))
    dn = load(os.path.join(logdir, f'{tag}.cudnn8.json'))
    rows = []   # (batch, engine, precision, eager, graph, best_ms, note)
    for src, label in ((yq, None), (yq8, 'all convs int8')):
        for r in (src or {}).get('results', []):
            name = r['backend']
            if label:
                name = 'yquant dp4a (int8 heads too)'
            rows.append((r['batch'], name, r['precision'], r['median_ms'], r.get('graph_median_ms', -1), best(r), ''))
    for r in (th or {}).get('results', []):
        rows.append((r['batch'], r['backend'], r['precision'], r['median_ms'], r['graph_median_ms'], best(r), ''))
    for c in (dn or {}).get('configs', []):
        if c['layers_ran'] <= 0:
            continue
        note = f"convs only, {c['layers_ran']}/{c['layers']} layers"
        rows.append((c['batch'], f"cuDNN int8 {c['config']}", 'int8', c['sum_ms'], -1, c['sum_ms'], note))
    if not rows:
        out.append(f'\n## {title}\n\nno results (see the logs)\n')
        return
    gf = (yq or th or {}).get('gflop_per_image') or (dn or {}).get('gop_per_image')
    out.append(f'\n## {title}\n')
    if gf:
        out.append(f'{gf:.2f} G(FL)OP per image.\n')
    out.append('| batch | engine | prec | eager ms | graph ms | img/s | x yquant FP32 (cuDNN) | x PyTorch FP16 graph | note |')
    out.append('|---:|---|---|---:|---:|---:|---:|---:|---|')
    for b in sorted({r[0] for r in rows}):
        br = [r for r in rows if r[0] == b]
        fp32 = next((r[5] for r in br if r[1].startswith('cuDNN FP32')), None)
        t16 = next((r[4] for r in br if r[1].startswith('PyTorch FP16') and r[4] > 0), None)
        for r in br:
            x32 = f'{fp32 / r[5]:.2f}' if fp32 else '-'
            x16 = f'{t16 / r[5]:.2f}' if t16 else '-'
            out.append(f'| {b} | {r[1]} | {r[2]} | {fmt(r[3])} | {fmt(r[4])} | {b / (r[5] * 1e-3):.1f} | {x32} | {x16} | {r[6]} |')
    # failed configurations of cuDNN int8
    for c in (dn or {}).get('configs', []):
        if c['layers_ran'] <= 0:
            out.append(f"\ncuDNN int8 {c['config']} ({c['desc']}), batch {c['batch']}: no conv layer ran (see the log).")


def targets(logdir, out, peak):
    yq = load(os.path.join(logdir, 'yolov3.yq.json'))
    if not yq:
        return
    res = yq['results']
    out.append('\n## Targets (reported, not asserted)\n')
    i8 = next((r for r in res if r['precision'] == 'int8' and r['batch'] == 1), None)
    f32 = next((r for r in res if r['precision'] == 'fp32' and r['batch'] == 1), None)
    if i8 and f32:
        ok = best(i8) < best(f32)
        out.append(f'- YOLOv3-416 batch 1, int8 end to end {best(i8):.3f} ms vs our FP32 cuDNN {best(f32):.3f} ms: '
                   f'{"met" if ok else "NOT met"} ({best(f32) / best(i8):.2f}x).')
    i32 = next((r for r in res if r['precision'] == 'int8' and r['batch'] == 32 and r.get('profile')), None)
    if i32:
        big = [e for e in i32['profile'] if e['op'] == 'conv' and ' 3x3/1' in e['shape'] and e.get('gflop', 0) > 0]
        big.sort(key=lambda e: -e['gflop'])
        big = big[:12]
        if big:
            gop = sum(e['gflop'] for e in big)
            us = sum(e['us'] for e in big)
            tops = gop / (us * 1e-6) / 1e3
            out.append(f'- dp4a on YOLOv3\'s {len(big)} largest 3x3 stride-1 convs at batch 32 (each timed alone): '
                       f'{tops:.1f} TOPS = {100 * tops / peak:.0f}% of the dp4a peak {peak:.0f} TOPS '
                       f'(target 60%: {"met" if tops >= 0.6 * peak else "NOT met"}); per layer: ' +
                       ', '.join(f"{e['shape'].split(' ')[0]} {e['tops']:.0f}" for e in big[:6]) + ' TOPS.')


def main():
    logdir = sys.argv[1]
    out = []
    env = ''
    try:
        with open(os.path.join(logdir, 'env.txt')) as f:
            env = f.read().strip()
    except OSError:
        pass
    peak = 133.0
    for line in env.splitlines():
        if line.startswith('dp4a_peak_tops='):
            try:
                peak = float(line.split('=', 1)[1])
            except ValueError:
                pass
    out.append('# GPU: yquant int8 (dp4a) and FP32/FP16 (cuDNN) vs PyTorch FP16 and cuDNN int8, same run\n')
    out.append('```\n' + env + '\n```')
    out.append('\nLatency: median of the timed runs, each between two CUDA events and waited for; the float batch is '
               'on the device already, its conversion to the engine\'s type and layout is timed.  "graph": the same '
               'work replayed from a captured CUDA graph.  img/s = batch / the better median.  Ratios: the anchor\'s '
               'time over the row\'s (> 1: faster than the anchor).')
    model_section(logdir, 'yolov3', 'YOLOv3 at 416x416 (synthetic weights)', out)
    model_section(logdir, 'fastest', 'yolo-fastest-1.1-xl at 320x320 (its COCO weights)', out)
    targets(logdir, out, peak)
    for tag in ('yolov3', 'fastest'):
        p = os.path.join(logdir, f'{tag}.yq.txt')
        if os.path.exists(p):
            with open(p) as f:
                txt = f.read()
            i = txt.find('\nprofile:')
            if i >= 0:
                j = txt.find('\nRESULT', i)
                out.append(f'\n## yquant bench --profile, {tag}\n\n```' + txt[i:j if j > 0 else None].rstrip() + '\n```')
    print('\n'.join(out))


if __name__ == '__main__':
    main()
