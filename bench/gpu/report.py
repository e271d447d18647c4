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
import re
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
    tu = load(os.path.join(logdir, f'{tag}.tuned.json'))
    tu2 = load(os.path.join(logdir, f'{tag}.tuned2.json'))
    rows = []   # (batch, engine, precision, eager, graph, best_ms, note)
    for src, label in ((yq, None), (yq8, 'all convs int8')):
        for r in (src or {}).get('results', []):
            # the untuned heuristic: tensor cores where the GPU has them, dp4a elsewhere
            name = r['backend'].replace('yquant dp4a', 'yquant int8, untuned')   # (the label before 2026-12-02)
            if label:
                name = 'yquant int8, untuned (int8 heads too)'
            rows.append((r['batch'], name, r['precision'], r['median_ms'], r.get('graph_median_ms', -1), best(r), ''))
    # per-layer tuned kernels (yquant bench --tune): any family, dp4a only, mma only; the gain
    # is against the untuned network timed in the same run
    for r in (tu or {}).get('results', []):
        k = r.get('kernels') or ''
        if not k.startswith('tuned'):
            continue
        base = next((d for d in tu['results'] if d.get('kernels') == 'default' and d['batch'] == r['batch']), None)
        note = f'x{best(base) / best(r):.2f} vs untuned (same run)' if base else ''
        rows.append((r['batch'], r['backend'], r['precision'], r['median_ms'], r.get('graph_median_ms', -1), best(r), note))
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
    t = (tu or {}).get('tuning')
    if t:
        note = f"{t['seconds']:.1f} s, {t['tasks']} conv shapes x batches, {t['measured']} trials measured ({t['tuner']})"
        t2 = (tu2 or {}).get('tuning')
        if t2:
            note += f"; again with the log: {t2['seconds']:.1f} s, {t2['tasks_from_log']}/{t2['tasks']} from the log"
        batches = ','.join(str(b) for b in sorted({r['batch'] for r in tu.get('results', [])}))
        out.append(f'| {batches} | yquant tune: tuning time | int8 | - | - | - | - | - | {note} |')
    # failed configurations of cuDNN int8
    for c in (dn or {}).get('configs', []):
        if c['layers_ran'] <= 0:
            out.append(f"\ncuDNN int8 {c['config']} ({c['desc']}), batch {c['batch']}: no conv layer ran (see the log).")


# int8 mma.sync throughput measured on this H200 (the project brief's figure)
MMA_PEAK = 1300.0


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
    # issue 6's targets: tuned per layer (int8 heads, `bench --tune`) against the peers
    tu = load(os.path.join(logdir, 'yolov3.tuned.json'))
    th = load(os.path.join(logdir, 'yolov3.torch.json'))
    dn = load(os.path.join(logdir, 'yolov3.cudnn8.json'))
    if tu:
        t = tu.get('tuning') or {}
        out.append(f'- Tuning all of YOLOv3-416\'s conv shapes at batch 1 and 32 ({t.get("tasks", "?")} shape x batch '
                   f'tasks, {t.get("measured", "?")} trials): {t.get("seconds", -1):.1f} s (target 300 s: '
                   f'{"met" if 0 <= t.get("seconds", -1) <= 300 else "NOT met"}).')
        sums = {}
        try:
            with open(os.path.join(logdir, 'yolov3.tune.txt')) as f:
                for line in f:
                    m = re.match(r'tuning, batch (\d+), convs timed alone: default ([\d.]+) us.*tuned ([\d.]+) us \(', line)
                    if m:
                        sums[int(m.group(1))] = float(m.group(3))
        except OSError:
            pass
        for b in (1, 32):
            cud = [c['sum_ms'] for c in (dn or {}).get('configs', []) if c.get('batch') == b and c.get('sum_ms', 0) > 0
                   and c.get('layers_ran') == c.get('layers')]   # configurations that ran every conv
            if b in sums and cud:
                r = sums[b] * 1e-3 / min(cud)
                out.append(f'- Sum of per-layer conv times, tuned, batch {b}: {sums[b] / 1e3:.3f} ms vs cuDNN int8\'s best '
                           f'{min(cud):.3f} ms: {r:.2f}x (target 0.8x: {"met" if r <= 0.8 else "NOT met"}).')
        tt = {r['batch']: best(r) for r in tu.get('results', []) if r.get('kernels') == 'tuned'}
        pt = {r['batch']: best(r) for r in (th or {}).get('results', []) if r['precision'] == 'fp16'}
        if 1 in tt and 1 in pt:
            r = tt[1] / pt[1]
            out.append(f'- Batch 1 end to end, tuned int8 {tt[1]:.3f} ms vs PyTorch FP16 graph {pt[1]:.3f} ms: {r:.2f}x '
                       f'(target 0.5x: {"met" if r <= 0.5 else "NOT met"}).')
        if 32 in tt and 32 in pt:
            r = pt[32] / tt[32]
            out.append(f'- Batch 32 throughput, tuned int8 {32e3 / tt[32]:.0f} img/s vs PyTorch FP16 {32e3 / pt[32]:.0f} img/s: '
                       f'{r:.2f}x (target 2x: {"met" if r >= 2 else "NOT met"}).')
    i32 = next((r for r in res if r['precision'] == 'int8' and r['batch'] == 32 and r.get('profile')), None)
    if i32:
        big = [e for e in i32['profile'] if e['op'] == 'conv' and ' 3x3/1' in e['shape'] and e.get('gflop', 0) > 0]
        big.sort(key=lambda e: -e['gflop'])
        big = big[:12]
        if big:
            gop = sum(e['gflop'] for e in big)
            us = sum(e['us'] for e in big)
            tops = gop / (us * 1e-6) / 1e3
            mma = 'mma' in i32['backend'] or 'dp4a' not in i32.get('kernels_family', 'mma')
            out.append(f'- The untuned int8 kernels (tensor cores on this GPU) on YOLOv3\'s {len(big)} largest 3x3 stride-1 '
                       f'convs at batch 32 (each timed alone): {tops:.1f} TOPS = {100 * tops / MMA_PEAK:.0f}% of the '
                       f'measured mma.sync peak {MMA_PEAK:.0f} TOPS (target 50%: '
                       f'{"met" if tops >= 0.5 * MMA_PEAK else "NOT met"}); per layer: ' +
                       ', '.join(f"{e['shape'].split(' ')[0]} {e['tops']:.0f}" for e in big[:6]) + ' TOPS.')
            del mma


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
