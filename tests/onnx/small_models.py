#!/usr/bin/python3
"""Small real models for test_onnx_models.cpp, built with Debian's python3-onnx (onnx 1.12) and
NumPy: each NAME.onnx with its inputs NAME.in_K.npy and, where NumPy computes it here
independently, the expected output NAME.out_0.npy. Usage: small_models.py DIR [--large] (--large: the
benchmark's ResNet-50 stage and BERT-base layer instead)"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def conv2d(x, w, pad=0, stride=1, groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg, i:i + stride * oh:stride, j:j + stride * ow:stride]
                y[:, oc] += np.einsum("ncij,c->nij", patch, w[oc, :, i, j])
    return y


def batchnorm(x, s, b, m, v, eps=1e-5):
    r = lambda a: a.reshape(1, -1, 1, 1)
    return (x - r(m)) / np.sqrt(r(v) + eps) * r(s) + r(b)


def f32(a):
    return np.asarray(a, np.float32)


def init(name, a):
    return numpy_helper.from_array(a, name)


def save(out, name, graph, inputs, expected=None, opset=13):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())
    for k, a in enumerate(inputs):
        np.save(os.path.join(out, "%s.in_%d.npy" % (name, k)), a)
    if expected is not None:
        np.save(os.path.join(out, name + ".out_0.npy"), f32(expected))


def resnet_block(out):
    """ResNet basic block: conv-bn-relu-conv-bn + identity, relu; batch is the symbol N."""
    c = 8
    w1, w2 = f32(rng.normal(0, 0.2, (c, c, 3, 3))), f32(rng.normal(0, 0.2, (c, c, 3, 3)))
    bn = [[f32(rng.uniform(0.5, 1.5, c)), f32(rng.normal(0, 0.1, c)), f32(rng.normal(0, 0.1, c)), f32(rng.uniform(0.5, 1.5, c))]
          for _ in range(2)]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "s1", "b1", "m1", "v1"], ["n1"], name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c2", "s2", "b2", "m2", "v2"], ["n2"], name="bn2"),
        helper.make_node("Add", ["n2", "x"], ["sum"], name="residual"),
        helper.make_node("Relu", ["sum"], ["y"], name="relu2"),
    ]
    inits = [init("w1", w1), init("w2", w2)]
    for k in range(2):
        inits += [init(n + str(k + 1), a) for n, a in zip("sbmv", bn[k])]
    g = helper.make_graph(nodes, "resnet_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", c, 10, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", c, 10, 10])], initializer=inits)
    x = f32(rng.normal(0, 1, (2, c, 10, 10)))
    h = np.maximum(batchnorm(conv2d(x, w1, 1), *bn[0]), 0)
    y = np.maximum(batchnorm(conv2d(h, w2, 1), *bn[1]) + x, 0)
    save(out, "resnet_block", g, [x], y)


def resnet50_stage(out, blocks=3, size=56, width=64):
    """ResNet-50's first stage (conv2_x) at 56x56: `blocks` bottleneck blocks (1x1 conv to `width`
    channels, 3x3 conv, 1x1 conv to 4 x width, each with BatchNorm; the first block's shortcut a
    1x1 conv + BatchNorm from `width` channels, the others the identity), residual add, ReLU."""
    wide = 4 * width
    nodes, inits = [], []

    def conv_bn(x, cin, cout, k, name):
        w = f32(rng.normal(0, np.sqrt(2.0 / (cin * k * k)), (cout, cin, k, k)))
        bn = [f32(rng.uniform(0.5, 1.5, cout)), f32(rng.normal(0, 0.1, cout)), f32(rng.normal(0, 0.1, cout)),
              f32(rng.uniform(0.5, 1.5, cout))]
        nodes.extend([helper.make_node("Conv", [x, name + "_w"], [name + "_c"], name=name, pads=[k // 2] * 4),
                      helper.make_node("BatchNormalization", [name + "_c"] + [name + "_" + p for p in "sbmv"], [name + "_n"],
                                       name=name + "_bn")])
        inits.extend([init(name + "_w", w)] + [init(name + "_" + p, a) for p, a in zip("sbmv", bn)])
        return name + "_n", (lambda v: batchnorm(conv2d(v, w, k // 2), *bn))

    x_in = f32(rng.normal(0, 1, (1, width, size, size)))
    x, ref = "x", x_in.astype(np.float64)
    cin = width
    for blk in range(blocks):
        p = "b%d" % blk
        a, fa = conv_bn(x, cin, width, 1, p + "a")
        nodes.append(helper.make_node("Relu", [a], [p + "ra"], name=p + "a_relu"))
        b, fb = conv_bn(p + "ra", width, width, 3, p + "b")
        nodes.append(helper.make_node("Relu", [b], [p + "rb"], name=p + "b_relu"))
        c, fc = conv_bn(p + "rb", width, wide, 1, p + "c")
        short, fs = conv_bn(x, cin, wide, 1, p + "s") if cin != wide else (x, lambda v: v)
        y = "y" if blk == blocks - 1 else p + "y"
        nodes += [helper.make_node("Add", [c, short], [p + "sum"], name=p + "_residual"),
                  helper.make_node("Relu", [p + "sum"], [y], name=p + "_relu")]
        ref = np.maximum(fc(np.maximum(fb(np.maximum(fa(ref), 0)), 0)) + fs(ref), 0)
        x, cin = y, wide
    g = helper.make_graph(nodes, "resnet50_stage", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, wide, size, size])], initializer=inits)
    save(out, "resnet50_stage", g, [x_in], ref)


def mlp_gelu(out):
    """MatMul + bias, GELU as exported from PyTorch (its Erf pattern), MatMul, Softmax."""
    w1, b1, w2 = f32(rng.normal(0, 0.3, (16, 32))), f32(rng.normal(0, 0.1, 32)), f32(rng.normal(0, 0.3, (32, 10)))
    k = lambda name, v: init(name, f32(v))
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h"], name="bias1"),
        helper.make_node("Div", ["h", "sqrt2"], ["hd"], name="gelu_div"),
        helper.make_node("Erf", ["hd"], ["he"], name="gelu_erf"),
        helper.make_node("Add", ["he", "one"], ["hp"], name="gelu_add"),
        helper.make_node("Mul", ["h", "hp"], ["hm"], name="gelu_mul"),
        helper.make_node("Mul", ["hm", "half"], ["g"], name="gelu_half"),
        helper.make_node("MatMul", ["g", "w2"], ["logits"], name="fc2"),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=-1),
    ]
    inits = [init("w1", w1), init("b1", b1), init("w2", w2), k("sqrt2", np.sqrt(2.0)), k("one", 1.0), k("half", 0.5)]
    g = helper.make_graph(nodes, "mlp_gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], initializer=inits)
    x = f32(rng.normal(0, 1, (4, 16)))
    from math import erf
    h = x.astype(np.float64) @ w1 + b1
    gl = 0.5 * h * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    z = gl @ w2
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    save(out, "mlp_gelu", g, [x], e / e.sum(axis=-1, keepdims=True))


def inverted_residual(out):
    """MobileNetV2 inverted residual: 1x1 expand, ReLU6 (Clip), 3x3 depthwise, ReLU6, 1x1 project, add."""
    c, e = 4, 12
    we, wd, wp = f32(rng.normal(0, 0.3, (e, c, 1, 1))), f32(rng.normal(0, 0.3, (e, 1, 3, 3))), f32(rng.normal(0, 0.3, (c, e, 1, 1)))
    nodes = [
        helper.make_node("Conv", ["x", "we"], ["a"], name="expand"),
        helper.make_node("Clip", ["a", "zero", "six"], ["ar"], name="relu6_a"),
        helper.make_node("Conv", ["ar", "wd"], ["d"], name="depthwise", group=e, pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["d", "zero", "six"], ["dr"], name="relu6_d"),
        helper.make_node("Conv", ["dr", "wp"], ["p"], name="project"),
        helper.make_node("Add", ["p", "x"], ["y"], name="residual"),
    ]
    inits = [init("we", we), init("wd", wd), init("wp", wp), init("zero", f32(0.0)), init("six", f32(6.0))]
    g = helper.make_graph(nodes, "inverted_residual", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 8, 8])], initializer=inits)
    x = f32(rng.normal(0, 1, (1, c, 8, 8)))
    a = np.clip(conv2d(x, we), 0, 6)
    d = np.clip(conv2d(a, wd, 1, groups=e), 0, 6)
    save(out, "inverted_residual", g, [x], conv2d(d, wp) + x)


def quantize(a, scale, zero, lo, hi):
    """ONNX QuantizeLinear: round half to even, saturate; scale and zero broadcast as given."""
    return np.clip(np.rint(np.asarray(a, np.float32) / np.float32(scale)) + zero, lo, hi)


def qdq_conv(out, name="qdq_conv", zero=128):
    """A QDQ-quantised conv (QuantizeLinear/DequantizeLinear around a float Conv), as quantisation
    tools export it. out_0 is the quantised arithmetic in NumPy; float_0 the conv unquantised.
    uint8 activations with zero point `zero`: 128 becomes 0 once shifted to int8; another
    (qdq_conv_asymmetric) pads with the zero point and corrects by the weights' sums."""
    w = f32(rng.normal(0, 0.3, (4, 3, 3, 3)))
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
        helper.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"], name="q_w"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dq_w"),
        helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    xs, ws = 0.03, 0.01  # x in [-3.84, 3.81]: no input of N(0, 1) here saturates
    inits = [init("w", w), init("xs", f32(xs)), init("xz", np.uint8(zero)), init("ws", f32(ws)), init("wz", np.int8(0))]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], initializer=inits)
    x = f32(rng.normal(0, 1, (1, 3, 6, 6)))
    xd = (quantize(x, xs, zero, 0, 255) - zero) * np.float64(np.float32(xs))
    wd = quantize(w, ws, 0, -128, 127) * np.float64(np.float32(ws))
    save(out, name, g, [x], np.maximum(conv2d(xd, wd, 1), 0))
    np.save(os.path.join(out, name + ".float_0.npy"), f32(np.maximum(conv2d(x, w, 1), 0)))


