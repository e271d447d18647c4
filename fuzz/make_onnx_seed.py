#!/usr/bin/env python3
"""Writes fuzz/corpus/onnx/tiny_detect.onnx: the smallest graph with every op of an Ultralytics
detect export that ir/onnx.c maps (Conv + SiLU, Split, Concat, Add, Resize, MaxPool) and its
DFL decode, on a 32x32 input with two classes and two scales; random weights.  A seed for the
onnx fuzzer (needs the onnx and numpy modules; the seed is committed, this only remakes it)."""
import os
import numpy as np
import onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh

rng = np.random.default_rng(7)
inits, nodes = [], []


def const(name, arr):
    inits.append(nh.from_array(np.asarray(arr), name))
    return name


def conv(x, cin, cout, k, s, name, silu=True):
    w = const(name + ".w", rng.normal(0, 0.3, (cout, cin, k, k)).astype(np.float32))
    b = const(name + ".b", rng.normal(0, 0.1, cout).astype(np.float32))
    nodes.append(h.make_node("Conv", [x, w, b], [name], kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4))
    if not silu:
        return name
    nodes.append(h.make_node("Sigmoid", [name], [name + ".sig"]))
    nodes.append(h.make_node("Mul", [name, name + ".sig"], [name + ".act"]))
    return name + ".act"


RM, NC = 4, 2
x = conv("images", 3, 8, 3, 2, "c0")                       # 16x16
a, b = "s0", "s1"
nodes.append(h.make_node("Split", [x, const("split", np.array([4, 4], np.int64))], [a, b], axis=1))
y = conv(b, 4, 4, 3, 1, "c1")
nodes.append(h.make_node("Add", [b, y], ["add"]))
nodes.append(h.make_node("Concat", [a, b, "add"], ["cat"], axis=1))
p3 = conv("cat", 12, 8, 1, 1, "c2")                        # 16x16, stride 2
nodes.append(h.make_node("MaxPool", [p3], ["mp"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]))
p4 = conv("mp", 8, 8, 3, 2, "c3")                          # 8x8, stride 4
nodes.append(h.make_node("Resize", [p4, "", const("scales", np.array([1, 1, 2, 2], np.float32))], ["up"], mode="nearest"))
nodes.append(h.make_node("Concat", ["up", p3], ["fuse"], axis=1))
p3b = conv("fuse", 16, 8, 1, 1, "c4")
outs = []
for i, (t, n) in enumerate(((p3b, 256), (p4, 64))):
    bx = conv(t, 8, 4 * RM, 1, 1, f"box{i}", silu=False)
    cl = conv(t, 8, NC, 1, 1, f"cls{i}", silu=False)
    nodes.append(h.make_node("Concat", [bx, cl], [f"hc{i}"], axis=1))
    nodes.append(h.make_node("Reshape", [f"hc{i}", const(f"shp{i}", np.array([1, 4 * RM + NC, -1], np.int64))], [f"hr{i}"]))
    outs.append(f"hr{i}")
nodes.append(h.make_node("Concat", outs, ["all"], axis=2))
N = 256 + 64
nodes.append(h.make_node("Split", ["all", const("split2", np.array([4 * RM, NC], np.int64))], ["box", "cls"], axis=1))
nodes.append(h.make_node("Reshape", ["box", const("shp4", np.array([1, 4, RM, N], np.int64))], ["b4"]))
nodes.append(h.make_node("Transpose", ["b4"], ["bt"], perm=[0, 2, 1, 3]))
nodes.append(h.make_node("Softmax", ["bt"], ["bs"], axis=1))
nodes.append(h.make_node("Conv", ["bs", const("dfl", np.arange(RM, dtype=np.float32).reshape(1, RM, 1, 1))], ["bd"]))
nodes.append(h.make_node("Reshape", ["bd", const("shp5", np.array([1, 4, N], np.int64))], ["dist"]))
anchors = np.concatenate([np.stack(np.meshgrid(np.arange(16) + .5, np.arange(16) + .5)[::-1][::-1], 0).reshape(2, -1),
                          np.stack(np.meshgrid(np.arange(8) + .5, np.arange(8) + .5), 0).reshape(2, -1)], 1)[None].astype(np.float32)
strides = np.concatenate([np.full(256, 2.0), np.full(64, 4.0)])[None].astype(np.float32)
nodes.append(h.make_node("Slice", ["dist", const("z", np.array([0], np.int64)), const("two", np.array([2], np.int64)),
                                   const("ax", np.array([1], np.int64))], ["lt"]))
nodes.append(h.make_node("Slice", ["dist", "two", const("four", np.array([4], np.int64)), "ax"], ["rb"]))
nodes.append(h.make_node("Sub", [const("anc", anchors), "lt"], ["x1y1"]))
nodes.append(h.make_node("Add", ["anc", "rb"], ["x2y2"]))
nodes.append(h.make_node("Add", ["x1y1", "x2y2"], ["s"]))
nodes.append(h.make_node("Div", ["s", const("two_f", np.array(2, np.float32))], ["cxy"]))
nodes.append(h.make_node("Sub", ["x2y2", "x1y1"], ["wh"]))
nodes.append(h.make_node("Concat", ["cxy", "wh"], ["xywh"], axis=1))
nodes.append(h.make_node("Mul", ["xywh", const("str", strides)], ["pix"]))
nodes.append(h.make_node("Sigmoid", ["cls"], ["prob"]))
nodes.append(h.make_node("Concat", ["pix", "prob"], ["output0"], axis=1))
g = h.make_graph(nodes, "tiny_detect", [h.make_tensor_value_info("images", T.FLOAT, [1, 3, 32, 32])],
                 [h.make_tensor_value_info("output0", T.FLOAT, [1, 4 + NC, N])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)], producer_name="yquant fuzz seed")
m.ir_version = 8
m.metadata_props.add(key="names", value="{0: 'a', 1: 'b'}")
onnx.checker.check_model(m)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx", "tiny_detect.onnx")
onnx.save(m, out)
print(out, os.path.getsize(out), "bytes")
