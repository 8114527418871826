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
elementwise (the classic unary math and activations, broadcasting binary arithmetic,
comparisons, logic and bits, where, cast, clip; the activations of the ONNX operator set are
declared as graph ops only, in :mod:`mlcbook.ops.unary`), linalg (matmul, batch_matmul, gemm), nn (bias_add, convolution,
pooling), normalization (softmax, log_softmax, layer_norm, batch_norm, lrn), transform
(transpose, reshape, pad, concat, split, slice, gather), index (gather_elements, gather_nd,
scatter_elements, scatter_nd), reduce (sum, mean, max, min), sampling (resize, grid_sample,
affine_grid, deform_conv, roi_align), recurrent layers (recurrent: RNN, GRU, LSTM) and the transformer operators
(attention, rotary_embedding); :mod:`~mlcbook.te.ops.winograd` holds the three stages of a
Winograd convolution; the module :mod:`~mlcbook.te.ops.lowbit` converts ONNX's
float8/float4/int4/int2 bit patterns (``lowbit.decode``, ``lowbit.encode``).
Every operator takes ``name=`` for its output tensor (and block); multi-stage operators
name their helper stages ``<name>_<stage>``. Shape errors raise ``TEShapeError`` (MLC-X002).
"""

from .elementwise import (abs, add, cast, ceil, clip, div, equal, erf, exp, floor, gelu,
                          greater, leaky_relu, less, log, maximum, minimum, mul, neg, pow,
                          reciprocal, relu, rsqrt, sigmoid, sqrt, sub, tanh, where)
from .elementwise import (bitcast, bitshift, bitwise_and, bitwise_or, bitwise_xor, greater_equal,
                          less_equal, logical_and, logical_or, logical_xor, mod, prelu)
from .index import gather_elements, gather_nd, scatter_elements, scatter_nd
from .resize import resize
from .grid_sample import affine_grid, deform_conv, grid_sample
from .roi_align import roi_align  # noqa: F401 - ONNX's RoiAlign
from .recurrent import recurrent
from .linalg import batch_matmul, gemm, matmul
from .nn import (avg_pool, avg_pool2d, bias_add, conv, conv2d, global_avg_pool, max_pool,
                 max_pool2d)
from .normalization import batch_norm, layer_norm, log_softmax, lrn, softmax
from .reduce import max, mean, min, sum  # noqa: A004 - numpy's names, as attributes
from .reduce import argmax, argmin, cumprod, cumsum, prod, topk
from .transform import expand, tile, trilu
from .nn import conv_transpose, max_pool_indices
from .transform import concat, gather, pad, reshape, slice, split, transpose  # noqa: A004
from .attention import attention, rotary_embedding
from .linear_attention import linear_attention  # noqa: F401 - ONNX's LinearAttention

__all__ = ["abs", "add", "cast", "ceil", "clip", "div", "equal", "erf", "exp", "floor", "gelu",
           "greater", "leaky_relu", "less", "log", "maximum", "minimum", "mul", "neg", "pow",
           "reciprocal", "relu", "rsqrt", "sigmoid", "sqrt", "sub", "tanh", "where",
           "batch_matmul", "gemm", "matmul", "avg_pool", "avg_pool2d", "bias_add", "conv",
           "conv2d", "global_avg_pool", "max_pool", "max_pool2d", "batch_norm", "layer_norm",
           "log_softmax", "softmax", "lrn", "max", "mean", "min", "sum", "concat", "gather", "pad",
           "reshape", "slice", "split", "transpose", "greater_equal", "less_equal", "logical_and",
           "logical_or", "logical_xor", "mod", "prelu", "argmax", "argmin", "cumsum", "cumprod",
           "prod", "expand", "tile", "trilu", "conv_transpose", "topk", "bitshift",
           "gather_elements", "gather_nd", "scatter_elements", "scatter_nd", "resize",
           "affine_grid", "grid_sample", "recurrent", "attention", "rotary_embedding",
           "bitwise_and", "bitwise_or", "bitwise_xor", "max_pool_indices",
           "bitcast", "deform_conv"]
