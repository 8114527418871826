"""Neural-network operators: bias_add, convolution and pooling.

Layouts are ``(N, C, *spatial)`` for data and ``(F, C/groups, *kernel)`` for convolution
weights (NCHW / OIHW in 2-D). The N-d operators (:func:`conv`, :func:`max_pool`,
:func:`avg_pool`) take ONNX's attributes: ``pads`` lists the padding before every spatial
axis, then after every one. The 2-D forms take ``padding`` as an int, a pair
``(pad_h, pad_w)``, or four ints ``(top, left, bottom, right)``.

    >>> y = relu(bias_add(conv2d(x, w, stride=2, padding=1), b))
    >>> p = max_pool2d(y, 2)
"""

from __future__ import annotations

from ...errors import TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import (and_all, axis_names, check_tensor, clamp, compute_dtype, compute_named,
                    ints, load, need_rank, normalize_axis, pair, prod, reduce_stage, scaled,
                    store)


def bias_add(x: Tensor, bias: Tensor, axis: int = 1, name: str = "bias_add") -> Tensor:
    """``x + bias`` where the 1-D ``bias`` runs along dimension ``axis`` of ``x`` (the
    channel axis of NCHW data by default)."""
    check_tensor(x, "bias_add", "x")
    check_tensor(bias, "bias_add", "bias")
    axis = normalize_axis(axis, x.ndim, "bias_add")
    if bias.shape != (x.shape[axis],):
        raise TEShapeError(f"bias_add: the bias has shape {bias.shape} but must be "
                           f"({x.shape[axis]},), the size of axis {axis} of the data {x.shape}")
    same_dtype("bias_add", x, bias)
    return compute_named(x.shape, axis_names(x.ndim),
                         lambda *idx: x[idx] + bias[idx[axis]], name)


def same_dtype(op: str, *tensors: Tensor) -> None:
    """Raise unless all ``tensors`` have one dtype."""
    for t in tensors[1:]:
        if t.dtype != tensors[0].dtype:
            raise TEDTypeError(f"{op}: {tensors[0].name!r} is {tensors[0].dtype} but {t.name!r} "
                               f"is {t.dtype}; cast one of them so the dtypes agree")


# --- window geometry ----------------------------------------------------------------------------
def _check_nd(x: Tensor, op: str, arg: str, layout: str, ndim: int | None = None) -> None:
    check_tensor(x, op, arg)
    if not ndim:
        need_rank(op, x.shape, 3, f"the {arg}", f"({layout})")
    elif x.ndim != ndim:
        raise TEShapeError(f"{op}: the {arg} has shape {x.shape} but must be {ndim}-D "
                           f"({layout})")


def _axis_word(d: int, nsp: int) -> str:
    return ("height", "width")[d] if nsp == 2 else f"spatial axis {d}"


