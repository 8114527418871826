"""Neural-network operators: relu, bias_add, conv2d, pooling, softmax, layer_norm.

Layouts are NCHW for data and OIHW for convolution weights. ``padding`` is an int, a pair
``(pad_h, pad_w)``, or four ints ``(top, left, bottom, right)`` (ONNX's ``pads`` order).

    >>> y = relu(bias_add(conv2d(x, w, stride=2, padding=1), b))
    >>> p = max_pool2d(y, 2)
    >>> s = softmax(logits, axis=-1)
"""

from __future__ import annotations

from ...errors import TEError, TEShapeError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from ._util import (axis_names, check_tensor, clamp, compute_named, ints, normalize_axis,
                    pair, prod, scaled)
from .transform import pad


def relu(x: Tensor, name: str = "relu") -> Tensor:
    """``max(x, 0)`` elementwise."""
    check_tensor(x, "relu", "x")
    zero = _e.const(0, x.dtype)
    return compute_named(x.shape, axis_names(x.ndim),
                         lambda *idx: _e.max(x[idx], zero), name)


def bias_add(x: Tensor, bias: Tensor, axis: int = 1, name: str = "bias_add") -> Tensor:
    """``x + bias`` where the 1-D ``bias`` runs along dimension ``axis`` of ``x`` (the
    channel axis of NCHW data by default)."""
    check_tensor(x, "bias_add", "x")
    check_tensor(bias, "bias_add", "bias")
    axis = normalize_axis(axis, x.ndim, "bias_add")
    if bias.shape != (x.shape[axis],):
        raise TEShapeError(f"bias_add: bias {bias.name!r} has shape {bias.shape} but must be "
                           f"({x.shape[axis]},), the size of axis {axis} of {x.name!r} {x.shape}")
    _same_dtype("bias_add", x, bias)
    return compute_named(x.shape, axis_names(x.ndim),
                         lambda *idx: x[idx] + bias[idx[axis]], name)


def _same_dtype(op: str, *tensors: Tensor) -> None:
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise TEError(f"{op}: {tensors[0].name!r} is {tensors[0].dtype} but {t.name!r} is "
                          f"{t.dtype}; cast one of them so the dtypes agree")


