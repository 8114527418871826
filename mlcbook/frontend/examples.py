"""Small ONNX models built with ``onnx.helper``, with fixed random weights: for the tour,
the chapters, the tests and the benchmarks.

    >>> model = mlp(batch=64)                 # an onnx.ModelProto, 784-512-256-10
    >>> mod = mb.from_onnx(model)

Each builder takes the batch size (``None`` makes the batch dimension symbolic, ``"N"``).
"""

from __future__ import annotations

import numpy as np

OPSET = 17


def _helpers():
    from onnx import TensorProto, helper, numpy_helper
    return TensorProto, helper, numpy_helper


class _Graph:
    """Accumulates nodes and initializers; names every node."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def weight(self, name: str, shape, scale: float | None = None) -> str:
        _, _, numpy_helper = _helpers()
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else 1 / np.sqrt(max(fan_in, 1))
        data = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(data, name))
        return name

    def const(self, name: str, value) -> str:
        _, _, numpy_helper = _helpers()
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op: str, inputs, name: str, n_out: int = 1, **attrs):
        _, helper, _ = _helpers()
        outs = [name] if n_out == 1 else [f"{name}_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, name: str, inputs, outputs):
        TensorProto, helper, _ = _helpers()

        def info(n, shape):
            return helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape))
        graph = helper.make_graph(self.nodes, name, [info(*i) for i in inputs],
                                  [info(*o) for o in outputs], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="mlcbook")
        model.ir_version = 8
        return model


def _b(batch):
    return "N" if batch is None else batch


def mlp(batch: int | None = 64, sizes=(784, 512, 256, 10), seed: int = 0):
    """Fully connected layers (Gemm with transB) with ReLU between them."""
    g = _Graph(seed)
    x = "input"
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = g.weight(f"fc{k + 1}.weight", (o, i))
        b = g.weight(f"fc{k + 1}.bias", (o,), 0.1)
        x = g.node("Gemm", [x, w, b], f"fc{k + 1}", transB=1)
        if k < len(sizes) - 2:
            x = g.node("Relu", [x], f"relu{k + 1}")
    return g.model("mlp", [("input", (_b(batch), sizes[0]))], [(x, (_b(batch), sizes[-1]))])


def cnn(batch: int | None = 8, seed: int = 0, batchnorm: bool = False):
    """Two (3x3 conv, ReLU, 2x2 max pool) stages, then a linear layer: 1x28x28 -> 10.
    ``batchnorm=True`` adds BatchNormalization after each conv and a strided, padded
    average pool, for a model that exercises more attributes."""
    g = _Graph(seed)
    x, c_in, size = "input", 1, 28
    for k, c_out in enumerate((8, 16)):
        w = g.weight(f"conv{k + 1}.weight", (c_out, c_in, 3, 3))
        b = g.weight(f"conv{k + 1}.bias", (c_out,), 0.1)
        x = g.node("Conv", [x, w, b], f"conv{k + 1}", pads=[1, 1, 1, 1], kernel_shape=[3, 3])
        if batchnorm:
            p = [g.weight(f"bn{k + 1}.{n}", (c_out,), 0.1) for n in ("scale", "bias", "mean")]
            var = g.const(f"bn{k + 1}.var", (g.rng.random(c_out) + 0.5).astype(np.float32))
            x = g.node("BatchNormalization", [x, *p, var], f"bn{k + 1}", epsilon=1e-5)
        x = g.node("Relu", [x], f"relu{k + 1}")
        x = g.node("MaxPool", [x], f"pool{k + 1}", kernel_shape=[2, 2], strides=[2, 2])
        c_in, size = c_out, size // 2
    if batchnorm:
        x = g.node("AveragePool", [x], "avgpool", kernel_shape=[3, 3], strides=[2, 2],
                   pads=[1, 1, 1, 1], count_include_pad=0)
        size = (size + 2 - 3) // 2 + 1
    x = g.node("Flatten", [x], "flatten", axis=1)
    w = g.weight("fc.weight", (10, c_in * size * size))
    b = g.weight("fc.bias", (10,), 0.1)
    x = g.node("Gemm", [x, w, b], "fc", transB=1)
    return g.model("cnn", [("input", (_b(batch), 1, 28, 28))], [(x, (_b(batch), 10))])


def residual_block(batch: int | None = 2, channels: int = 16, size: int = 16, seed: int = 0):
    """conv-bn-relu-conv-bn, plus the input, then relu; then global average pool."""
    g = _Graph(seed)
    x = "input"
    h = x
    for k in (1, 2):
        w = g.weight(f"conv{k}.weight", (channels, channels, 3, 3))
        h = g.node("Conv", [h, w], f"conv{k}", pads=[1, 1, 1, 1], kernel_shape=[3, 3])
        p = [g.weight(f"bn{k}.{n}", (channels,), 0.1) for n in ("scale", "bias", "mean")]
        var = g.const(f"bn{k}.var", (g.rng.random(channels) + 0.5).astype(np.float32))
        h = g.node("BatchNormalization", [h, *p, var], f"bn{k}")
        if k == 1:
            h = g.node("Relu", [h], "relu1")
    h = g.node("Add", [h, x], "residual")
    h = g.node("Relu", [h], "relu2")
    h = g.node("GlobalAveragePool", [h], "gap")
    return g.model("residual", [("input", (_b(batch), channels, size, size))],
                   [(h, (_b(batch), channels, 1, 1))])


def attention_block(batch: int | None = 2, seq: int = 16, dim: int = 32, heads: int = 4,
                    seed: int = 0):
    """Pre-norm multi-head self-attention with a residual connection (LayerNormalization,
    MatMul, Reshape, Transpose, Softmax, Split)."""
    g = _Graph(seed)
    hd = dim // heads
    x = "input"
    h = g.node("LayerNormalization", [x, g.weight("ln.scale", (dim,), 1.0),
                                      g.weight("ln.bias", (dim,), 0.1)], "ln", axis=-1)
    qkv = g.node("MatMul", [h, g.weight("qkv.weight", (dim, 3 * dim))], "qkv")
    split = g.const("split_sizes", np.array([dim, dim, dim], np.int64))
    q, k, v = g.node("Split", [qkv, split], "split", n_out=3, axis=-1)
    shape = g.const("heads_shape", np.array([0, 0, heads, hd], np.int64))
    parts = []
    for name, t in (("q", q), ("k", k), ("v", v)):
        t = g.node("Reshape", [t, shape], f"{name}_heads")
        perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]
        parts.append(g.node("Transpose", [t], f"{name}_t", perm=perm))
    scores = g.node("MatMul", parts[:2], "scores")
    scale = g.const("scale", np.array(1 / np.sqrt(hd), np.float32))
    scores = g.node("Mul", [scores, scale], "scaled")
    probs = g.node("Softmax", [scores], "softmax", axis=-1)
    ctx = g.node("MatMul", [probs, parts[2]], "context")
    ctx = g.node("Transpose", [ctx], "context_t", perm=[0, 2, 1, 3])
    ctx = g.node("Reshape", [ctx, g.const("merge_shape", np.array([0, 0, dim], np.int64))],
                 "merge")
    out = g.node("MatMul", [ctx, g.weight("proj.weight", (dim, dim))], "proj")
    out = g.node("Add", [out, g.weight("proj.bias", (dim,), 0.1)], "proj_bias")
    out = g.node("Add", [out, x], "residual")
    return g.model("attention", [("input", (_b(batch), seq, dim))],
                   [(out, (_b(batch), seq, dim))])


def broadcast_model(batch: int | None = 4, seed: int = 0):
    """Elementwise ops whose operands broadcast in every direction, with Where, Clip, Pow,
    Erf, Max and a mean reduction."""
    g = _Graph(seed)
    x = "input"                                     # (N, 3, 1, 5)
    a = g.weight("a", (4, 1), 1.0)                  # broadcasts to (N, 3, 4, 5)
    h = g.node("Add", [x, a], "add_a")
    h = g.node("Mul", [h, g.weight("b", (3, 1, 1), 1.0)], "mul_b")
    h = g.node("Sub", [h, g.weight("c", (5,), 1.0)], "sub_c")
    m = g.node("ReduceMean", [h], "mean", axes=[1], keepdims=1)
    h = g.node("Div", [h, g.node("Add", [g.node("Abs", [m], "abs"),
                                        g.const("one", np.array(1.0, np.float32))], "denom")],
               "div")
    cond = g.node("Greater", [h, g.const("zero", np.array(0.0, np.float32))], "positive")
    h = g.node("Where", [cond, h, g.node("Neg", [h], "neg")], "where")
    h = g.node("Clip", [h, g.const("lo", np.array(0.0, np.float32)),
                        g.const("hi", np.array(3.0, np.float32))], "clip")
    h = g.node("Pow", [h, g.const("two", np.array(2.0, np.float32))], "square")
    h = g.node("Erf", [h], "erf")
    h = g.node("Sigmoid", [g.node("Max", [h, g.weight("d", (1, 4, 1), 1.0)], "max")], "sigmoid")
    return g.model("broadcast", [("input", (_b(batch), 3, 1, 5))], [(h, (_b(batch), 3, 4, 5))])


def _conv_bn_relu(g: _Graph, x: str, name: str, c_in: int, c_out: int, k: int, stride: int = 1,
                  relu: bool = True) -> str:
    w = g.weight(f"{name}.weight", (c_out, c_in, k, k))
    x = g.node("Conv", [x, w], name, pads=[k // 2] * 4, kernel_shape=[k, k],
               strides=[stride, stride])
    p = [g.weight(f"{name}.bn.{n}", (c_out,), 0.1) for n in ("scale", "bias", "mean")]
    var = g.const(f"{name}.bn.var", (g.rng.random(c_out) + 0.5).astype(np.float32))
    x = g.node("BatchNormalization", [x, *p, var], f"{name}.bn")
    return g.node("Relu", [x], f"{name}.relu") if relu else x


def concat_net(batch: int | None = 2, channels: int = 8, size: int = 16, growth: int = 8,
               layers: int = 3, seed: int = 0):
    """A DenseNet-style block: each layer (BatchNorm, ReLU, 3x3 conv) sees the concatenation
    of all earlier feature maps; then a 1x1 transition conv and a 2x2 average pool."""
    g = _Graph(seed)
    feats, c = ["input"], channels
    for k in range(layers):
        x = feats[0] if len(feats) == 1 else g.node("Concat", feats, f"cat{k}", axis=1)
        p = [g.weight(f"l{k}.bn.{n}", (c,), 0.1) for n in ("scale", "bias", "mean")]
        var = g.const(f"l{k}.bn.var", (g.rng.random(c) + 0.5).astype(np.float32))
        x = g.node("BatchNormalization", [x, *p, var], f"l{k}.bn")
        x = g.node("Relu", [x], f"l{k}.relu")
        x = g.node("Conv", [x, g.weight(f"l{k}.conv.weight", (growth, c, 3, 3))], f"l{k}.conv",
                   pads=[1, 1, 1, 1], kernel_shape=[3, 3])
        feats.append(x)
        c += growth
    x = g.node("Concat", feats, "cat_out", axis=1)
    x = g.node("Conv", [x, g.weight("transition.weight", (channels, c, 1, 1))], "transition",
               kernel_shape=[1, 1])
    x = g.node("AveragePool", [x], "pool", kernel_shape=[2, 2], strides=[2, 2])
    return g.model("concat_net", [("input", (_b(batch), channels, size, size))],
                   [(x, (_b(batch), channels, size // 2, size // 2))])


def resnet(batch: int | None = 1, size: int = 224, widths=(64, 128, 256, 512),
           blocks=(2, 2, 2, 2), classes: int = 1000, seed: int = 0):
    """A ResNet-18-style network: 7x7/2 conv stem and 3x3/2 max pool, basic blocks of two
    3x3 conv-BN pairs with residual adds (a 1x1/2 projection where the shape changes),
    global average pool, and a linear classifier."""
    g = _Graph(seed)
    x = _conv_bn_relu(g, "input", "stem", 3, widths[0], 7, stride=2)
    x = g.node("MaxPool", [x], "stem.pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = widths[0]
    for s, (w, n) in enumerate(zip(widths, blocks)):
        for b in range(n):
            stride = 2 if b == 0 and s > 0 else 1
            name = f"layer{s + 1}.{b}"
            h = _conv_bn_relu(g, x, f"{name}.conv1", c, w, 3, stride)
            h = _conv_bn_relu(g, h, f"{name}.conv2", w, w, 3, relu=False)
            skip = x if stride == 1 and c == w else \
                _conv_bn_relu(g, x, f"{name}.down", c, w, 1, stride, relu=False)
            x = g.node("Relu", [g.node("Add", [h, skip], f"{name}.add")], f"{name}.relu")
            c = w
    x = g.node("GlobalAveragePool", [x], "gap")
    x = g.node("Flatten", [x], "flatten", axis=1)
    x = g.node("Gemm", [x, g.weight("fc.weight", (classes, c)), g.weight("fc.bias", (classes,))],
               "fc", transB=1)
    return g.model("resnet", [("input", (_b(batch), 3, size, size))], [(x, (_b(batch), classes))])


def inception(batch: int | None = 1, size: int = 224, classes: int = 1000, seed: int = 0):
    """An Inception-v1-style network: a conv stem, then inception modules (1x1; 1x1 -> 3x3;
    1x1 -> 3x3 -> 3x3; 3x3 max pool -> 1x1; concatenated), max pools between stages, global
    average pool and a linear classifier."""
    g = _Graph(seed)
    x = _conv_bn_relu(g, "input", "stem1", 3, 64, 7, stride=2)
    x = g.node("MaxPool", [x], "pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = _conv_bn_relu(g, x, "stem2", 64, 64, 1)
    x = _conv_bn_relu(g, x, "stem3", 64, 192, 3)
    x = g.node("MaxPool", [x], "pool2", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = 192
    plan = [(64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), None,
            (192, 96, 208, 16, 48, 64), (160, 112, 224, 24, 64, 64), None,
            (256, 160, 320, 32, 128, 128)]
    for k, p in enumerate(plan):
        if p is None:
            x = g.node("MaxPool", [x], f"stage_pool{k}", kernel_shape=[3, 3], strides=[2, 2],
                       pads=[1, 1, 1, 1])
            continue
        n1, r3, n3, r5, n5, pp = p
        m = f"mix{k}"
        b1 = _conv_bn_relu(g, x, f"{m}.b1", c, n1, 1)
        b2 = _conv_bn_relu(g, _conv_bn_relu(g, x, f"{m}.b2r", c, r3, 1), f"{m}.b2", r3, n3, 3)
        b3 = _conv_bn_relu(g, _conv_bn_relu(g, x, f"{m}.b3r", c, r5, 1), f"{m}.b3a", r5, n5, 3)
        b3 = _conv_bn_relu(g, b3, f"{m}.b3b", n5, n5, 3)
        b4 = g.node("MaxPool", [x], f"{m}.pool", kernel_shape=[3, 3], strides=[1, 1],
                    pads=[1, 1, 1, 1])
        b4 = _conv_bn_relu(g, b4, f"{m}.b4", c, pp, 1)
        x = g.node("Concat", [b1, b2, b3, b4], f"{m}.cat", axis=1)
        c = n1 + n3 + n5 + pp
    x = g.node("GlobalAveragePool", [x], "gap")
    x = g.node("Flatten", [x], "flatten", axis=1)
    x = g.node("Gemm", [x, g.weight("fc.weight", (classes, c)), g.weight("fc.bias", (classes,))],
               "fc", transB=1)
    return g.model("inception", [("input", (_b(batch), 3, size, size))],
                   [(x, (_b(batch), classes))])