def qdq_conv_per_channel(out):
    """A QDQ conv as per-channel quantisation exports it: int8 weights stored quantised, one scale
    and zero point per output channel (axis 0), a float bias, stride 2."""
    w, b = f32(rng.normal(0, 0.3, (6, 4, 3, 3))), f32(rng.normal(0, 0.1, 6))
    ws = f32(np.abs(w).reshape(6, -1).max(axis=1) / 127)
    wq = quantize(w, ws[:, None, None, None], 0, -128, 127).astype(np.int8)
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dq_w", axis=0),
        helper.make_node("Conv", ["xd", "wd", "b"], ["y"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
    ]
    xs = 0.03
    inits = [init("wq", wq), init("ws", ws), init("wz", np.zeros(6, np.int8)), init("b", b), init("xs", f32(xs)), init("xz", np.uint8(128))]
    g = helper.make_graph(nodes, "qdq_conv_per_channel", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6, 4, 4])], initializer=inits)
    x = f32(rng.normal(0, 1, (1, 4, 8, 8)))
    xd = (quantize(x, xs, 128, 0, 255) - 128) * np.float64(np.float32(xs))
    wd = wq * ws.astype(np.float64)[:, None, None, None]
    save(out, "qdq_conv_per_channel", g, [x], conv2d(xd, wd, 1, 2) + b.reshape(1, -1, 1, 1))
    np.save(os.path.join(out, "qdq_conv_per_channel.float_0.npy"), f32(conv2d(x, w, 1, 2) + b.reshape(1, -1, 1, 1)))


