"""``mb.te.ops``: the operator library, tensor operators written in TE, numpy-like.

Each operator takes :class:`~mlcbook.te.Tensor` arguments and returns the output Tensor;
build a function with ``te.create_prim_func([inputs..., output])``::

    x = te.placeholder((1, 3, 8, 8), name="x")
    w = te.placeholder((4, 3, 3, 3), name="w")
    y = ops.relu(ops.conv2d(x, w, padding=1))
    func = te.create_prim_func([x, w, y])

It is the one implementation of every operator (as TOPI is for TVM): the graph ops of
:mod:`mlcbook.ops` are legalized by calling it. An operator has the name of its graph op
(``neg``, ``sub``, ``conv``, ``sum``...); ``conv2d``, ``max_pool2d`` and ``avg_pool2d`` are
2-D forms of ``conv``/``max_pool``/``avg_pool`` with PyTorch-style arguments. Families:
elementwise (unary math and activations, broadcasting binary arithmetic and comparisons,
where, cast, clip), linalg (matmul, batch_matmul, gemm), nn (bias_add, convolution,
pooling), normalization (softmax, log_softmax, layer_norm, batch_norm, lrn), transform
(transpose, reshape, pad, concat, split, slice, gather), index (gather_elements, gather_nd,
scatter_elements, scatter_nd), reduce (sum, mean, max, min), sampling (resize, grid_sample,
affine_grid), recurrent layers (recurrent: RNN, GRU, LSTM) and the transformer operators
(attention, rotary_embedding); :mod:`~mlcbook.te.ops.winograd` holds the three stages of a
Winograd convolution; the module :mod:`~mlcbook.te.ops.lowbit` converts ONNX's
float8/float4/int4/int2 bit patterns (``lowbit.decode``, ``lowbit.encode``).
Every operator takes ``name=`` for its output tensor (and block); multi-stage operators
name their helper stages ``<name>_<stage>``. Shape errors raise ``TEShapeError`` (MLC-X002).
"""

import warnings

from .elementwise import (abs, add, cast, ceil, clip, div, equal, erf, exp, floor, gelu,
                          greater, leaky_relu, less, log, maximum, minimum, mul, neg, pow,
                          reciprocal, relu, rsqrt, sigmoid, sqrt, sub, tanh, where)
from .elementwise import (acos, acosh, asin, asinh, atan, atanh, swish, celu, cos, cosh, elu, greater_equal, 
                          hard_swish, isinf, isnan, less_equal, logical_and, logical_not,
                          logical_or, logical_xor, mish, mod, prelu, round, selu, shrink, sign,
                          sin, sinh, softplus, tan, thresholded_relu)
from .elementwise import bitshift, hard_sigmoid, softsign
from .elementwise import bitcast, bitwise_and, bitwise_not, bitwise_or, bitwise_xor
from .index import gather_elements, gather_nd, scatter_elements, scatter_nd
from .resize import resize
from .grid_sample import affine_grid, grid_sample
from .recurrent import recurrent
from .linalg import batch_matmul, gemm, matmul
from .nn import (avg_pool, avg_pool2d, bias_add, conv, conv2d, global_avg_pool, max_pool,
                 max_pool2d)
from .lrn import lrn
from .normalization import batch_norm, layer_norm, log_softmax, softmax
from .reduce import max, mean, min, sum  # noqa: A004 - numpy's names, as attributes
from .reduce import argmax, argmin, cumprod, cumsum, prod, topk
from .transform import expand, tile, trilu
from .nn import conv_transpose, max_pool_indices
from .transform import concat, gather, pad, reshape, slice, split, transpose  # noqa: A004
from .attention import attention
from .rotary import rotary_embedding

__all__ = ["abs", "add", "cast", "ceil", "clip", "div", "equal", "erf", "exp", "floor", "gelu",
           "greater", "leaky_relu", "less", "log", "maximum", "minimum", "mul", "neg", "pow",
           "reciprocal", "relu", "rsqrt", "sigmoid", "sqrt", "sub", "tanh", "where",
           "batch_matmul", "gemm", "matmul", "avg_pool", "avg_pool2d", "bias_add", "conv",
           "conv2d", "global_avg_pool", "max_pool", "max_pool2d", "batch_norm", "layer_norm",
           "log_softmax", "softmax", "lrn", "max", "mean", "min", "sum", "concat", "gather", "pad",
           "reshape", "slice", "split", "transpose", "acos", "asin", "atan", "celu", "cos",
           "cosh", "elu", "greater_equal", "hard_swish", "isinf", "isnan",
           "less_equal", "logical_and", "logical_not", "logical_or", "logical_xor", "mish",
           "mod", "prelu", "round", "selu", "shrink", "sign", "sin", "sinh", "softplus",
           "tan", "thresholded_relu", "acosh", "asinh", "atanh", "swish", "argmax", "argmin", "cumsum", "cumprod", "prod",
           "expand", "tile", "trilu", "conv_transpose", "topk", "bitshift", "hard_sigmoid", "softsign",
           "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "resize",
           "affine_grid", "grid_sample", "recurrent", "attention", "rotary_embedding",
           "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "max_pool_indices",
           "bitcast"]

#: earlier names of operators, renamed to the graph op's name (one name across both layers)
DEPRECATED = {"negative": "neg", "subtract": "sub", "multiply": "mul", "divide": "div",
              "power": "pow", "reduce_sum": "sum", "reduce_mean": "mean", "reduce_max": "max",
              "reduce_min": "min"}


def __getattr__(name: str):
    if name in DEPRECATED:
        new = DEPRECATED[name]
        warnings.warn(f"te.ops.{name} is deprecated; it is te.ops.{new}, the name the graph op "
                      "has too", DeprecationWarning, stacklevel=2)
        return globals()[new]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
