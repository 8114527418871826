"""Legalizations of the reducing ops: matmul, gemm, conv, pooling, normalization, softmax and
the ``sum/mean/max/min`` reductions.

A reduction stage is a TE compute whose whole body is ``te.sum/max/min``; any arithmetic
after it (bias, scaling, division, a cast back to a storage dtype) is a stage of its own,
which the default schedule places inside the reduction's loops.
"""

from __future__ import annotations

import math

from ..te import reduction as R
from ..te.tensor import compute_named
from ..tir import expr as E
from .legalize import axis_names, bcast, compute_dtype, load, store
from .reduce import reduce_axes
from .registry import register_legalization


def _reduce_stage(shape, names, body, out_dtype: str, name: str):
    """A reduction stage; a cast stage follows when it accumulates in another dtype."""
    acc_name = name if _acc_dtype(body, names) == out_dtype else f"{name}_acc"
    acc = compute_named(shape, names, body, acc_name)
    if acc.dtype == out_dtype:
        return acc
    return compute_named(shape, names, lambda *i: store(acc[i], out_dtype), name)


def _acc_dtype(body, names):
    return body(*(E.Var(n) for n in names)).dtype


def _scaled(v, factor: int):
    """``v * factor`` without the ``* 1`` that would clutter the printed loop IR."""
    return v if factor == 1 else v * factor


def _cnst(value, dtype):
    return E.const(int(value) if E.is_int(dtype) else value, dtype)