def qdq_matmul(out, name="qdq_matmul", axis=1, zero=128, w_zero=None):
    """A QDQ-quantised linear layer: uint8 activations, int8 weights with one scale per output
    column (axis 1), a float bias, the result requantised (Q/DQ after the MatMul + bias, as
    QLinearMatMul would) and a ReLU. With one scale per row of the weight (axis 0,
    qdq_matmul_per_row) the scale cannot leave the sum: no integer kernel. With zero=0
    (qdq_matmul_symmetric) activations and output are int8 with zero points 0, as symmetric
    quantisation exports them. With w_zero (qdq_matmul_asymmetric) the weights are uint8 with
    that zero point in every column, and the activations' zero point is not 128 either: the
    integer kernel corrects the int8 product by row and column sums."""
    q_type, lo, hi = (np.uint8, 0, 255) if zero else (np.int8, -128, 127)
    w_type, w_lo, w_hi, wz = (np.int8, -128, 127, 0) if w_zero is None else (np.uint8, 0, 255, w_zero)
    k, n = 24, 8
    w, b = f32(rng.normal(0, 0.3, (k, n))), f32(rng.normal(0, 0.1, n))
    # The widest scale the weights' integer range needs on its shorter side (no weight saturates).
    ws = f32(np.abs(w).max(axis=1 - axis) / (127 if w_zero is None else min(w_zero, 255 - w_zero)))
    wsb = ws if axis == 1 else ws[:, None]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_x"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dq_w", axis=axis),
        helper.make_node("MatMul", ["xd", "wd"], ["m"], name="fc"),
        helper.make_node("Add", ["m", "b"], ["mb"], name="bias"),
        helper.make_node("QuantizeLinear", ["mb", "ys", "yz"], ["yq"], name="q_y"),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["yd"], name="dq_y"),
        helper.make_node("Relu", ["yd"], ["y"], name="relu"),
    ]
    xs, ys = 0.03, 0.05
    wq = quantize(w, wsb, wz, w_lo, w_hi).astype(w_type)
    inits = [init("wq", wq), init("ws", ws), init("wz", np.full(len(ws), wz, w_type)), init("b", b), init("xs", f32(xs)),
             init("xz", q_type(zero)), init("ys", f32(ys)), init("yz", q_type(zero))]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, n])], initializer=inits)
    x = f32(rng.normal(0, 1, (4, k)))
    xd = (quantize(x, xs, zero, lo, hi) - zero) * np.float64(np.float32(xs))
    mb = xd @ ((wq.astype(np.float64) - wz) * wsb.astype(np.float64)) + b
    save(out, name, g, [x], np.maximum((quantize(mb, ys, zero, lo, hi) - zero) * np.float64(np.float32(ys)), 0))
    np.save(os.path.join(out, name + ".float_0.npy"), f32(np.maximum(x.astype(np.float64) @ w + b, 0)))


