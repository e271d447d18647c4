#!/usr/bin/env python3
"""Latency of one ONNX model on ONNX Runtime's CPU provider, for bench/cpu_int8.sh.

    python3 bench/onnx/ort_time.py MODEL.onnx [--threads N] [--runs N] [--warmup N]

Batch 1, a fixed input in [0, 1] (the shape the model declares), all graph optimizations,
intra-op threads N and one inter-op thread, sequential execution; the median of the timed
runs.  The last line is machine-readable:  RESULT engine=onnxruntime median_ms=... min_ms=...
Python is for benchmarks only: nothing here is in the product's path."""
import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    inp = s.get_inputs()[0]
    shape = [d if isinstance(d, int) else 1 for d in inp.shape]
    x = (np.arange(np.prod(shape), dtype=np.float32) % 251 / 250.0).reshape(shape)
    for _ in range(a.warmup):
        s.run(None, {inp.name: x})
    t = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        s.run(None, {inp.name: x})
        t.append(1e3 * (time.perf_counter() - t0))
    print(f"{a.model}: {a.threads} thread(s), median {statistics.median(t):.3f} ms, min {min(t):.3f} ms")
    print(f"RESULT engine=onnxruntime threads={a.threads} median_ms={statistics.median(t):.4f} min_ms={min(t):.4f}")


if __name__ == "__main__":
    main()
