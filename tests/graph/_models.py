"""Graph functions for the optimization tests: the example models of the frontend, and
random graphs of shape-preserving ops for property tests."""

from __future__ import annotations

import numpy as np

import mlcbook as mb
from mlcbook.frontend import examples
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.graph.interpret import main_function

#: every model of the test suite, by name: (onnx builder, kwargs)
MODELS = {
    "mlp": (examples.mlp, {"batch": 4}),
    "cnn": (examples.cnn, {"batch": 2}),
    "cnn_bn": (examples.cnn, {"batch": 2, "batchnorm": True}),
    "residual": (examples.residual_block, {"batch": 2}),
    "attention": (examples.attention_block, {"batch": 2}),
    "broadcast": (examples.broadcast_model, {"batch": 3}),
    "concat_net": (examples.concat_net, {"batch": 2}),
}


def model(name: str) -> Function:
    build, kwargs = MODELS[name]
    return main_function(mb.from_onnx(build(**kwargs)))[0]


def inputs(func: Function, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(p.type.shape).astype(p.type.dtype) for p in func.params]


def random_graph(seed: int, n_ops: int = 8) -> Function:
    """A random DAG over (2, 8, 6, 6) tensors: unary, binary (with earlier values or
    per-channel constants), conv 3x3, batch_norm, softmax, transpose of the last two axes,
    reshape round trips; one or two outputs."""
    rng = np.random.default_rng(seed)
    shape = (2, 8, 6, 6)
    x = Var("x", mb.graph.TensorType(shape))
    values = [x]

    def pick():
        return values[rng.integers(len(values))]

    def const(s):
        return Constant(rng.standard_normal(s).astype("float32"))

    for _ in range(n_ops):
        kind = rng.integers(9)
        a = pick()
        if kind == 0:
            v = getattr(op, ["relu", "tanh", "sigmoid", "neg", "abs"][rng.integers(5)])(a)
        elif kind == 1:
            b = pick() if rng.random() < 0.5 else const((8, 1, 1))
            v = getattr(op, ["add", "mul", "sub", "maximum"][rng.integers(4)])(a, b)
        elif kind == 2:
            w = Constant((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype("float32"))
            v = op.conv(a, w, const((8,)), pads=(1, 1, 1, 1))
        elif kind == 3:
            v = op.batch_norm(a, const((8,)), const((8,)), const((8,)),
                              Constant(rng.uniform(0.5, 2, 8).astype("float32")))
        elif kind == 4:
            v = op.softmax(a, axis=-1)
        elif kind == 5:
            v = op.transpose(a, perm=(0, 1, 3, 2))
        elif kind == 6:
            v = op.reshape(op.reshape(a, shape=(2, 8, 36)), shape=shape)
        elif kind == 7:
            v = op.transpose(op.transpose(a, perm=(0, 2, 1, 3)), perm=(0, 2, 1, 3))
        else:
            v = op.add(op.relu(a), op.sigmoid(a))  # a diamond
        values.append(v)
    outs = [values[-1]]
    if rng.random() < 0.4 and len(values) > 2:
        outs.append(values[1 + rng.integers(len(values) - 2)])
    body = outs[0] if len(outs) == 1 else mb.graph.Tuple(outs)
    return Function([x], body)


def inception_module(batch: int, channels=(16, 16, 16)) -> Function:
    """An Inception-style module: 1x1 conv, 3x3 conv and 3x3/1 max pool then 1x1 conv,
    concatenated on the channels, then a 1x1 conv reads the concatenation."""
    rng = np.random.default_rng(0)
    x = Var("x", mb.graph.TensorType((batch, 16, 6, 6)))

    def conv(v, c_in, c_out, k):
        w = Constant((rng.standard_normal((c_out, c_in, k, k)) * 0.2).astype("float32"))
        b = Constant(rng.standard_normal(c_out).astype("float32"))
        return op.relu(op.conv(v, w, b, pads=(k // 2,) * 4))

    a, b, c = channels
    b1 = conv(x, 16, a, 1)
    b2 = conv(x, 16, b, 3)
    b3 = conv(op.max_pool(x, kernel_shape=(3, 3), strides=(1, 1), pads=(1, 1, 1, 1)), 16, c, 1)
    y = op.concat(b1, b2, b3, axis=1)
    return Function([x], conv(y, a + b + c, 16, 1))