def cleanup(out):
    """What the graph passes remove: a Transpose pair (-> Identity), a Reshape chain (-> one
    Reshape), a repeated Relu and a dead Sigmoid: 8 nodes, 4 left (Identity, Relu, Add, Reshape)."""
    i64 = lambda name, v: init(name, np.asarray(v, np.int64))
    nodes = [
        helper.make_node("Transpose", ["x"], ["t1"], name="t1", perm=[1, 0]),
        helper.make_node("Transpose", ["t1"], ["t2"], name="t2", perm=[1, 0]),
        helper.make_node("Relu", ["t2"], ["r1"], name="relu_a"),
        helper.make_node("Relu", ["t2"], ["r2"], name="relu_b"),
        helper.make_node("Add", ["r1", "r2"], ["s"], name="add"),
        helper.make_node("Reshape", ["s", "shape_a"], ["ra"], name="reshape_a"),
        helper.make_node("Reshape", ["ra", "shape_b"], ["y"], name="reshape_b"),
        helper.make_node("Sigmoid", ["x"], ["unused"], name="dead"),
    ]
    g = helper.make_graph(nodes, "cleanup", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 8])],
                          initializer=[i64("shape_a", [24]), i64("shape_b", [3, 8])])
    x = f32(rng.normal(0, 1, (4, 6)))
    save(out, "cleanup", g, [x], (2 * np.maximum(x, 0)).reshape(3, 8))


def shape_arithmetic(out):
    """A reshape whose target shape is computed from the input's Shape, as PyTorch exports
    x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    i64 = lambda name, v: init(name, np.asarray(v, np.int64))
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"], name="view"),
        helper.make_node("Relu", ["flat"], ["y"], name="relu"),
    ]
    g = helper.make_graph(nodes, "shape_arithmetic", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 12])],
                          initializer=[i64("zero", 0), i64("axes", [0]), i64("minus_one", [-1])])
    x = f32(rng.normal(0, 1, (2, 3, 4)))
    save(out, "shape_arithmetic", g, [x], np.maximum(x.reshape(2, 12), 0))


def double_relu(out):
    """A ReLU on fp64: the host runs it; the chips, whose lanes are 32 bits, refuse it by name."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu64")], "double_relu",
                          [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2, 3])])
    save(out, "double_relu", g, [rng.normal(0, 1, (2, 3))])