def _pads(padding, op: str) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from an int, a pair or four ints."""
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        p = ints(padding, 4, op, "padding")
    else:
        ph, pw = pair(padding, op, "padding")
        p = (ph, pw, ph, pw)
    if any(v < 0 for v in p):
        raise TEShapeError(f"{op}: padding {padding!r} must be non-negative")
    return p  # type: ignore[return-value]


def _out_size(op: str, what: str, size: int, before: int, after: int, kernel: int,
              stride: int, dilation: int) -> int:
    span = dilation * (kernel - 1) + 1
    out = (size + before + after - span) // stride + 1
    if out < 1:
        raise TEShapeError(
            f"{op}: the {what} window spans {span} but the padded input is only "
            f"{size + before + after} ({size} + padding {before}+{after}); use a smaller "
            "kernel or dilation, or more padding")
    return out


def _check_4d(x: Tensor, op: str, arg: str, layout: str) -> None:
    check_tensor(x, op, arg)
    if x.ndim != 4:
        raise TEShapeError(f"{op}: {arg} {x.name!r} has shape {x.shape} but must be 4-D "
                           f"({layout})")


def conv2d(data: Tensor, weight: Tensor, stride=1, padding=0, dilation=1, groups: int = 1,
           name: str = "conv2d") -> Tensor:
    """2-D convolution (cross-correlation), NCHW data and OIHW weight:
    ``out[n, f, y, x] = sum(data_padded[n, c, y*sh + ry*dh, x*sw + rx*dw] * weight[f, rc, ry, rx])``
    with ``c = (f // (F / groups)) * (C / groups) + rc``. Padding is zeros, in a stage of its own.
    """
    op = "conv2d"
    _check_4d(data, op, "data", "N, C, H, W")
    _check_4d(weight, op, "weight", "F, C/groups, KH, KW")
    _same_dtype(op, data, weight)
    n, c, h, w = data.shape
    f, cg, kh, kw = weight.shape
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise TEError(f"{op}: groups={groups!r} must be a positive int")
    if c % groups or f % groups:
        raise TEShapeError(f"{op}: groups={groups} must divide both the input channels ({c}) "
                           f"and the output channels ({f})")
    if cg != c // groups:
        raise TEShapeError(
            f"{op}: weight {weight.name!r} has shape {weight.shape}, so {cg} input channels per "
            f"group, but data {data.name!r} {data.shape} with groups={groups} has "
            f"{c // groups}; the weight must be (F, C/groups, KH, KW)")
    sh, sw = pair(stride, op, "stride")
    dh, dw = pair(dilation, op, "dilation")
    if min(sh, sw, dh, dw) < 1:
        raise TEError(f"{op}: stride {stride!r} and dilation {dilation!r} must be positive")
    pt, pl, pb, pr = _pads(padding, op)
    oh = _out_size(op, "height", h, pt, pb, kh, sh, dh)
    ow = _out_size(op, "width", w, pl, pr, kw, sw, dw)
    padded = data
    if pt or pl or pb or pr:
        padded = pad(data, ((0, 0), (0, 0), (pt, pb), (pl, pr)), name=f"{name}_pad")
    rc = _r.reduce_axis(cg, name="rc")
    ry = _r.reduce_axis(kh, name="ry")
    rx = _r.reduce_axis(kw, name="rx")
    f_per_group = f // groups

    def body(nn, ff, yy, xx):
        group = ff if f_per_group == 1 else ff // f_per_group
        chan = rc if groups == 1 else scaled(group, cg) + rc
        val = padded[nn, chan, scaled(yy, sh) + scaled(ry, dh), scaled(xx, sw) + scaled(rx, dw)]
        return _r.sum(val * weight[ff, rc, ry, rx], axis=[rc, ry, rx])

    return compute_named((n, f, oh, ow), ["n", "f", "y", "x"], body, name)


def _pool_window(op: str, data: Tensor, pool_size, stride, padding, dilation):
    """Checked pooling geometry: out shape, kernel, stride, (top, left, bottom, right), dilation."""
    _check_4d(data, op, "data", "N, C, H, W")
    kh, kw = pair(pool_size, op, "pool_size")
    sh, sw = (kh, kw) if stride is None else pair(stride, op, "stride")
    dh, dw = pair(dilation, op, "dilation")
    if min(kh, kw, sh, sw, dh, dw) < 1:
        raise TEError(f"{op}: pool_size, stride and dilation must be positive")
    pads = _pads(padding, op)
    pt, pl, pb, pr = pads
    if max(pt, pb) > dh * (kh - 1) or max(pl, pr) > dw * (kw - 1):
        raise TEShapeError(f"{op}: padding {padding!r} must be smaller than the pooling window "
                           f"({kh}, {kw}); otherwise a window could see padding only")
    n, c, h, w = data.shape
    oh = _out_size(op, "height", h, pt, pb, kh, sh, dh)
    ow = _out_size(op, "width", w, pl, pr, kw, sw, dw)
    return (n, c, oh, ow), (kh, kw), (sh, sw), pads, (dh, dw)


def _window_read(data: Tensor, idx, red, strides, pads, dilation):
    """``data`` at window position ``red`` of output ``idx``, reading padding as nothing:
    returns the load and the bool condition that the position is inside ``data`` (None if
    it always is). Guarded indices are clamped so the load itself is always in bounds."""
    nn, cc, yy, xx = idx
    (_, _, h, w), (pt, pl, pb, pr) = data.shape, pads
    src, conds = [nn, cc], []
    for o, r, s, d, size, before, after in ((yy, red[0], strides[0], dilation[0], h, pt, pb),
                                            (xx, red[1], strides[1], dilation[1], w, pl, pr)):
        i = scaled(o, s) + scaled(r, d)
        if before:
            i = i - before
            conds.append(i >= 0)
        if after:
            conds.append(i < size)
        if before and after:
            i = clamp(i, size)
        elif before:
            i = _e.max(i, 0)
        elif after:
            i = _e.min(i, size - 1)
        src.append(i)
    cond = None
    for c in conds:
        cond = c if cond is None else cond & c
    return data[tuple(src)], cond


def max_pool2d(data: Tensor, pool_size, stride=None, padding=0, dilation=1,
               name: str = "max_pool2d") -> Tensor:
    """Max over ``pool_size`` windows of NCHW data; ``stride`` defaults to ``pool_size``
    (as in PyTorch). Padded positions are ignored, as if they held -inf."""
    out_shape, (kh, kw), strides, pads, dil = _pool_window(
        "max_pool2d", data, pool_size, stride, padding, dilation)
    ry, rx = _r.reduce_axis(kh, name="ry"), _r.reduce_axis(kw, name="rx")

    def body(*idx):
        val, cond = _window_read(data, idx, (ry, rx), strides, pads, dil)
        return _r.max(val, axis=[ry, rx], where=cond)

    return compute_named(out_shape, ["n", "c", "y", "x"], body, name)


def avg_pool2d(data: Tensor, pool_size, stride=None, padding=0, dilation=1,
               count_include_pad: bool = False, name: str = "avg_pool2d") -> Tensor:
    """Mean over ``pool_size`` windows of NCHW float data; ``stride`` defaults to
    ``pool_size``. With ``count_include_pad=False`` (ONNX's default) padded positions are
    left out of the count; with True every window counts ``kh * kw`` positions (PyTorch's
    default). Computed as a windowed sum stage ``<name>_sum`` and a divide stage."""
    op = "avg_pool2d"
    check_tensor(data, op, "data")
    if not _e.is_float(data.dtype):
        raise TEError(f"{op}: data {data.name!r} is {data.dtype}; average pooling needs floats")
    out_shape, (kh, kw), strides, pads, dil = _pool_window(
        op, data, pool_size, stride, padding, dilation)
    ry, rx = _r.reduce_axis(kh, name="ry"), _r.reduce_axis(kw, name="rx")

    def window_sum(*idx):
        val, cond = _window_read(data, idx, (ry, rx), strides, pads, dil)
        return _r.sum(val, axis=[ry, rx], where=cond)

    total = compute_named(out_shape, ["n", "c", "y", "x"], window_sum, f"{name}_sum")
    (_, _, h, w), (pt, pl, pb, pr) = data.shape, pads

    def count(o, k, s, d, size, before, after):
        """How many of the window's ``k`` positions fall inside ``[0, size)``."""
        if count_include_pad or not (before or after):
            return _e.const(k, "int32")
        # window position r reads input row o*s + r*d - before: it is real for
        # ceil((before - o*s) / d) <= r <= floor((size - 1 + before - o*s) / d)
        first, last = before - scaled(o, s), size - 1 + before - scaled(o, s)
        lo = _e.max((first + (d - 1)) // d if d > 1 else first, 0)
        hi = _e.min(last // d if d > 1 else last, k - 1)
        return hi - lo + 1

    def average(nn, cc, yy, xx):
        n_h = count(yy, kh, strides[0], dil[0], h, pt, pb)
        n_w = count(xx, kw, strides[1], dil[1], w, pl, pr)
        return total[nn, cc, yy, xx] / _e.cast(data.dtype, n_h * n_w)

    return compute_named(out_shape, ["n", "c", "y", "x"], average, name)


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``, in four stages:
    ``<name>_max``, ``<name>_exp``, ``<name>_sum`` and the division ``<name>``. The
    statistics keep the reduced dimension with size 1."""
    check_tensor(x, "softmax", "x")
    if not _e.is_float(x.dtype):
        raise TEError(f"softmax: {x.name!r} is {x.dtype}; softmax needs a float tensor")
    axis = normalize_axis(axis, x.ndim, "softmax")
    stat_shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    names = axis_names(x.ndim)

    def along(idx, r):
        return idx[:axis] + (r,) + idx[axis + 1:]

    def stat(idx):
        return idx[:axis] + (0,) + idx[axis + 1:]

    k1 = _r.reduce_axis(x.shape[axis], name="k")
    mx = compute_named(stat_shape, names, lambda *i: _r.max(x[along(i, k1)], axis=k1),
                       f"{name}_max")
    ex = compute_named(x.shape, names, lambda *i: _e.exp(x[i] - mx[stat(i)]), f"{name}_exp")
    k2 = _r.reduce_axis(x.shape[axis], name="k")
    sm = compute_named(stat_shape, names, lambda *i: _r.sum(ex[along(i, k2)], axis=k2),
                       f"{name}_sum")
    return compute_named(x.shape, names, lambda *i: ex[i] / sm[stat(i)], name)


def layer_norm(x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None,
               axis: int = -1, epsilon: float = 1e-5, name: str = "layer_norm") -> Tensor:
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta``, mean and (biased) variance over
    the dimensions ``axis, axis+1, ..., last`` (ONNX LayerNormalization's ``axis``).
    ``gamma`` and ``beta`` (optional) have the shape of those dimensions. Stages:
    ``<name>_sum``, ``<name>_sqsum`` (squared deviations from the mean: two passes, for
    accuracy) and ``<name>``."""
    op = "layer_norm"
    check_tensor(x, op, "x")
    if not _e.is_float(x.dtype):
        raise TEError(f"{op}: {x.name!r} is {x.dtype}; layer_norm needs a float tensor")
    axis = normalize_axis(axis, x.ndim, op)
    outer, inner = x.shape[:axis], x.shape[axis:]
    for arg, t in (("gamma", gamma), ("beta", beta)):
        if t is None:
            continue
        check_tensor(t, op, arg)
        _same_dtype(op, x, t)
        if t.shape != inner:
            raise TEShapeError(f"{op}: {arg} {t.name!r} has shape {t.shape} but must be {inner}, "
                               f"the normalized dimensions of {x.name!r} {x.shape}")
    stat_shape = outer or (1,)
    names = axis_names(len(stat_shape))
    inv_n = _e.const(1.0 / prod(inner), x.dtype)

    def stat(idx):
        return tuple(idx[:axis]) if outer else (0,)

    def reduce_axes():
        return [_r.reduce_axis(s, name=f"k{d}") for d, s in enumerate(inner)]

    r1 = reduce_axes()
    total = compute_named(stat_shape, names,
                          lambda *o: _r.sum(x[o[:axis] + tuple(r1)], axis=r1), f"{name}_sum")
    r2 = reduce_axes()

    def sq_dev(*o):
        d = x[o[:axis] + tuple(r2)] - total[stat(o)] * inv_n
        return _r.sum(d * d, axis=r2)

    sqsum = compute_named(stat_shape, names, sq_dev, f"{name}_sqsum")
    eps = _e.const(epsilon, x.dtype)

    def normalize(*i):
        s = stat(i)
        y = (x[i] - total[s] * inv_n) * _e.rsqrt(sqsum[s] * inv_n + eps)
        if gamma is not None:
            y = y * gamma[i[axis:]]
        if beta is not None:
            y = y + beta[i[axis:]]
        return y

    return compute_named(x.shape, axis_names(x.ndim), normalize, name)
