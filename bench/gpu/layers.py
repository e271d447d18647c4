#!/usr/bin/env python3
"""YOLOv3-416 layer by layer: the tuned int8 kernel of each conv shape (best ok trial of the
tuning log) against cuDNN int8 (graph API, per layer), batch 1 and 32; TOPS and % of the
measured mma.sync peak (1300 TOPS on the H200).  Usage: layers.py LOGDIR (bench/gpu/run_gpu.sh)."""
import json, re, sys, collections
logdir = sys.argv[1]
best = {}; default = {}
for line in open(f'{logdir}/yolov3.tune.jsonl'):
    r = json.loads(line)
    if 'cfg' not in r or not r.get('ok'): continue
    k = r['key']
    if k not in best or r['us'] < best[k][1]: best[k] = (r['cfg'], r['us'])
yq = json.load(open(f'{logdir}/yolov3.yq.json'))
prof = [x for x in yq['results'] if x['precision'] == 'int8' and x['batch'] == 1][0]['profile']
dn = json.load(open(f'{logdir}/yolov3.cudnn8.json'))
cud = {c['batch']: {e['layer']: e['us'] for e in c['per_layer']} for c in dn['configs'] if c['config'] == 'graph'}
rows = collections.OrderedDict()
for e in prof:
    if e['op'] != 'conv': continue
    m = re.match(r'(\d+)x(\d+)x(\d+) -> (\d+)x(\d+)x(\d+) (\d+)x\d+/(\d+)', e['shape'])
    c, h, w, f, oh, ow, k, s = map(int, m.groups())
    rows.setdefault((c, h, w, f, k, s), []).append(e)
print('\n## YOLOv3-416 layer by layer: tuned int8 vs cuDNN int8 (each conv timed alone)\n')
print('| shape (in -> filters, k/s) | layers | gop/img | b1 tuned us | b1 cfg | b1 cuDNN int8 us | ratio | b32 tuned us | b32 cfg | b32 TOPS | % mma peak | b32 cuDNN us | ratio |')
print('|---|---:|---:|---:|---|---:|---:|---:|---|---:|---:|---:|---:|')
tot = {1: [0, 0], 32: [0, 0]}
for (c, h, w, f, k, s), es in rows.items():
    cells = []
    gop = es[0]['gflop']
    line = f'| {c}x{h}x{w} -> {f}, {k}x{k}/{s} | {len(es)} | {gop:.2f} |'
    for b in (1, 32):
        key = None
        for kk in best:
            if kk.startswith(f'c{c}x{h}x{w}-f{f}-k{k}s{s}') and kk.endswith(f'-b{b}'): key = kk
        if not key:
            line += ' - | - | - | - |' if b == 1 else ' - | - | - | - | - | - |'; continue
        cfg, us = best[key]
        cu = sum(cud[b].get(e['layer'] - 0, 0) for e in es) / len(es)
        # cuDNN per_layer indexes darknet layers; the profile's 'layer' too
        tot[b][0] += us * len(es); tot[b][1] += cu * len(es)
        r = us / cu if cu else float('nan')
        if b == 1: line += f' {us:.1f} | {cfg} | {cu:.1f} | {r:.2f} |'
        else:
            tops = gop * 32 / (us * 1e-6) / 1e3
            line += f' {us:.1f} | {cfg} | {tops:.0f} | {100*tops/1300:.0f}% | {cu:.1f} | {r:.2f} |'
    print(line)
for b in (1, 32):
    print(f'\nbatch {b}: sum tuned {tot[b][0]/1e3:.3f} ms, cuDNN int8 (graph API, per layer) {tot[b][1]/1e3:.3f} ms, ratio {tot[b][0]/tot[b][1]:.2f}')