def mlp(out):
    """Three fully connected layers (MatMul + bias + ReLU twice, then Gemm): several matmuls in one model."""
    w1, b1 = f32(rng.normal(0, 0.2, (64, 128))), f32(rng.normal(0, 0.1, 128))
    w2, b2 = f32(rng.normal(0, 0.2, (128, 64))), f32(rng.normal(0, 0.1, 64))
    w3, b3 = f32(rng.normal(0, 0.2, (64, 32))), f32(rng.normal(0, 0.1, 32))
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        helper.make_node("Add", ["h1", "b1"], ["a1"], name="bias1"),
        helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
        helper.make_node("MatMul", ["r1", "w2"], ["h2"], name="fc2"),
        helper.make_node("Add", ["h2", "b2"], ["a2"], name="bias2"),
        helper.make_node("Relu", ["a2"], ["r2"], name="relu2"),
        helper.make_node("Gemm", ["r2", "w3", "b3"], ["y"], name="fc3"),
    ]
    inits = [init("w1", w1), init("b1", b1), init("w2", w2), init("b2", b2), init("w3", w3), init("b3", b3)]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 32])], initializer=inits)
    x = f32(rng.normal(0, 1, (32, 64)))
    r1 = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
    r2 = np.maximum(r1 @ w2 + b2, 0)
    save(out, "mlp", g, [x], r2 @ w3 + b3)


def conv_net(out):
    """A small conv net: two Conv + bias + ReLU layers, GlobalAveragePool, Flatten, Gemm."""
    w1, b1 = f32(rng.normal(0, 0.3, (16, 3, 3, 3))), f32(rng.normal(0, 0.1, 16))
    w2, b2 = f32(rng.normal(0, 0.1, (16, 16, 3, 3))), f32(rng.normal(0, 0.1, 16))
    w3, b3 = f32(rng.normal(0, 0.3, (16, 10))), f32(rng.normal(0, 0.1, 10))
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], name="fc"),
    ]
    inits = [init("w1", w1), init("b1", b1), init("w2", w2), init("b2", b2), init("w3", w3), init("b3", b3)]
    g = helper.make_graph(nodes, "conv_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], initializer=inits)
    x = f32(rng.normal(0, 1, (1, 3, 16, 16)))
    r1 = np.maximum(conv2d(x, w1, 1) + b1.reshape(1, -1, 1, 1), 0)
    r2 = np.maximum(conv2d(r1, w2, 1) + b2.reshape(1, -1, 1, 1), 0)
    save(out, "conv_net", g, [x], r2.mean(axis=(2, 3)) @ w3 + b3)


def layernorm(x, s, b, eps=1e-5):
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * s + b


def gelu_tanh(x, kappa=0.044715):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + kappa * x ** 3)))


def gelu_tanh_nodes(x, y, prefix, kappa="kappa", beta="beta", one="one", half="half"):
    """GELU's tanh form as PyTorch exports nn.GELU(approximate='tanh') (opset < 20):
    half * (x * (one + tanh(beta * (x + kappa * (x * (x * x))))))."""
    p = lambda n: prefix + "_" + n
    return [
        helper.make_node("Mul", [x, x], [p("sq")], name=p("sq")),
        helper.make_node("Mul", [x, p("sq")], [p("cube")], name=p("cube")),
        helper.make_node("Mul", [kappa, p("cube")], [p("kc")], name=p("kappa")),
        helper.make_node("Add", [x, p("kc")], [p("inner")], name=p("inner")),
        helper.make_node("Mul", [beta, p("inner")], [p("scaled")], name=p("beta")),
        helper.make_node("Tanh", [p("scaled")], [p("t")], name=p("tanh")),
        helper.make_node("Add", [one, p("t")], [p("tp")], name=p("one")),
        helper.make_node("Mul", [x, p("tp")], [p("xm")], name=p("mul")),
        helper.make_node("Mul", [half, p("xm")], [y], name=p("half")),
    ]


