"""``mb.te.ops``: a small library of tensor operators written in TE, numpy-like.

Each operator takes :class:`~mlcbook.te.Tensor` arguments and returns the output Tensor;
build a function with ``te.create_prim_func([inputs..., output])``::

    x = te.placeholder((1, 3, 8, 8), name="x")
    w = te.placeholder((4, 3, 3, 3), name="w")
    y = ops.relu(ops.conv2d(x, w, padding=1))
    func = te.create_prim_func([x, w, y])

Families: elementwise (unary math, broadcasting binary arithmetic, cast, clip), linalg
(matmul, batch_matmul), nn (relu, bias_add, conv2d, pooling, softmax, layer_norm),
transform (transpose, reshape, pad) and reduce (reduce_sum/mean/max/min). Every operator
takes ``name=`` for its output tensor (and block); multi-stage operators name their
helper stages ``<name>_<stage>``. Shape errors raise ``TEShapeError`` (MLC-X002).
"""

from .elementwise import (abs, add, cast, ceil, clip, divide, erf, exp, floor, log, maximum,
                          minimum, multiply, negative, power, rsqrt, sigmoid, sqrt, subtract,
                          tanh)
from .linalg import batch_matmul, matmul
from .nn import avg_pool2d, bias_add, conv2d, layer_norm, max_pool2d, relu, softmax
from .reduce import reduce_max, reduce_mean, reduce_min, reduce_sum
from .transform import pad, reshape, transpose

__all__ = ["abs", "add", "cast", "ceil", "clip", "divide", "erf", "exp", "floor", "log",
           "maximum", "minimum", "multiply", "negative", "power", "rsqrt", "sigmoid", "sqrt",
           "subtract", "tanh", "batch_matmul", "matmul", "avg_pool2d", "bias_add", "conv2d",
           "layer_norm", "max_pool2d", "relu", "softmax", "reduce_max", "reduce_mean",
           "reduce_min", "reduce_sum", "pad", "reshape", "transpose"]
