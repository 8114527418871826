"""``mb.te.ops``: the operator library, tensor operators written in TE, numpy-like.

Each operator takes :class:`~mlcbook.te.Tensor` arguments and returns the output Tensor;
build a function with ``te.create_prim_func([inputs..., output])``::

    x = te.placeholder((1, 3, 8, 8), name="x")
    w = te.placeholder((4, 3, 3, 3), name="w")
    y = ops.relu(ops.conv2d(x, w, padding=1))
    func = te.create_prim_func([x, w, y])

It is the one implementation of every operator (as TOPI is for TVM): the graph ops of
:mod:`mlcbook.ops` are legalized by calling it. Families: elementwise (unary math,
broadcasting binary arithmetic and comparisons, where, cast, clip), linalg (matmul,
batch_matmul, gemm), nn (relu, bias_add, convolution, pooling), normalization (softmax,
log_softmax, layer_norm, batch_norm), transform (transpose, reshape, pad, concat, split,
slice, gather) and reduce (reduce_sum/mean/max/min). Every operator takes ``name=`` for its
output tensor (and block); multi-stage operators name their helper stages
``<name>_<stage>``. Shape errors raise ``TEShapeError`` (MLC-X002).
"""

from .elementwise import (abs, add, cast, ceil, clip, divide, equal, erf, exp, floor, gelu,
                          greater, leaky_relu, less, log, maximum, minimum, multiply, negative,
                          power, reciprocal, rsqrt, sigmoid, sqrt, subtract, tanh,
                          trunc_divide, where)
from .linalg import batch_matmul, gemm, matmul
from .nn import (avg_pool, avg_pool2d, bias_add, conv, conv2d, global_avg_pool, max_pool,
                 max_pool2d, relu)
from .normalization import batch_norm, layer_norm, log_softmax, softmax
from .reduce import reduce_max, reduce_mean, reduce_min, reduce_sum
from .transform import concat, gather, pad, reshape, slice, split, transpose  # noqa: A004

__all__ = ["abs", "add", "cast", "ceil", "clip", "divide", "equal", "erf", "exp", "floor",
           "gelu", "greater", "leaky_relu", "less", "log", "maximum", "minimum", "multiply",
           "negative", "power", "reciprocal", "rsqrt", "sigmoid", "sqrt", "subtract", "tanh",
           "trunc_divide", "where", "batch_matmul", "gemm", "matmul", "avg_pool", "avg_pool2d",
           "bias_add", "conv", "conv2d", "global_avg_pool", "max_pool", "max_pool2d", "relu",
           "batch_norm", "layer_norm", "log_softmax", "softmax", "reduce_max", "reduce_mean",
           "reduce_min", "reduce_sum", "concat", "gather", "pad", "reshape", "slice", "split",
           "transpose"]