def gelu_constants(kappa=0.044715):
    """The tanh form's constants as Constant nodes (PyTorch's spelling)."""
    c = lambda name, v: helper.make_node("Constant", [], [name], name=name + "_const", value=numpy_helper.from_array(f32(v), name))
    return [c("kappa", kappa), c("beta", np.sqrt(2 / np.pi)), c("one", 1.0), c("half", 0.5)]


def mlp_gelu_tanh(out, name="mlp_gelu_tanh", kappa=0.044715):
    """MatMul + bias, GELU's tanh form as PyTorch exports approximate='tanh', MatMul. With another
    kappa (mlp_gelu_tanh_near_miss) the pattern is not GELU and must stay as it is."""
    w1, b1, w2 = f32(rng.normal(0, 0.3, (16, 32))), f32(rng.normal(0, 0.1, 32)), f32(rng.normal(0, 0.3, (32, 8)))
    nodes = gelu_constants(kappa) + [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h"], name="bias1"),
    ] + gelu_tanh_nodes("h", "g", "gelu") + [helper.make_node("MatMul", ["g", "w2"], ["y"], name="fc2")]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                          initializer=[init("w1", w1), init("b1", b1), init("w2", w2)])
    x = f32(rng.normal(0, 1.5, (4, 16)))
    save(out, name, g, [x], gelu_tanh(x.astype(np.float64) @ w1 + b1, kappa) @ w2)


def bert_layer(out, name="bert_layer", s=16, d=32, heads=2, ff=64):
    """A BERT encoder layer as PyTorch exports it (opset 17): Q/K/V MatMuls + biases, heads split
    by Reshape/Transpose, scaled (Div by sqrt(head)) Softmax attention, heads merged, output
    projection, residual + LayerNormalization, MLP with GELU's tanh form (HF's gelu_new: Pow),
    residual + LayerNormalization. Sequence s, hidden d, `heads` heads, MLP ff."""
    hd = d // heads
    # Weights scaled with the fan-in (1 at the small layer's sizes), so activations keep their size.
    wd, wf = 0.2 * np.sqrt(32 / d), 0.2 * np.sqrt(64 / ff)
    w = {n: f32(rng.normal(0, wd, (d, d))) for n in ("wq", "wk", "wv", "wo")}
    b = {n: f32(rng.normal(0, 0.1, d)) for n in ("bq", "bk", "bv", "bo")}
    w1, b1 = f32(rng.normal(0, wd, (d, ff))), f32(rng.normal(0, 0.1, ff))
    w2, b2 = f32(rng.normal(0, wf, (ff, d))), f32(rng.normal(0, 0.1, d))
    ln = [(f32(rng.uniform(0.5, 1.5, d)), f32(rng.normal(0, 0.1, d))) for _ in range(2)]
    i64 = lambda name, v: init(name, np.asarray(v, np.int64))
    nodes = []
    for n in "qkv":
        nodes += [helper.make_node("MatMul", ["x", "w" + n], [n + "0"], name=n + "_proj"),
                  helper.make_node("Add", [n + "0", "b" + n], [n + "1"], name=n + "_bias"),
                  helper.make_node("Reshape", [n + "1", "heads_shape"], [n + "2"], name=n + "_heads")]
    nodes += [
        helper.make_node("Transpose", ["q2"], ["qt"], name="q_t", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k2"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v2"], ["vt"], name="v_t", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["qt", "kt"], ["scores"], name="scores"),
        helper.make_node("Div", ["scores", "scale"], ["scaled"], name="scale"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "vt"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="ctx_t", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "merged_shape"], ["merged"], name="merge_heads"),
        helper.make_node("MatMul", ["merged", "wo"], ["o0"], name="o_proj"),
        helper.make_node("Add", ["o0", "bo"], ["o1"], name="o_bias"),
        helper.make_node("Add", ["o1", "x"], ["r1"], name="residual1"),
        helper.make_node("LayerNormalization", ["r1", "ln1_s", "ln1_b"], ["h1"], name="ln1", axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["h1", "w1"], ["f0"], name="fc1"),
        helper.make_node("Add", ["f0", "b1"], ["f1"], name="fc1_bias"),
        # HF's gelu_new: 0.5 * f1 * (1 + tanh(sqrt(2/pi) * (f1 + 0.044715 * pow(f1, 3))))
        helper.make_node("Pow", ["f1", "three"], ["f_cube"], name="gelu_pow"),
        helper.make_node("Mul", ["f_cube", "kappa"], ["f_kc"], name="gelu_kappa"),
        helper.make_node("Add", ["f1", "f_kc"], ["f_inner"], name="gelu_inner"),
        helper.make_node("Mul", ["f_inner", "beta"], ["f_scaled"], name="gelu_beta"),
        helper.make_node("Tanh", ["f_scaled"], ["f_t"], name="gelu_tanh"),
        helper.make_node("Add", ["f_t", "one"], ["f_tp"], name="gelu_one"),
        helper.make_node("Mul", ["f1", "half"], ["f_half"], name="gelu_half"),
        helper.make_node("Mul", ["f_half", "f_tp"], ["g"], name="gelu_mul"),
        helper.make_node("MatMul", ["g", "w2"], ["f2"], name="fc2"),
        helper.make_node("Add", ["f2", "b2"], ["f3"], name="fc2_bias"),
        helper.make_node("Add", ["f3", "h1"], ["r2"], name="residual2"),
        helper.make_node("LayerNormalization", ["r2", "ln2_s", "ln2_b"], ["y"], name="ln2", axis=-1, epsilon=1e-5),
    ]
    inits = [init(n, a) for n, a in list(w.items()) + list(b.items())]
    inits += [init("w1", w1), init("b1", b1), init("w2", w2), init("b2", b2), i64("heads_shape", [1, s, heads, hd]),
              i64("merged_shape", [1, s, d]), init("scale", f32(np.sqrt(hd))), init("three", f32(3.0)),
              init("kappa", f32(0.044715)), init("beta", f32(np.sqrt(2 / np.pi))), init("one", f32(1.0)), init("half", f32(0.5))]
    for k in range(2):
        inits += [init("ln%d_s" % (k + 1), ln[k][0]), init("ln%d_b" % (k + 1), ln[k][1])]
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, s, d])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, s, d])], initializer=inits)
    x = f32(rng.normal(0, 1, (1, s, d)))
    x64 = x.astype(np.float64)
    proj = {n: (x64 @ w["w" + n] + b["b" + n]).reshape(1, s, heads, hd).transpose(0, 2, 1, 3) for n in "qkv"}
    sc = proj["q"] @ proj["k"].transpose(0, 1, 3, 2) / np.sqrt(hd)
    e = np.exp(sc - sc.max(axis=-1, keepdims=True))
    ctx = (e / e.sum(axis=-1, keepdims=True)) @ proj["v"]
    merged = ctx.transpose(0, 2, 1, 3).reshape(1, s, d)
    h1 = layernorm(merged @ w["wo"] + b["bo"] + x64, *ln[0])
    f = gelu_tanh(h1 @ w1 + b1) @ w2 + b2
    save(out, name, g, [x], layernorm(f + h1, *ln[1]), opset=17)


