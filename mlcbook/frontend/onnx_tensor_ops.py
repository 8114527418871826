"""Converters of ONNX's further reductions, normalizations and tensor ops (beside the core
set of :mod:`.onnx_ops`). Ops with a graph op of their own map onto it (``ReduceProd``, for
its ``noop_with_empty_axes``; ``CumSum``, ``TopK``, ``Trilu``, ``Expand`` and ``Tile`` are
declared with their ONNX names and need no converter); the rest
are the compositions their ONNX definitions give (``ReduceL2`` is ``sqrt(sum(x * x))``,
``DepthToSpace`` a reshape, transpose and reshape, ``InstanceNormalization`` a layer norm
over the spatial axes then a per-channel scale and shift, ...), so they fuse and compile
like any graph.

    >>> CONVERTERS["DepthToSpace"].attrs
    frozenset({'blocksize', 'mode'})
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from ..ops.types import GRAPH_DTYPES
from ..tir.expr import FLOAT_DTYPES
from .onnx_context import Unsupported, onnx_dtype
from .onnx_ops import CONVERTERS, cast_value, converter, guard_dtype, pool_window, reduce_axes


def _const(value, dtype) -> Constant:
    return Constant(np.asarray(value, dtype))


# --- reductions ----------------------------------------------------------------------------------
_REDUCE_ATTRS = ("axes", "keepdims", "noop_with_empty_axes")


def _sum_of(cx, x, axes, keep, suffix, square=False, absolute=False):
    if square:
        x = cx.call("mul", x, x, suffix=suffix + "_sq")
    if absolute:
        x = cx.call("abs", x, suffix=suffix + "_abs")
    return cx.call("sum", x, axes=axes, keepdims=keep, suffix=suffix)


@converter("ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSumExp",
           "ReduceLogSum", attrs=_REDUCE_ATTRS, static=(1,))
@guard_dtype
def _reduce(cx, ins, attrs):
    x, op, keep = ins[0], cx.node.op_type, attrs.get("keepdims", 1)
    axes = reduce_axes(cx, attrs)
    if axes == ():  # noop_with_empty_axes: each value is reduced alone
        if op in ("ReduceL1", "ReduceL2"):
            return cx.call("abs", x)
        if op == "ReduceLogSum":
            return cx.call("log", x)
        return cx.call("mul", x, x) if op == "ReduceSumSquare" else x
    if op == "ReduceProd":
        return cx.call("prod", x, axes=axes, keepdims=keep)
    if op == "ReduceL1":
        return _sum_of(cx, x, axes, keep, "", absolute=True)
    if op == "ReduceSumSquare":
        return _sum_of(cx, x, axes, keep, "", square=True)
    if x.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"{op} of {x.dtype} values (mlcbook computes it for floats)")
    if op == "ReduceL2":
        return cx.call("sqrt", _sum_of(cx, x, axes, keep, "_sum", square=True))
    if op == "ReduceLogSum":
        return cx.call("log", _sum_of(cx, x, axes, keep, "_sum"))
    # log(sum(exp(x - m))) + m with m the max: no overflow
    m = cx.call("max", x, axes=axes, keepdims=1, suffix="_max")
    e = cx.call("exp", cx.call("sub", x, m, suffix="_shift"), suffix="_exp")
    s = cx.call("log", cx.call("sum", e, axes=axes, keepdims=keep, suffix="_sum"), suffix="_log")
    mk = m if keep else cx.call("max", x, axes=axes, keepdims=0, suffix="_maxk")
    return cx.call("add", s, mk)


@converter("GlobalMaxPool")
@guard_dtype
def _global_max_pool(cx, ins, attrs):
    x = ins[0]
    return cx.call("max", x, axes=tuple(range(2, x.type.ndim)), keepdims=1)


def _abs_pow(cx, x, p: int):
    if p == 2:
        return cx.call("mul", x, x, suffix="_pow")
    return cx.call("pow", cx.call("abs", x, suffix="_abs"), _const(p, x.dtype), suffix="_pow")


def _root(cx, x, p: int):
    if p == 2:
        return cx.call("sqrt", x)
    return cx.call("pow", x, _const(1 / p, x.dtype))


@converter("LpPool", attrs=("auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads",
                            "strides"))
@guard_dtype
def _lp_pool(cx, ins, attrs):
    # (sum over the window of |x|**p) ** (1/p); padding adds zeros to the sum, so the sum
    # is the average that counts the padding, times the window size
    x, p = ins[0], int(attrs.get("p", 2))
    kernel = tuple(attrs["kernel_shape"])
    avg = cx.call("avg_pool", _abs_pow(cx, x, p), kernel_shape=kernel,
                  ceil_mode=attrs.get("ceil_mode", 0), count_include_pad=1,
                  **pool_window(x, attrs, kernel), suffix="_avg")
    total = cx.call("mul", avg, _const(np.prod(kernel), x.dtype), suffix="_sum")
    return _root(cx, total, p)


@converter("GlobalLpPool", attrs=("p",))
@guard_dtype
def _global_lp_pool(cx, ins, attrs):
    x, p = ins[0], int(attrs.get("p", 2))
    total = cx.call("sum", _abs_pow(cx, x, p), axes=tuple(range(2, x.type.ndim)), keepdims=1,
                    suffix="_sum")
    return _root(cx, total, p)


def _check_conv_t(attrs):
    a = attrs.get("auto_pad", "NOTSET")
    return [] if a in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID") else [f"auto_pad={a!r}"]


@converter("ConvTranspose", attrs=("auto_pad", "dilations", "group", "kernel_shape",
                                   "output_padding", "output_shape", "pads", "strides"),
           check=_check_conv_t)
@guard_dtype
def _conv_transpose(cx, ins, attrs):
    x, w = ins[0], ins[1]
    nsp = x.type.ndim - 2
    kernel = tuple(attrs.get("kernel_shape") or w.shape[2:])
    strides = tuple(attrs.get("strides") or (1,) * nsp)
    dil = tuple(attrs.get("dilations") or (1,) * nsp)
    opad = tuple(attrs.get("output_padding") or (0,) * nsp)
    mode = attrs.get("auto_pad", "NOTSET")
    pads = tuple(attrs.get("pads") or (0,) * (2 * nsp))
    want = attrs.get("output_shape")
    if want is None and mode in ("SAME_UPPER", "SAME_LOWER"):
        want = tuple(n * s for n, s in zip(x.shape[2:], strides))
    if want is not None:
        # ONNX's rule: the padding that gives output_shape, the odd unit at the end for
        # SAME_UPPER and at the start otherwise
        want = tuple(want)[-nsp:]
        total = [s * (n - 1) + op + (k - 1) * d + 1 - o for n, s, op, k, d, o in
                 zip(x.shape[2:], strides, opad, kernel, dil, want)]
        upper = mode == "SAME_UPPER"
        # an output_shape beyond the full output grows it at the end, as output_padding
        # does (onnxruntime's reading, and onnx's node case)
        begin = [0 if t < 0 else t // 2 if upper else t - t // 2 for t in total]
        pads = tuple(begin) + tuple(t - b for t, b in zip(total, begin))
    if min(pads) >= 0:
        args = [a for a in ins[:3] if a is not None]
        return cx.call("conv_transpose", *args, strides=strides, pads=pads, dilations=dil,
                       group=attrs.get("group", 1), output_padding=opad)
    # nothing reaches the positions beyond the full output: zeros (then the bias), as zero
    # padding of the full output
    y = cx.call("conv_transpose", x, w, strides=strides, pads=tuple(max(p, 0) for p in pads),
                dilations=dil, group=attrs.get("group", 1), output_padding=opad,
                suffix="_full")
    y = cx.call("pad", y, pads=(0, 0) + tuple(max(-p, 0) for p in pads[:nsp]) + (0, 0)
                + tuple(max(-p, 0) for p in pads[nsp:]), value=0.0,
                suffix="_grown" if len(ins) > 2 and ins[2] is not None else "")
    if len(ins) < 3 or ins[2] is None:
        return y
    bias = cx.call("reshape", ins[2], shape=(w.shape[1] * attrs.get("group", 1),) + (1,) * nsp,
                   suffix="_bias")
    return cx.call("add", y, bias)


@converter("CastLike", attrs=("saturate", "round_mode"))
def _cast_like(cx, ins, attrs):
    return cast_value(cx, ins[0], ins[1].dtype, attrs)


# --- normalizations -------------------------------------------------------------------------------
def _per_channel(cx, v, ndim: int, suffix: str):
    """A (C,) tensor reshaped to (C, 1, ..., 1), to scale an (N, C, ...) tensor."""
    return cx.call("reshape", v, shape=(v.shape[0],) + (1,) * (ndim - 2), suffix=suffix)


def _normalize_from(cx, x, axis: int, eps: float, suffix: str):
    ones = _const(np.ones(1), x.dtype)
    return cx.call("layer_norm", x, ones, axis=axis, epsilon=eps, num_outputs=1, suffix=suffix)


@converter("InstanceNormalization", attrs=("epsilon",))
@guard_dtype
def _instance_norm(cx, ins, attrs):
    x, scale, bias = ins
    nd = x.type.ndim
    y = _normalize_from(cx, x, 2, attrs.get("epsilon", 1e-5), "_norm")
    y = cx.call("mul", y, _per_channel(cx, scale, nd, "_scale_r"), suffix="_scale")
    return cx.call("add", y, _per_channel(cx, bias, nd, "_bias_r"))


@converter("GroupNormalization", attrs=("epsilon", "num_groups", "stash_type"))
@guard_dtype
def _group_norm(cx, ins, attrs):
    x, scale, bias = ins
    shape, g = x.shape, attrs["num_groups"]
    c = shape[1]
    if c % g:
        raise Unsupported(f"{c} channels do not split into num_groups={g} groups")
    if scale.shape[0] != c:
        raise Unsupported(f"a scale of {scale.shape[0]} values (opset 18's per-group form); "
                          "give one per channel (opset 21)")
    grouped = cx.call("reshape", x, shape=(shape[0], g, -1), suffix="_group")
    y = _normalize_from(cx, grouped, 2, attrs.get("epsilon", 1e-5), "_norm")
    y = cx.call("reshape", y, shape=shape, suffix="_ungroup")
    y = cx.call("mul", y, _per_channel(cx, scale, len(shape), "_scale_r"), suffix="_scale")
    return cx.call("add", y, _per_channel(cx, bias, len(shape), "_bias_r"))


@converter("RMSNormalization", attrs=("axis", "epsilon", "stash_type"))
@guard_dtype
def _rms_norm(cx, ins, attrs):
    # x / sqrt(mean(x * x over the axes from `axis` on) + epsilon) * scale, computed in
    # float32 for float16 inputs (stash_type 1, the default), as ONNX's function body does
    x, scale = ins
    if x.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"RMSNormalization of {x.dtype} values (mlcbook computes it for floats)")
    nd = x.type.ndim
    axes = tuple(range(attrs.get("axis", -1) % nd, nd))
    wide = x.dtype if x.dtype == "float64" or attrs.get("stash_type", 1) != 1 else "float32"
    xw = x if wide == x.dtype else cx.call("cast", x, dtype=wide, suffix="_stash")
    ms = cx.call("mean", cx.call("mul", xw, xw, suffix="_sq"), axes=axes, keepdims=1,
                 suffix="_mean")
    rms = cx.call("sqrt", cx.call("add", ms, _const(attrs.get("epsilon", 1e-5), wide),
                                  suffix="_eps"), suffix="_rms")
    y = cx.call("mul", xw, cx.call("reciprocal", rms, suffix="_inv"), suffix="_norm")
    if wide != x.dtype:
        y = cx.call("cast", y, dtype=x.dtype, suffix="_unstash")
    return cx.call("mul", y, scale)


@converter("MeanVarianceNormalization", attrs=("axes",))
@guard_dtype
def _mvn(cx, ins, attrs):
    x = ins[0]
    axes = tuple(attrs.get("axes", (0, 2, 3)))
    # the deviations are taken from the first value along ``axes`` before the mean: in float32
    # a mean of equal values is not always that value, and with an epsilon of only 1e-9 a
    # rounding error of the mean divided by its own size gives +-1 where ONNX's formula
    # gives 0; shifted, equal values subtract to exact zeros (and close ones exactly too)
    first = cx.call("slice", x, starts=(0,) * len(axes), ends=(1,) * len(axes), axes=axes,
                    suffix="_first")
    s = cx.call("sub", x, first, suffix="_shifted")
    d = cx.call("sub", s, cx.call("mean", s, axes=axes, keepdims=1, suffix="_mean"),
                suffix="_centered")
    var = cx.call("mean", cx.call("mul", d, d, suffix="_sq"), axes=axes, keepdims=1,
                  suffix="_var")
    std = cx.call("add", cx.call("sqrt", var, suffix="_std"), _const(1e-9, x.dtype),
                  suffix="_std_eps")
    return cx.call("div", d, std)


def _check_p(attrs):
    p = attrs.get("p", 2)
    return [] if p in (1, 2) else [f"p={p} (LpNormalization takes 1 or 2)"]


@converter("LpNormalization", attrs=("axis", "p"), check=_check_p)
@guard_dtype
def _lp_norm(cx, ins, attrs):
    x, p = ins[0], attrs.get("p", 2)
    axes = (attrs.get("axis", -1),)
    norm = _sum_of(cx, x, axes, 1, "_sum", square=p == 2, absolute=p == 1)
    if p == 2:
        norm = cx.call("sqrt", norm, suffix="_norm")
    # a zero norm means x is zero there: the result is 0 (ONNX's reference), not NaN
    zero = cx.call("equal", norm, _const(0, x.dtype), suffix="_zero")
    norm = cx.call("where", zero, _const(1, x.dtype), norm, suffix="_safe")
    return cx.call("div", x, norm)


# --- indices and tensors ---------------------------------------------------------------------------
def _positions(n: int, axis: int, ndim: int) -> Constant:
    """0..n-1 laid along ``axis`` of a rank-``ndim`` tensor (size 1 elsewhere)."""
    shape = [1] * ndim
    shape[axis] = n
    return _const(np.arange(n).reshape(shape), np.int64)


@converter("Hardmax", attrs=("axis",))
@guard_dtype
def _hardmax(cx, ins, attrs):
    x = ins[0]
    nd = x.type.ndim
    axis = attrs.get("axis", -1) % nd
    best = cx.call("argmax", x, axis=axis, keepdims=1, select_last_index=0, suffix="_arg")
    hit = cx.call("equal", best, _positions(x.shape[axis], axis, nd), suffix="_hit")
    return cx.call("cast", hit, dtype=x.dtype)


@converter("OneHot", attrs=("axis",), static=(1, 2))
@guard_dtype
def _one_hot(cx, ins, attrs):
    idx = ins[0]
    depth = int(cx.number(1, "depth"))
    values = np.asarray(cx.static(2, "values")).reshape(-1)
    if values.dtype.name not in GRAPH_DTYPES:
        raise Unsupported(f"OneHot values of dtype {values.dtype.name}")
    nd = idx.type.ndim + 1
    axis = attrs.get("axis", -1) % nd
    if idx.dtype != "int64":
        idx = cx.call("cast", idx, dtype="int64", suffix="_int")
    # a negative index counts from the end of the depth
    neg = cx.call("less", idx, _const(0, np.int64), suffix="_neg")
    wrapped = cx.call("add", idx, _const(depth, np.int64), suffix="_wrap")
    idx = cx.call("where", neg, wrapped, idx, suffix="_norm")
    idx = cx.call("unsqueeze", idx, axes=(axis,), suffix="_unsq")
    hit = cx.call("equal", idx, _positions(depth, axis, nd), suffix="_hit")
    return cx.call("where", hit, Constant(values[1:2].reshape(())),
                   Constant(values[0:1].reshape(())))


@converter("EyeLike", attrs=("dtype", "k"))
def _eye_like(cx, ins, attrs):
    x = ins[0]
    if x.type.ndim != 2:
        raise Unsupported(f"EyeLike of a rank-{x.type.ndim} tensor (ONNX requires rank 2)")
    dtype = onnx_dtype(attrs["dtype"], "the dtype") if "dtype" in attrs else x.dtype
    return _const(np.eye(x.shape[0], x.shape[1], attrs.get("k", 0)), dtype)


def _window_values(op: str, size: int, periodic: bool) -> np.ndarray:
    n = np.arange(size, dtype=np.float64)
    angle = 2 * np.pi * n / (size if periodic else max(size - 1, 1))
    if op == "HannWindow":
        return 0.5 - 0.5 * np.cos(angle)
    if op == "HammingWindow":
        return 25 / 46 - (1 - 25 / 46) * np.cos(angle)
    return 0.42 - 0.5 * np.cos(angle) + 0.08 * np.cos(2 * angle)


@converter("HannWindow", "HammingWindow", "BlackmanWindow", attrs=("output_datatype", "periodic"),
           static=(0,))
def _window_fn(cx, ins, attrs):
    # the size is known at import, so the window is a constant
    size = int(cx.number(0, "size"))
    dtype = onnx_dtype(attrs.get("output_datatype", 1), "output_datatype")
    return _const(_window_values(cx.node.op_type, size, bool(attrs.get("periodic", 1))), dtype)


def _check_mode(attrs):
    mode = attrs.get("mode", "DCR")
    return [] if mode in ("DCR", "CRD") else [f"mode={mode!r}"]


@converter("DepthToSpace", attrs=("blocksize", "mode"), check=_check_mode)
def _depth_to_space(cx, ins, attrs):
    x, bs = ins[0], attrs["blocksize"]
    n, c, h, w = x.shape
    if attrs.get("mode", "DCR") == "DCR":
        split, perm = (n, bs, bs, c // bs ** 2, h, w), (0, 3, 4, 1, 5, 2)
    else:
        split, perm = (n, c // bs ** 2, bs, bs, h, w), (0, 1, 4, 2, 5, 3)
    y = cx.call("reshape", x, shape=split, suffix="_split")
    y = cx.call("transpose", y, perm=perm, suffix="_move")
    return cx.call("reshape", y, shape=(n, c // bs ** 2, h * bs, w * bs))


@converter("SpaceToDepth", attrs=("blocksize", "mode"), check=_check_mode)
def _space_to_depth(cx, ins, attrs):
    x, bs = ins[0], attrs["blocksize"]
    n, c, h, w = x.shape
    # the block offsets go before the channels (DCR) or after them (CRD)
    perm = (0, 3, 5, 1, 2, 4) if attrs.get("mode", "DCR") == "DCR" else (0, 1, 3, 5, 2, 4)
    y = cx.call("reshape", x, shape=(n, c, h // bs, bs, w // bs, bs), suffix="_split")
    y = cx.call("transpose", y, perm=perm, suffix="_move")
    return cx.call("reshape", y, shape=(n, c * bs * bs, h // bs, w // bs))


__all__ = ["CONVERTERS"]
