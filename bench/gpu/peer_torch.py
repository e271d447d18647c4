#!/usr/bin/env python3
"""PyTorch peer for yquant's GPU benchmark (bench/gpu/run_gpu.sh).

Builds the network of a Darknet .cfg in PyTorch -- conv (BN folded into the conv's
bias) + activation, shortcut, route (with groups/group_id), upsample (nearest),
maxpool with darknet's window (it starts padding/2 before the image; positions
outside are skipped), dropout as identity, the [yolo]/[region] inputs as outputs --
and times it the way yquant bench times its engines: the float NCHW batch is already
on the device, its conversion to the network's type and memory format is part of
the forward, each run is bracketed by two CUDA events and waited for, latency is
the median.  Configurations:
  fp16   half, channels_last, cudnn.benchmark, eagerly and replayed from a CUDA graph
  fp32   float, NCHW, TF32 off (the like of yquant's FP32 cuDNN path), same two ways

  peer_torch.py CFG [--weights FILE] [--size N] [--batch 1,32] [--runs 100]
                [--warmup 20] [--precision fp16,fp32] [--json FILE]

Weights: the darknet .weights when given (BN folded as AlexeyAB's darknet does),
otherwise deterministic random ones (fan-in scaled); speed does not depend on them,
and never zeros.  Last lines: RESULT engine=torch ... (one per configuration).
"""
import argparse
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F


def parse_cfg(path):
    sections = []
    with open(path) as f:
        for raw in f:
            line = raw.split('#', 1)[0].split(';', 1)[0].strip()
            if not line:
                continue
            if line.startswith('['):
                sections.append([line.strip('[]').strip(), {}])
            elif '=' in line and sections:
                k, v = line.split('=', 1)
                sections[-1][1][k.strip()] = v.strip()
    return sections


def act_fn(name):
    return {
        'linear': lambda x: x,
        'leaky': lambda x: F.leaky_relu(x, 0.1),
        'relu': F.relu,
        'mish': F.mish,
        'swish': F.silu,
        'logistic': torch.sigmoid,
    }[name]