def lstm(out):
    """An LSTM layer (the ONNX LSTM op, forward, one layer, default activations, no initial
    state): 3 steps of batch 2, input 8, hidden 16; the output Y holds every step's hidden state."""
    seq, batch, inp, hid = 3, 2, 8, 16
    W, R = f32(rng.normal(0, 0.3, (1, 4 * hid, inp))), f32(rng.normal(0, 0.3, (1, 4 * hid, hid)))
    B = f32(rng.normal(0, 0.1, (1, 8 * hid)))
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["y"], name="lstm", hidden_size=hid)]
    g = helper.make_graph(nodes, "lstm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, inp])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [seq, 1, batch, hid])],
                          initializer=[init("W", W), init("R", R), init("B", B)])
    x = f32(rng.normal(0, 1, (seq, batch, inp)))
    sig = lambda v: 1 / (1 + np.exp(-v))
    h, c, ys = np.zeros((batch, hid)), np.zeros((batch, hid)), []
    for t in range(seq):
        gates = x[t].astype(np.float64) @ W[0].T + h @ R[0].T + B[0, :4 * hid] + B[0, 4 * hid:]
        i, o, f, cc = (gates[:, k * hid:(k + 1) * hid] for k in range(4))  # ONNX's gate order: i, o, f, c
        c = sig(f) * c + sig(i) * np.tanh(cc)
        h = sig(o) * np.tanh(c)
        ys.append(h)
    save(out, "lstm", g, [x], np.stack(ys)[:, None])