def window_out_size(op: str, size: int, before: int, after: int, kernel: int, stride: int,
                    dilation: int, ceil_mode: bool = False, what: str = "") -> int:
    """How many window positions fit along an axis of ``size`` padded by ``before`` and
    ``after`` (ONNX's rule; with ``ceil_mode`` a last partial window counts if it starts
    inside the input). A window larger than the padded input raises a ``TEShapeError``.

        >>> window_out_size("max_pool", 5, 0, 0, 2, 2, 1, ceil_mode=True)
        3
    """
    span = dilation * (kernel - 1) + 1
    num = size + before + after - span
    if num < 0:
        raise TEShapeError(f"{op}: the {what + ' ' if what else ''}window spans {span} but the "
                           f"padded input is only {size + before + after} ({size} + padding "
                           f"{before}+{after}); use a smaller kernel or dilation, or more "
                           "padding")
    if not ceil_mode:
        return num // stride + 1
    out = -(-num // stride) + 1
    return out - 1 if (out - 1) * stride >= size + before else out


def window_attrs(op: str, nsp: int, kernel, strides, pads, dilations):
    """(kernel, strides, pads, dilations) of a window over ``nsp`` spatial axes, each a tuple
    of ints (None: strides and dilations 1, pads 0), checked: a conv's or a pool's check of
    its attributes, which the graph ops share."""
    kernel = ints(kernel, nsp, op, "kernel_shape")
    strides = ints(strides if strides is not None else 1, nsp, op, "strides")
    dilations = ints(dilations if dilations is not None else 1, nsp, op, "dilations")
    pads = ints(pads if pads is not None else 0, 2 * nsp, op, "pads")
    if min(strides + dilations + kernel) < 1 or min(pads) < 0:
        raise TEAttributeError(f"{op}: strides {strides}, dilations {dilations} and kernel "
                               f"{kernel} must be positive and pads {pads} non-negative")
    return kernel, strides, pads, dilations


def _window(op: str, x: Tensor, kernel, strides, pads, dilations, ceil_mode=False):
    """Checked window geometry along the spatial axes of ``x``: (kernel, strides, pads,
    dilations, output spatial sizes), each a tuple of ints."""
    nsp = x.ndim - 2
    kernel, strides, pads, dilations = window_attrs(op, nsp, kernel, strides, pads, dilations)
    out = [window_out_size(op, x.shape[2 + d], pads[d], pads[nsp + d], kernel[d], strides[d],
                           dilations[d], ceil_mode, _axis_word(d, nsp)) for d in range(nsp)]
    return kernel, strides, pads, dilations, tuple(out)


def _window_read(x: Tensor, idx, rk, strides, pads, dilations, out):
    """``x`` at window position ``rk`` of output ``idx``, in its compute dtype, and the
    condition that the position is inside ``x`` (None if it always is). Guarded indices
    are clamped so that the load itself is always in bounds."""
    nsp = x.ndim - 2
    src, conds = list(idx[:2]), []
    for d in range(nsp):
        size = x.shape[2 + d]
        i = scaled(idx[2 + d], strides[d]) + scaled(rk[d], dilations[d])
        i = i - pads[d] if pads[d] else i
        guard = [i >= 0] if pads[d] else []
        if (out[d] - 1) * strides[d] + (rk[d].extent - 1) * dilations[d] - pads[d] >= size:
            guard.append(i < size)
        conds += guard
        src.append(clamp(i, size) if guard else i)
    return load(x, src), and_all(conds)


def _spatial_names(nsp: int, first: str = "c") -> list[str]:
    return ["n", first] + [f"o{d}" for d in range(nsp)]


# --- convolution --------------------------------------------------------------------------------
def _zero_pad(x: Tensor, pads, name: str) -> Tensor:
    """``x`` with zeros around its spatial axes, as a stage of its own."""
    nsp = x.ndim - 2
    if not any(pads):
        return x
    shape = x.shape[:2] + tuple(x.shape[2 + d] + pads[d] + pads[nsp + d] for d in range(nsp))

    def body(n, c, *p):
        conds, src = [], [n, c]
        for d in range(nsp):
            i = p[d] - pads[d] if pads[d] else p[d]
            size = x.shape[2 + d]
            guard = ([i >= 0] if pads[d] else []) + ([i < size] if pads[nsp + d] else [])
            conds += guard
            src.append(clamp(i, size) if guard else i)
        v, cond = x[tuple(src)], and_all(conds)
        return v if cond is None else _e.select(cond, v, _e.const(0, x.dtype))

    return compute_named(shape, ["n", "c"] + [f"p{d}" for d in range(nsp)], body, name)


def _conv_output(data: Tensor, f: int, out, nsp: int, body, bias, name: str) -> Tensor:
    """The (N, F, *out) result of a convolution whose sum is ``body``: the sum itself, or,
    with a ``bias``, the sum in ``{name}_acc`` and the bias added in an epilogue stage."""
    shape, names = (data.shape[0], f) + out, _spatial_names(nsp, "f")
    if bias is None:
        return reduce_stage(shape, names, body, data.dtype, name)
    acc = compute_named(shape, names, body, f"{name}_acc")
    return compute_named(shape, names, lambda n, ff, *o: store(
        acc[(n, ff) + o] + load(bias, (ff,)), data.dtype), name)


def conv(data: Tensor, weight: Tensor, bias: Tensor | None = None, strides=None, pads=None,
         dilations=None, group: int = 1, kernel_shape=None, name: str = "conv") -> Tensor:
    """N-d convolution (cross-correlation) with groups, ONNX's Conv: data ``(N, C, *spatial)``,
    weight ``(F, C/group, *kernel)``, optional bias ``(F,)``:
    ``out[n, f, o] = sum(padded[n, g*C/group + rc, o*s + r*d] * weight[f, rc, r]) (+ bias[f])``
    with ``g = f // (F / group)``; ``kernel_shape``, if given, must be the weight's. Stages:
    ``<name>_pad`` (zeros, if padded), the sum (``<name>_acc`` if the bias or a cast
    follows) and ``<name>``.

    >>> conv(x, w, strides=(2, 2), pads=(1, 1, 1, 1)).shape     # x (1, 3, 8, 8), w (4, 3, 3, 3)
    (1, 4, 4, 4)
    """
    op = "conv"
    _check_nd(data, op, "data", "N, C, *spatial")
    _check_nd(weight, op, "weight", "F, C/groups, *kernel", data.ndim)
    same_dtype(op, data, weight)
    c, (f, cg) = data.shape[1], weight.shape[:2]
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise TEAttributeError(f"{op}: groups={group!r} must be a positive int")
    if c % group or f % group:
        raise TEShapeError(f"{op}: groups={group} must divide both the input channels ({c}) "
                           f"and the output channels ({f})")
    if cg != c // group:
        raise TEShapeError(
            f"{op}: the weight has shape {weight.shape}, so {cg} input channels per "
            f"group, but the data {data.shape} with groups={group} has "
            f"{c // group}; the weight must be (F, C/groups, *kernel)")
    if kernel_shape is not None and tuple(kernel_shape) != weight.shape[2:]:
        raise TEShapeError(f"{op}: kernel_shape={tuple(kernel_shape)} disagrees with the "
                           f"weight's spatial shape {weight.shape[2:]}")
    if bias is not None and (check_tensor(bias, op, "bias").shape != (f,)):
        raise TEShapeError(f"{op}: the bias has shape {bias.shape} but must be ({f},), one "
                           "per output channel")
    _, strides, pads, dil, out = _window(op, data, weight.shape[2:], strides, pads, dilations)
    nsp = data.ndim - 2
    padded = _zero_pad(data, pads, f"{name}_pad")
    mg = f // group
    rc = _r.reduce_axis(cg, name="rc")
    rk = [_r.reduce_axis(weight.shape[2 + d], name=f"r{d}") for d in range(nsp)]

    def body(n, ff, *o):
        chan = rc if group == 1 else scaled(ff if mg == 1 else ff // mg, cg) + rc
        src = [n, chan] + [scaled(o[d], strides[d]) + scaled(rk[d], dil[d]) for d in range(nsp)]
        return _r.sum(load(padded, src) * load(weight, [ff, rc] + rk), axis=[rc] + rk)

    return _conv_output(data, f, out, nsp, body, bias, name)


def _pads2d(padding, op: str) -> tuple[int, int, int, int]:
    """``(top, left, bottom, right)`` from an int, a pair or four ints."""
    if isinstance(padding, (tuple, list)) and len(padding) == 4:
        p = ints(padding, 4, op, "padding")
    else:
        ph, pw = pair(padding, op, "padding")
        p = (ph, pw, ph, pw)
    if any(v < 0 for v in p):
        raise TEShapeError(f"{op}: padding {padding!r} must be non-negative")
    return p  # type: ignore[return-value]


def conv2d(data: Tensor, weight: Tensor, stride=1, padding=0, dilation=1, groups: int = 1,
           name: str = "conv2d") -> Tensor:
    """2-D :func:`conv`, NCHW data and OIHW weight, with ``stride``/``dilation`` an int or
    a pair and ``padding`` an int, a pair or ``(top, left, bottom, right)``."""
    op = "conv2d"
    _check_nd(data, op, "data", "N, C, H, W", 4)
    _check_nd(weight, op, "weight", "F, C/groups, KH, KW", 4)
    strides, dil = pair(stride, op, "stride"), pair(dilation, op, "dilation")
    if min(strides + dil) < 1:
        raise TEAttributeError(f"{op}: stride {stride!r} and dilation {dilation!r} must be "
                               "positive")
    top, left, bottom, right = _pads2d(padding, op)
    return conv(data, weight, None, strides, (top, left, bottom, right), dil, groups,
                name=name)


# --- pooling ------------------------------------------------------------------------------------
def max_pool(data: Tensor, kernel_shape, strides=None, pads=None, dilations=None,
             ceil_mode: bool = False, name: str = "max_pool") -> Tensor:
    """Max over windows of ``(N, C, *spatial)`` data, ONNX's MaxPool (``strides`` default
    to 1); padded positions never win."""
    _check_nd(data, "max_pool", "data", "N, C, *spatial")
    kernel, strides, pads, dil, out = _window("max_pool", data, kernel_shape, strides, pads,
                                              dilations, ceil_mode)
    rk = [_r.reduce_axis(k, name=f"r{d}") for d, k in enumerate(kernel)]

    def body(*idx):
        val, cond = _window_read(data, idx, rk, strides, pads, dil, out)
        return _r.max(val, axis=rk, where=cond)

    return reduce_stage(data.shape[:2] + out, _spatial_names(len(out)), body, data.dtype, name)


def max_pool_indices(data: Tensor, kernel_shape, strides=None, pads=None, dilations=None,
                     ceil_mode: bool = False, storage_order: int = 0,
                     name: str = "max_pool_indices") -> Tensor:
    """Where each window's max of :func:`max_pool` is, as ONNX's MaxPool ``Indices``: the
    int64 offset of that element in the whole ``(N, C, *spatial)`` tensor, its spatial part
    row-major (``storage_order=0``) or column-major (1); of equal maxima the first in
    row-major order. Stages: the max ``<name>_value``, the row-major spatial offset
    ``<name>_first``, then the offset."""
    _check_nd(data, "max_pool_indices", "data", "N, C, *spatial")
    kernel, strides, pads, dil, out = _window("max_pool", data, kernel_shape, strides, pads,
                                              dilations, ceil_mode)
    nsp, spatial = len(out), data.shape[2:]
    best = max_pool(data, kernel, strides, pads, dil, ceil_mode, name=f"{name}_value")
    rk = [_r.reduce_axis(k, name=f"r{d}") for d, k in enumerate(kernel)]
    i64 = "int64"

    def first(*idx):
        val, cond = _window_read(data, idx, rk, strides, pads, dil, out)
        b = load(best, idx)
        hit = _e.logical_or(val == b, val != val) if _e.is_float(val.dtype) else val == b
        hit = hit if cond is None else _e.logical_and(cond, hit)
        offset = _e.const(0, i64)
        for d in range(nsp):
            at = scaled(idx[2 + d], strides[d]) + scaled(rk[d], dil[d]) - pads[d]
            offset = offset * spatial[d] + _e.cast(i64, at)
        return _r.min(_e.select(hit, offset, _e.const(prod(spatial), i64)), axis=rk)

    at = compute_named(data.shape[:2] + out, _spatial_names(nsp), first, f"{name}_first")

    def index(*idx):
        flat = at[idx]
        if storage_order:
            # the row-major offset's coordinates, recombined column-major
            coords, rest = [], flat
            for d in reversed(range(nsp)):
                coords.insert(0, rest % spatial[d])
                rest = rest // spatial[d]
            flat, step = _e.const(0, i64), 1
            for d in range(nsp):
                flat, step = flat + coords[d] * step, step * spatial[d]
        plane = _e.cast(i64, idx[0]) * data.shape[1] + _e.cast(i64, idx[1])
        return plane * prod(spatial) + flat

    return compute_named(data.shape[:2] + out, _spatial_names(nsp), index, name)


def _count(o, k: int, s: int, d: int, lo: int, hi: int, pad: int):
    """How many of a window's ``k`` positions ``o*s + r*d - pad`` fall in ``[lo, hi)``."""
    base = scaled(o, s) - pad
    first = _e.max((_e.const(lo) - base + (d - 1)) // d, 0)
    last = _e.min((_e.const(hi - 1) - base) // d, k - 1)
    return _e.max(last - first + 1, 0)


def avg_pool(data: Tensor, kernel_shape, strides=None, pads=None, dilations=None,
             ceil_mode: bool = False, count_include_pad: bool = False,
             name: str = "avg_pool") -> Tensor:
    """Mean over windows of float ``(N, C, *spatial)`` data, ONNX's AveragePool: padded
    positions are left out of the count unless ``count_include_pad``. Stages: the window
    sum ``<name>_sum`` and the division ``<name>``."""
    op = "avg_pool"
    _check_nd(data, op, "data", "N, C, *spatial")
    if not _e.is_float(data.dtype):
        raise TEDTypeError(f"{op}: the data is {data.dtype}; average pooling needs "
                           "floats")
    kernel, strides, pads, dil, out = _window(op, data, kernel_shape, strides, pads, dilations,
                                              ceil_mode)
    nsp, dt = len(out), compute_dtype(data.dtype)
    rk = [_r.reduce_axis(k, name=f"r{d}") for d, k in enumerate(kernel)]
    names = _spatial_names(nsp)

    def window_sum(*idx):
        val, cond = _window_read(data, idx, rk, strides, pads, dil, out)
        return _r.sum(val, axis=rk, where=cond)

    total = compute_named(data.shape[:2] + out, names, window_sum, f"{name}_sum")

    def count(d, o):
        size, k, s, dd, before = data.shape[2 + d], kernel[d], strides[d], dil[d], pads[d]
        lo, hi = (-before, size + pads[nsp + d]) if count_include_pad else (0, size)
        if -before >= lo and (out[d] - 1) * s + (k - 1) * dd - before < hi:
            return k  # no window reaches outside [lo, hi)
        return _count(o, k, s, dd, lo, hi, before)

    def average(*idx):
        counts = [count(d, idx[2 + d]) for d in range(nsp)]
        fixed = prod(c for c in counts if isinstance(c, int))
        n = _prod_expr([c for c in counts if not isinstance(c, int)])
        n = _e.const(float(fixed), dt) if n is None else _e.cast(dt, n if fixed == 1 else n * fixed)
        return store(total[idx] / n, data.dtype)

    return compute_named(data.shape[:2] + out, names, average, name)


def _prod_expr(values):
    """``v0 * v1 * ...`` of IR expressions."""
    out = None
    for v in values:
        out = v if out is None else out * v
    return out


def global_avg_pool(data: Tensor, name: str = "global_avg_pool") -> Tensor:
    """Mean of ``(N, C, *spatial)`` data over all spatial axes, kept as size 1. Stages:
    ``<name>_sum`` and ``<name>``."""
    _check_nd(data, "global_avg_pool", "data", "N, C, *spatial")
    rk = [_r.reduce_axis(s, name=f"r{d}") for d, s in enumerate(data.shape[2:])]
    shape, names = data.shape[:2] + (1,) * len(rk), _spatial_names(len(rk))
    total = compute_named(shape, names, lambda n, c, *o: _r.sum(load(data, [n, c] + rk),
                                                                axis=rk), f"{name}_sum")
    count = _e.const(float(prod(data.shape[2:])), total.dtype)
    return compute_named(shape, names, lambda *i: store(total[i] / count, data.dtype), name)


def _pool2d_args(op: str, data: Tensor, pool_size, stride, padding, dilation):
    """ONNX-style (kernel, strides, pads, dilations) from the 2-D forms' arguments."""
    _check_nd(data, op, "data", "N, C, H, W", 4)
    kh, kw = pair(pool_size, op, "pool_size")
    strides = (kh, kw) if stride is None else pair(stride, op, "stride")
    dh, dw = pair(dilation, op, "dilation")
    if min((kh, kw) + strides + (dh, dw)) < 1:
        raise TEAttributeError(f"{op}: pool_size, stride and dilation must be positive")
    pads = _pads2d(padding, op)
    pt, pl, pb, pr = pads
    if max(pt, pb) > dh * (kh - 1) or max(pl, pr) > dw * (kw - 1):
        raise TEShapeError(f"{op}: padding {padding!r} must be smaller than the pooling window "
                           f"({kh}, {kw}); otherwise a window could see padding only")
    return (kh, kw), strides, pads, (dh, dw)


def max_pool2d(data: Tensor, pool_size, stride=None, padding=0, dilation=1,
               name: str = "max_pool2d") -> Tensor:
    """2-D :func:`max_pool` of NCHW data; ``stride`` defaults to ``pool_size`` (as in
    PyTorch)."""
    return max_pool(data, *_pool2d_args("max_pool2d", data, pool_size, stride, padding,
                                        dilation), name=name)


def avg_pool2d(data: Tensor, pool_size, stride=None, padding=0, dilation=1,
               count_include_pad: bool = False, name: str = "avg_pool2d") -> Tensor:
    """2-D :func:`avg_pool` of NCHW float data; ``stride`` defaults to ``pool_size``. With
    ``count_include_pad=False`` (ONNX's default) padded positions are left out of the
    count; with True every window counts ``kh * kw`` positions (PyTorch's default)."""
    check_tensor(data, "avg_pool2d", "data")
    if not _e.is_float(data.dtype):
        raise TEDTypeError(f"avg_pool2d: the data is {data.dtype}; average pooling "
                           "needs floats")
    return avg_pool(data, *_pool2d_args("avg_pool2d", data, pool_size, stride, padding,
                                        dilation), count_include_pad=count_include_pad, name=name)


def conv_transpose(data: Tensor, weight: Tensor, bias: Tensor | None = None, strides=None,
                   pads=None, dilations=None, group: int = 1, output_padding=None,
                   name: str = "conv_transpose") -> Tensor:
    """N-d transposed convolution, ONNX's ConvTranspose: data ``(N, C, *spatial)``, weight
    ``(C, F/group, *kernel)``; each input element scatters ``x * weight`` onto the output
    window ``i*s - pad_begin + r*d``. Written as a gather: output position ``o`` sums the
    inputs ``i = (o + pad_begin - r*d) / s`` that are whole and in range. The output size is
    ``s*(n-1) + output_padding + (k-1)*d + 1 - pad_begin - pad_end``.
    """
    op = "conv_transpose"
    _check_nd(data, op, "data", "N, C, *spatial")
    _check_nd(weight, op, "weight", "C, F/groups, *kernel", data.ndim)
    same_dtype(op, data, weight)
    nsp, c = data.ndim - 2, data.shape[1]
    if c % group or weight.shape[0] != c:
        raise TEShapeError(f"{op}: the weight {weight.shape} must be (C, F/group, "
                           f"*kernel) with C={c} divisible by group={group}")
    kernel, strides, pads, dil = window_attrs(op, nsp, weight.shape[2:], strides, pads,
                                              dilations)
    opad = ints(output_padding if output_padding is not None else 0, nsp, op, "output_padding")
    out = tuple(strides[d] * (data.shape[2 + d] - 1) + opad[d] + (kernel[d] - 1) * dil[d] + 1
                - pads[d] - pads[nsp + d] for d in range(nsp))
    if min(out) < 1:
        raise TEShapeError(f"{op}: the pads {pads} leave no output (size {out})")
    cg, mg = c // group, weight.shape[1]
    f = mg * group
    if bias is not None and check_tensor(bias, op, "bias").shape != (f,):
        raise TEShapeError(f"{op}: the bias has shape {bias.shape} but must be ({f},), one "
                           "per output channel")
    rc = _r.reduce_axis(cg, name="rc")
    rk = [_r.reduce_axis(kernel[d], name=f"r{d}") for d in range(nsp)]

    def body(n, ff, *o):
        chan = rc if group == 1 else scaled(ff // mg, cg) + rc
        src, conds = [n, chan], []
        for d in range(nsp):
            t = o[d] + pads[d] - scaled(rk[d], dil[d])
            i = t // strides[d] if strides[d] > 1 else t
            conds.append(t >= 0)
            if strides[d] > 1:
                conds.append(t % strides[d] == 0)
            conds.append(i < data.shape[2 + d])
            src.append(clamp(i, data.shape[2 + d]))
        wf = ff if group == 1 else ff % mg
        return _r.sum(load(data, src) * load(weight, [chan, wf] + rk), axis=[rc] + rk,
                      where=and_all(conds))

    return _conv_output(data, f, out, nsp, body, bias, name)