class DarknetNet(torch.nn.Module):
    def __init__(self, sections, size, weights=None, seed=1):
        super().__init__()
        net = sections[0][1]
        w = size or int(net.get('width', 416))
        h = size or int(net.get('height', 416))
        c = int(net.get('channels', 3))
        self.input_shape = (c, h, w)
        shapes = []          # (c, h, w) per layer
        self.ops = []        # (kind, params)
        self.convs = torch.nn.ModuleList()
        self.heads = []
        self.flop = 0.0
        rng = np.random.default_rng(seed)
        wf = None
        if weights:
            wf = open(weights, 'rb')
            major, minor, _rev = np.fromfile(wf, dtype=np.int32, count=3)
            np.fromfile(wf, dtype=np.int64 if major * 10 + minor >= 2 else np.int32, count=1)
        cur = (c, h, w)
        for idx, (name, p) in enumerate(sections[1:]):
            i = idx
            if name in ('convolutional', 'conv'):
                filters, k = int(p.get('filters', 1)), int(p.get('size', 1))
                stride, groups = int(p.get('stride', 1)), int(p.get('groups', 1))
                pad = k // 2 if int(p.get('pad', 0)) else int(p.get('padding', 0))
                bn = int(p.get('batch_normalize', 0))
                conv = torch.nn.Conv2d(cur[0], filters, k, stride, pad, groups=groups, bias=True)
                n_w = filters * (cur[0] // groups) * k * k
                if wf is not None:
                    bias = np.fromfile(wf, dtype=np.float32, count=filters)
                    if bn:
                        scale = np.fromfile(wf, dtype=np.float32, count=filters)
                        mean = np.fromfile(wf, dtype=np.float32, count=filters)
                        var = np.fromfile(wf, dtype=np.float32, count=filters)
                    wt = np.fromfile(wf, dtype=np.float32, count=n_w)
                    if wt.size != n_w:
                        raise SystemExit(f'{weights}: truncated at layer {i}')
                    wt = wt.reshape(filters, -1)
                    if bn:
                        f = scale / np.sqrt(var + 1e-5)
                        wt = wt * f[:, None]
                        bias = bias - mean * f
                else:
                    fan_in = n_w // filters
                    wt = rng.standard_normal((filters, fan_in)).astype(np.float32) * math.sqrt(1.0 / fan_in)
                    bias = (rng.standard_normal(filters) * 0.1).astype(np.float32)
                with torch.no_grad():
                    conv.weight.copy_(torch.from_numpy(np.ascontiguousarray(wt)).view_as(conv.weight))
                    conv.bias.copy_(torch.from_numpy(bias.astype(np.float32)))
                self.convs.append(conv)
                self.ops.append(('conv', (len(self.convs) - 1, p.get('activation', 'logistic'))))
                cur = (filters, (cur[1] + 2 * pad - k) // stride + 1, (cur[2] + 2 * pad - k) // stride + 1)
                self.flop += 2.0 * n_w * cur[1] * cur[2]
            elif name == 'shortcut':
                frm = int(p['from'].split(',')[0])
                src = i + frm if frm < 0 else frm
                self.ops.append(('shortcut', (src, p.get('activation', 'linear'))))
            elif name == 'route':
                layers = [int(v) for v in p['layers'].split(',')]
                srcs = [i + v if v < 0 else v for v in layers]
                groups, gid = int(p.get('groups', 1)), int(p.get('group_id', 0))
                self.ops.append(('route', (srcs, groups, gid)))
                cur = (sum(shapes[s][0] // groups for s in srcs), shapes[srcs[0]][1], shapes[srcs[0]][2])
            elif name == 'upsample':
                s = int(p.get('stride', 2))
                self.ops.append(('upsample', s))
                cur = (cur[0], cur[1] * s, cur[2] * s)
            elif name in ('maxpool', 'max'):
                stride = int(p.get('stride', 1))
                size = int(p.get('size', stride))
                pad = int(p.get('padding', size - 1))
                self.ops.append(('maxpool', (size, stride, pad)))
                cur = (cur[0], (cur[1] + pad - size) // stride + 1, (cur[2] + pad - size) // stride + 1)
            elif name == 'dropout':
                self.ops.append(('id', None))
            elif name in ('yolo', 'region'):
                self.ops.append(('id', None))
                self.heads.append(i)
            else:
                raise SystemExit(f'unsupported section [{name}]')
            shapes.append(cur)
        self.shapes = shapes
        if wf is not None:
            wf.close()
        self.fmt = torch.contiguous_format
        self.dtype = torch.float32

    def forward(self, x):
        x = x.to(dtype=self.dtype, memory_format=self.fmt)
        outs = []
        for kind, p in self.ops:
            if kind == 'conv':
                x = act_fn(p[1])(self.convs[p[0]](x))
            elif kind == 'shortcut':
                x = act_fn(p[1])(x + outs[p[0]])
            elif kind == 'route':
                srcs, groups, gid = p
                parts = [outs[s] if groups == 1 else outs[s].chunk(groups, dim=1)[gid] for s in srcs]
                x = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
            elif kind == 'upsample':
                x = F.interpolate(x, scale_factor=p, mode='nearest')
            elif kind == 'maxpool':
                size, stride, pad = p
                if pad:
                    x = F.pad(x, (pad // 2, pad - pad // 2, pad // 2, pad - pad // 2), value=float('-inf'))
                x = F.max_pool2d(x, size, stride)
            outs.append(x)
        return [outs[i] for i in self.heads]


def time_runs(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(runs):
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return ms


def stats(ms):
    s = sorted(ms)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return {'median_ms': med, 'min_ms': s[0], 'mean_ms': sum(s) / n, 'p90_ms': s[int(0.9 * (n - 1))]}


def run_config(net, prec, bs, a, dev):
    c, h, w = net.input_shape
    half = prec == 'fp16'
    gen = torch.Generator(device='cpu').manual_seed(bs)
    x = torch.rand((bs, c, h, w), generator=gen).to(dev)
    r = {'precision': prec, 'batch': bs,
         'backend': 'PyTorch %s' % ('FP16 channels_last' if half else 'FP32 NCHW (no TF32)')}
    with torch.no_grad():
        r.update(stats(time_runs(lambda: net(x), a.runs, a.warmup)))
        # CUDA graph: warm up on a side stream, capture, replay
        static_x = x.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                net(static_x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = net(static_x)
        gm = stats(time_runs(g.replay, a.runs, a.warmup))
        r['graph_median_ms'] = gm['median_ms']
        r['graph_min_ms'] = gm['min_ms']
        del g, static_out
    r['img_s'] = bs / (min(r['median_ms'], r['graph_median_ms']) * 1e-3)
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('cfg')
    ap.add_argument('--weights')
    ap.add_argument('--size', type=int, default=0)
    ap.add_argument('--batch', default='1,32')
    ap.add_argument('--runs', type=int, default=100)
    ap.add_argument('--warmup', type=int, default=20)
    ap.add_argument('--precision', default='fp16,fp32')
    ap.add_argument('--json')
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device('cuda')
    net = DarknetNet(parse_cfg(a.cfg), a.size, a.weights).to(dev).eval()
    c, h, w = net.input_shape
    gflop = net.flop / 1e9
    info = {'cfg': a.cfg, 'weights': a.weights or 'random', 'input': [c, h, w], 'gflop_per_image': gflop,
            'torch': torch.__version__, 'cudnn': torch.backends.cudnn.version(),
            'device': torch.cuda.get_device_name(0), 'runs': a.runs, 'warmup': a.warmup, 'results': []}
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {info['device']}; "
          f"{a.cfg} at {w}x{h}, {gflop:.2f} GFLOP per image, heads {[tuple(net.shapes[i]) for i in net.heads]}")
    for prec in a.precision.split(','):
        half = prec == 'fp16'
        net.dtype = torch.float16 if half else torch.float32
        net.fmt = torch.channels_last if half else torch.contiguous_format
        net = net.to(dtype=net.dtype, memory_format=net.fmt)
        for bs in [int(v) for v in a.batch.split(',')]:
            try:
                r = run_config(net, prec, bs, a, dev)
            except Exception as e:          # one configuration failing must not lose the others
                print(f'peer_torch: {prec} batch {bs}: {type(e).__name__}: {e}', file=sys.stderr, flush=True)
                continue
            info['results'].append(r)
            print(f"{r['backend']:<52} {prec:<5} batch {bs:3d}: eager {r['median_ms']:8.3f} ms (min {r['min_ms']:.3f}), "
                  f"graph {r['graph_median_ms']:8.3f} ms, {r['img_s']:9.1f} img/s", flush=True)
            torch.cuda.empty_cache()
    for r in info['results']:
        print(f"RESULT engine=torch precision={r['precision']} batch={r['batch']} median_ms={r['median_ms']:.4f} "
              f"graph_median_ms={r['graph_median_ms']:.4f} img_s={r['img_s']:.2f}")
    if a.json:
        with open(a.json, 'w') as f:
            json.dump(info, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