def lstm_cell(out):
    """One LSTM cell step unrolled as PyTorch's LSTMCell traces without the LSTM op: the gates
    x·W_ih + h·W_hh + b as MatMuls, sliced into i, f, g, o, Sigmoid/Tanh, the new cell and hidden
    state; h and c given as constants, x the input. The output is the new h."""
    batch, inp, hid = 2, 8, 16
    wi, wh = f32(rng.normal(0, 0.3, (inp, 4 * hid))), f32(rng.normal(0, 0.3, (hid, 4 * hid)))
    bias = f32(rng.normal(0, 0.1, 4 * hid))
    h0, c0 = f32(rng.normal(0, 0.5, (batch, hid))), f32(rng.normal(0, 0.5, (batch, hid)))
    i64 = lambda name, v: init(name, np.asarray(v, np.int64))
    nodes = [
        helper.make_node("MatMul", ["x", "wi"], ["gx"], name="x_gates"),
        helper.make_node("MatMul", ["h0", "wh"], ["gh"], name="h_gates"),
        helper.make_node("Add", ["gx", "gh"], ["gs"], name="gates_sum"),
        helper.make_node("Add", ["gs", "bias"], ["gates"], name="gates_bias"),
    ]
    for k, (gate, act) in enumerate((("i", "Sigmoid"), ("f", "Sigmoid"), ("g", "Tanh"), ("o", "Sigmoid"))):
        nodes += [helper.make_node("Slice", ["gates", "start_" + gate, "end_" + gate, "axis1"], [gate + "0"], name="slice_" + gate),
                  helper.make_node(act, [gate + "0"], [gate], name=act.lower() + "_" + gate)]
    nodes += [
        helper.make_node("Mul", ["f", "c0"], ["fc"], name="forget"),
        helper.make_node("Mul", ["i", "g"], ["ig"], name="input_gate"),
        helper.make_node("Add", ["fc", "ig"], ["c1"], name="new_cell"),
        helper.make_node("Tanh", ["c1"], ["tc"], name="tanh_cell"),
        helper.make_node("Mul", ["o", "tc"], ["y"], name="new_hidden"),
    ]
    inits = [init("wi", wi), init("wh", wh), init("bias", bias), init("h0", h0), init("c0", c0), i64("axis1", [1])]
    for k, gate in enumerate("ifgo"):
        inits += [i64("start_" + gate, [k * hid]), i64("end_" + gate, [(k + 1) * hid])]
    g = helper.make_graph(nodes, "lstm_cell", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, inp])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, hid])], initializer=inits)
    x = f32(rng.normal(0, 1, (batch, inp)))
    gates = x.astype(np.float64) @ wi + h0 @ wh + bias
    sig = lambda v: 1 / (1 + np.exp(-v))
    i, f, gg, o = (gates[:, k * hid:(k + 1) * hid] for k in range(4))
    c1 = sig(f) * c0 + sig(i) * np.tanh(gg)
    save(out, "lstm_cell", g, [x], sig(o) * np.tanh(c1))


if __name__ == "__main__":
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    if sys.argv[2:] == ["--large"]:
        # The fusion and residency benchmark's models (bench_model): real sizes.
        resnet50_stage(d)
        bert_layer(d, "bert_base_layer", s=128, d=768, heads=12, ff=3072)
        sys.exit(0)
    for build in (resnet_block, mlp_gelu, inverted_residual, qdq_conv, cleanup, shape_arithmetic, mlp, conv_net, bert_layer, lstm,
                  lstm_cell, mlp_gelu_tanh, qdq_matmul, qdq_conv_per_channel):
        build(d)
    mlp_gelu_tanh(d, "mlp_gelu_tanh_near_miss", kappa=0.05)
    qdq_matmul(d, "qdq_matmul_per_row", axis=0)
    qdq_matmul(d, "qdq_matmul_symmetric", zero=0)
    qdq_matmul(d, "qdq_matmul_asymmetric", zero=100, w_zero=119)
    qdq_conv(d, "qdq_conv_asymmetric", zero=100)
    double_relu(d)  # last: the models above keep the random data they were written with