# --- matmul and gemm -------------------------------------------------------------------------------
def _matmul(a, b, shape, name, trans_a=False, trans_b=False, b_panel=0):
    k_extent = a.shape[-2] if trans_a else a.shape[-1]
    k = R.reduce_axis(k_extent, name="k")

    def body(*idx):
        idx = list(idx)
        j = idx.pop() if b.ndim > 1 else None
        i = idx.pop() if a.ndim > 1 else None
        if a.ndim > 1:
            ai = bcast(a.shape[:-2], idx) + ((k, i) if trans_a else (i, k))
        else:
            ai = (k,)
        if b_panel:
            bi = (j // b_panel, k, j % b_panel)
        elif b.ndim > 1:
            bi = bcast(b.shape[:-2], idx) + ((j, k) if trans_b else (k, j))
        else:
            bi = (k,)
        return R.sum(load(a, ai) * load(b, bi), axis=k)

    return body, axis_names(len(shape))


@register_legalization("matmul")
def _lower_matmul(ins, attrs, out_type):
    body, names = _matmul(ins[0], ins[1], out_type.shape, "matmul")
    return _reduce_stage(out_type.shape, names, body, out_type.dtype, "matmul")


@register_legalization("gemm")
def _lower_gemm(ins, attrs, out_type):
    a, b = ins[0], ins[1]
    body, names = _matmul(a, b, out_type.shape, "gemm", bool(attrs["trans_a"]),
                          bool(attrs["trans_b"]), attrs["b_panel"])
    alpha, beta = attrs["alpha"], attrs["beta"]
    plain = len(ins) == 2 and alpha == 1.0
    acc = compute_named(out_type.shape, names, body, "gemm" if plain and
                        compute_dtype(a.dtype) == out_type.dtype else "gemm_acc")
    if plain and acc.dtype == out_type.dtype:
        return acc
    dt = acc.dtype

    def epilogue(i, j):
        v = acc[i, j] if alpha == 1.0 else acc[i, j] * _cnst(alpha, dt)
        if len(ins) == 3:
            c = load(ins[2], bcast(ins[2].shape, (i, j)))
            v = v + (c if beta == 1.0 else c * _cnst(beta, dt))
        return store(v, out_type.dtype)

    return compute_named(out_type.shape, names, epilogue, "gemm")


# --- conv and pooling ------------------------------------------------------------------------------
def _zero_pad(x, pads, name):
    """``x`` with zeros around its spatial axes (a stage of its own)."""
    nsp = x.ndim - 2
    if not any(pads):
        return x
    shape = x.shape[:2] + tuple(x.shape[2 + d] + pads[d] + pads[nsp + d] for d in range(nsp))

    def body(n, c, *p):
        cond, src = None, [n, c]
        for d in range(nsp):
            i = p[d] - pads[d] if pads[d] else p[d]
            size = x.shape[2 + d]
            conds = ([i >= 0] if pads[d] else []) + ([i < size] if pads[nsp + d] else [])
            for cnd in conds:
                cond = cnd if cond is None else cond & cnd
            src.append(E.max(E.min(i, size - 1), 0) if conds else i)
        v = x[tuple(src)]
        return v if cond is None else E.select(cond, v, E.const(0, x.dtype))

    return compute_named(shape, ["n", "c"] + [f"p{d}" for d in range(nsp)], body, name)


@register_legalization("conv")
def _lower_conv(ins, attrs, out_type):
    x, w = ins[0], ins[1]
    nsp = x.ndim - 2
    strides, dil = attrs.get("strides") or (1,) * nsp, attrs.get("dilations") or (1,) * nsp
    pads, group = attrs.get("pads") or (0,) * (2 * nsp), attrs["group"]
    padded = _zero_pad(x, pads, "conv_pad")
    cg, mg = w.shape[1], w.shape[0] // group
    rc = R.reduce_axis(cg, name="rc")
    rk = [R.reduce_axis(w.shape[2 + d], name=f"r{d}") for d in range(nsp)]

    def body(n, f, *o):
        chan = rc if group == 1 else (f // mg) * cg + rc
        src = [n, chan] + [_scaled(o[d], strides[d]) + _scaled(rk[d], dil[d])
                           for d in range(nsp)]
        return R.sum(load(padded, src) * load(w, [f, rc] + rk), axis=[rc] + rk)

    names = ["n", "f"] + [f"o{d}" for d in range(nsp)]
    if len(ins) == 2:
        return _reduce_stage(out_type.shape, names, body, out_type.dtype, "conv")
    acc = compute_named(out_type.shape, names, body, "conv_acc")
    bias = ins[2]
    return compute_named(out_type.shape, names,
                         lambda n, f, *o: store(acc[(n, f) + o] + load(bias, (f,)),
                                                out_type.dtype), "conv")


def _window(x, attrs, out_shape, rk, idx):
    """Source indices (clamped in bounds) and the in-bounds condition of a pooling window."""
    nsp = x.ndim - 2
    strides, dil = attrs.get("strides") or (1,) * nsp, attrs.get("dilations") or (1,) * nsp
    pads = attrs.get("pads") or (0,) * (2 * nsp)
    src, cond = list(idx[:2]), None
    for d in range(nsp):
        size, out = x.shape[2 + d], out_shape[2 + d]
        i = _scaled(idx[2 + d], strides[d]) + _scaled(rk[d], dil[d])
        i = i - pads[d] if pads[d] else i
        conds = []
        if pads[d]:
            conds.append(i >= 0)
        if (out - 1) * strides[d] + (rk[d].extent - 1) * dil[d] - pads[d] >= size:
            conds.append(i < size)
        for c in conds:
            cond = c if cond is None else cond & c
        src.append(E.max(E.min(i, size - 1), 0) if conds else i)
    return tuple(src), cond


def _pool_axes(x, attrs):
    return [R.reduce_axis(k, name=f"r{d}") for d, k in enumerate(attrs["kernel_shape"])]


@register_legalization("max_pool")
def _lower_max_pool(ins, attrs, out_type):
    x = ins[0]
    rk = _pool_axes(x, attrs)
    names = ["n", "c"] + [f"o{d}" for d in range(x.ndim - 2)]

    def body(*idx):
        src, cond = _window(x, attrs, out_type.shape, rk, idx)
        return R.max(load(x, src), axis=rk, where=cond)

    return _reduce_stage(out_type.shape, names, body, out_type.dtype, "max_pool")


def _count(o, k, s, d, lo, hi, pad):
    """How many of a window's ``k`` positions ``o*s + r*d - pad`` fall in ``[lo, hi)``."""
    base = o * s - pad
    first = E.max((E.const(lo) - base + (d - 1)) // d, 0)
    last = E.min((E.const(hi - 1) - base) // d, k - 1)
    return E.max(last - first + 1, 0)


@register_legalization("avg_pool")
def _lower_avg_pool(ins, attrs, out_type):
    x = ins[0]
    nsp = x.ndim - 2
    rk = _pool_axes(x, attrs)
    names = ["n", "c"] + [f"o{d}" for d in range(nsp)]
    dt = compute_dtype(x.dtype)

    def window_sum(*idx):
        src, cond = _window(x, attrs, out_type.shape, rk, idx)
        return R.sum(load(x, src), axis=rk, where=cond)

    total = compute_named(out_type.shape, names, window_sum, "avg_pool_sum")
    strides, dil = attrs.get("strides") or (1,) * nsp, attrs.get("dilations") or (1,) * nsp
    pads = attrs.get("pads") or (0,) * (2 * nsp)

    def average(*idx):
        n = None
        for d in range(nsp):
            size, k = x.shape[2 + d], attrs["kernel_shape"][d]
            lo, hi = (-pads[d], size + pads[nsp + d]) if attrs["count_include_pad"] else (0, size)
            c = _count(idx[2 + d], k, strides[d], dil[d], lo, hi, pads[d])
            n = c if n is None else n * c
        return store(total[idx] / E.cast(dt, n), out_type.dtype)

    return compute_named(out_type.shape, names, average, "avg_pool")


@register_legalization("global_avg_pool")
def _lower_gap(ins, attrs, out_type):
    x = ins[0]
    rk = [R.reduce_axis(s, name=f"r{d}") for d, s in enumerate(x.shape[2:])]
    names = ["n", "c"] + [f"o{d}" for d in range(x.ndim - 2)]
    total = compute_named(out_type.shape, names,
                          lambda n, c, *o: R.sum(load(x, [n, c] + rk), axis=rk),
                          "global_avg_pool_sum")
    count = E.const(float(math.prod(x.shape[2:])), total.dtype)
    return compute_named(out_type.shape, names,
                         lambda *i: store(total[i] / count, out_type.dtype), "global_avg_pool")


# --- reductions ------------------------------------------------------------------------------------
def _reduce_source(x, axes, keepdims, rs):
    """Map output indices to the source index of a reduction over ``axes``."""
    def src(idx):
        out, pos, r = [], 0, iter(rs)
        for d in range(x.ndim):
            if d in axes:
                out.append(next(r))
                pos += 1 if keepdims else 0
            else:
                out.append(idx[pos])
                pos += 1
        return tuple(out)
    return src


def _lower_reduce(kind):
    @register_legalization(kind)
    def lower(ins, attrs, out_type):
        x = ins[0]
        axes = reduce_axes(kind, x.ndim, attrs.get("axes"))
        rs = [R.reduce_axis(x.shape[a], name=f"r{a}") for a in axes]
        src = _reduce_source(x, axes, attrs["keepdims"], rs)
        names = axis_names(out_type.ndim)
        combiner = {"sum": R.sum, "mean": R.sum, "max": R.max, "min": R.min}[kind]

        def value(idx):
            v = load(x, src(idx))
            return E.cast("int32", v) if v.dtype == "bool" else v

        if kind != "mean":
            return _reduce_stage(out_type.shape, names,
                                 lambda *i: combiner(value(i), axis=rs), out_type.dtype, kind)
        total = compute_named(out_type.shape, names, lambda *i: combiner(value(i), axis=rs),
                              "mean_sum")
        count = math.prod(x.shape[a] for a in axes)

        def divide(*i):
            t = total[i]
            if E.is_float(t.dtype):
                return store(t / E.const(float(count), t.dtype), out_type.dtype)
            from .lower_elementwise import _trunc_div
            return store(_trunc_div(t, E.const(count, t.dtype)), out_type.dtype)

        return compute_named(out_type.shape, names, divide, "mean")
    return lower


for _kind in ("sum", "mean", "max", "min"):
    _lower_reduce(_kind)


# --- softmax and layer norm ------------------------------------------------------------------------
def _along(x, axis):
    """(stat shape, index into stats, index along a reduce axis) for a one-axis reduction."""
    stat_shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    return (stat_shape, lambda i: i[:axis] + (E.const(0),) + i[axis + 1:],
            lambda i, r: i[:axis] + (r,) + i[axis + 1:])


def _lower_softmax(kind):
    @register_legalization(kind)
    def lower(ins, attrs, out_type):
        x = ins[0]
        axis = attrs["axis"] % x.ndim
        stat_shape, stat, along = _along(x, axis)
        names = axis_names(x.ndim)
        k1 = R.reduce_axis(x.shape[axis], name="k")
        mx = compute_named(stat_shape, names, lambda *i: R.max(load(x, along(i, k1)), axis=k1),
                           f"{kind}_max")
        ex = compute_named(x.shape, names, lambda *i: E.exp(load(x, i) - mx[stat(i)]),
                           f"{kind}_exp")
        k2 = R.reduce_axis(x.shape[axis], name="k")
        sm = compute_named(stat_shape, names, lambda *i: R.sum(ex[along(i, k2)], axis=k2),
                           f"{kind}_sum")
        if kind == "softmax":
            return compute_named(x.shape, names,
                                 lambda *i: store(ex[i] / sm[stat(i)], out_type.dtype), kind)
        return compute_named(
            x.shape, names,
            lambda *i: store(load(x, i) - mx[stat(i)] - E.log(sm[stat(i)]), out_type.dtype),
            kind)
    return lower


_lower_softmax("softmax")
_lower_softmax("log_softmax")


@register_legalization("layer_norm")
def _lower_layer_norm(ins, attrs, out_type):
    x = ins[0]
    axis = attrs["axis"] % x.ndim
    inner = x.shape[axis:]
    stat_shape = x.shape[:axis] + (1,) * len(inner)
    dt = compute_dtype(x.dtype)
    n = math.prod(inner)
    inv_n, eps = E.const(1.0 / n, dt), E.const(attrs["epsilon"], dt)
    names = axis_names(x.ndim)

    def stat(i):
        return tuple(i[:axis]) + (E.const(0),) * len(inner)

    def reduce_axes_():
        return [R.reduce_axis(s, name=f"k{d}") for d, s in enumerate(inner)]

    r1 = reduce_axes_()
    total = compute_named(stat_shape, names,
                          lambda *i: R.sum(load(x, tuple(i[:axis]) + tuple(r1)), axis=r1),
                          "layer_norm_sum")
    mean = compute_named(stat_shape, names, lambda *i: total[i] * inv_n, "layer_norm_mean")
    r2 = reduce_axes_()

    def sq_dev(*i):
        d = load(x, tuple(i[:axis]) + tuple(r2)) - mean[i]
        return R.sum(d * d, axis=r2)

    sq = compute_named(stat_shape, names, sq_dev, "layer_norm_sqsum")
    inv = compute_named(stat_shape, names, lambda *i: E.const(1.0, dt) / E.sqrt(sq[i] * inv_n + eps),
                        "layer_norm_inv_std")

    def normalize(*i):
        s = stat(i)
        y = (load(x, i) - mean[s]) * inv[s] * load(ins[1], bcast(ins[1].shape, i))
        if len(ins) == 3:
            y = y + load(ins[2], bcast(ins[2].shape, i))
        return store(y, x.dtype)

    y = compute_named(x.shape, names, normalize, "layer_norm")
    if attrs["num_outputs"] == 1:
        return y
    stats_dtype = out_type.fields[1].dtype
    outs = [compute_named(stat_shape, names, lambda *i, t=t: store(t[i], stats_dtype), nm)
            for t, nm in ((mean, "layer_norm_mean_out"), (inv, "layer_norm_inv_std_out"))]
    return (y, *outs)
