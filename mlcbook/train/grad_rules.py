"""Gradient rules of the elementwise, broadcasting, reduction, matrix and data-movement ops,
each written in graph ops. A rule gets the forward call ``c`` (its inputs are ``c.args``;
``c`` itself is the output value) and ``g``, the gradient of the loss with respect to ``c``;
it returns one gradient per input, None where there is none (an integer index, a mask).

    >>> @register_gradient("transpose")
    ... def _transpose(c, g):             # moved back by the inverse permutation
    ...     return (call("transpose", g, perm=tuple(np.argsort(c.attrs["perm"]))),)

Importing this module registers the rules.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import NoGradientError
from ..graph.expr import Call, Constant, Expr, TupleGetItem
from ..ops.reduce import reduce_axes
from ..ops.transform import slice_ranges
from .autodiff import register_gradient
from .graph_math import (as_float, broadcast_to, call, concat, pad_axis, reshape, scalar,
                         scatter_strided, unbroadcast)


def _k(value: float, like: Expr) -> Constant:
    return scalar(value, like.dtype)


def _mul(a, b):
    return call("mul", a, b)


# --- unary (the declared unary ops carry their derivative: mlcbook.ops.unary) ---------------
@register_gradient("cast")
def _cast(c, g):
    x = c.args[0]
    if not x.dtype.startswith("float"):
        return (None,)
    return (call("cast", g, dtype=x.dtype),)


# --- binary (the declared broadcasting ops carry their derivatives: mlcbook.ops.elementwise) -
@register_gradient("pow")
def _pow(c, g):
    x, y = c.args
    yx = y if y.dtype == x.dtype else call("cast", y, dtype=x.dtype)
    gx = _mul(g, _mul(yx, call("pow", x, call("sub", yx, _k(1, yx)))))
    gy = None
    if y.dtype.startswith("float"):
        gy = _mul(g, _mul(c, call("log", x)))
    return (unbroadcast(gx, x.shape), None if gy is None else unbroadcast(gy, y.shape))


# --- reductions ----------------------------------------------------------------------------
def _kept(c: Call, g: Expr) -> tuple[Expr, tuple[int, ...]]:
    """``g`` reshaped with the reduced axes kept as size 1, and the reduced axes."""
    x = c.args[0]
    axes = reduce_axes(c.op, x.type.ndim, c.attrs.get("axes"))
    keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return reshape(g, keep), axes


@register_gradient("sum")
def _sum(c, g):
    gk, _ = _kept(c, g)
    return (broadcast_to(gk, c.args[0].shape),)


@register_gradient("mean")
def _mean(c, g):
    x = c.args[0]
    gk, axes = _kept(c, g)
    count = math.prod(x.shape[a] for a in axes)
    return (broadcast_to(_mul(gk, _k(1 / max(count, 1), g)), x.shape),)


def _extremum(c, g):
    x = c.args[0]
    gk, axes = _kept(c, g)
    yk, _ = _kept(c, c)
    hit = as_float(call("equal", x, yk), x.dtype)      # ties share the gradient
    share = call("div", hit, call("sum", hit, axes=axes, keepdims=1))
    return (_mul(share, gk),)


register_gradient("max")(_extremum)
register_gradient("min")(_extremum)


@register_gradient("prod")
def _prod(c, g):
    # d prod / d x_i is the product of the others: y / x_i where nothing is zero; at the one
    # zero of a line, the product of its nonzeros; 0 where a line has two zeros
    x = c.args[0]
    gk, axes = _kept(c, g)
    zero = call("equal", x, _k(0, x))
    zeros = call("sum", as_float(zero, x.dtype), axes=axes, keepdims=1)
    rest = call("prod", call("where", zero, _k(1, x), x), axes=axes, keepdims=1)
    others = call("where", call("equal", zeros, _k(0, x)), call("div", rest, x),
                  call("where", call("logical_and", zero, call("equal", zeros, _k(1, x))),
                       broadcast_to(rest, x.shape), _k(0, x)))
    return (_mul(others, gk),)


# --- running sums and products ---------------------------------------------------------------
@register_gradient("cumsum")
def _cumsum(c, g):
    # x_i is in the sums of the outputs on the other side of it, so its gradient is the
    # running sum of g in the other direction (exclusive when the forward one was)
    a = c.attrs
    return (call("cumsum", g, axis=a["axis"], exclusive=a["exclusive"],
                 reverse=1 - a["reverse"]),)


@register_gradient("cumprod")
def _cumprod(c, g):
    """d y_j / d x_i is the product of the other terms of y_j: a running product of x with
    x_i replaced by 1, for every i at once (an n x n array per lane along the axis, n the
    axis length), so that a zero term gives its exact gradient where dividing y_j by x_i
    could not."""
    x, a = c.args[0], c.attrs
    nd = x.type.ndim
    axis = a["axis"] % nd
    n = x.shape[axis]
    rest = (1,) * (nd - axis - 1)
    i, j = np.arange(n).reshape(n, 1), np.arange(n).reshape(1, n)
    eye = Constant((i == j).reshape((n, n) + rest))
    # M[i, j]: whether x_i is a term of y_j
    cmp = {(0, 0): i <= j, (1, 0): i < j, (0, 1): i >= j, (1, 1): i > j}
    member = Constant(cmp[a["exclusive"], a["reverse"]].astype(x.dtype).reshape((n, n) + rest))
    lane = x.shape[:axis] + (1,) + x.shape[axis:]
    others = call("where", eye, _k(1, x), reshape(x, lane))      # [.., i, k, ..]
    prods = call("cumprod", others, axis=axis + 1, exclusive=a["exclusive"],
                 reverse=a["reverse"])
    terms = _mul(_mul(prods, member), reshape(g, lane))
    return (call("sum", terms, axes=(axis + 1,), keepdims=0),)


# --- matrix products -----------------------------------------------------------------------
def _swap_last(x: Expr) -> Expr:
    nd = x.type.ndim
    perm = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return call("transpose", x, perm=perm)


def _t(x: Expr) -> Expr:
    return call("transpose", x, perm=(1, 0))


@register_gradient("matmul")
def _matmul(c, g):
    a, b = c.args
    a2 = reshape(a, (1,) + a.shape) if a.type.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.type.ndim == 1 else b
    out = c.shape
    out = out[:-1] + (1,) + out[-1:] if a.type.ndim == 1 and b.type.ndim > 1 else out
    out = out + (1,) if b.type.ndim == 1 else out
    out = (1,) + out if a.type.ndim == 1 and b.type.ndim == 1 else out
    g2 = reshape(g, out)
    ga = unbroadcast(call("matmul", g2, _swap_last(b2)), a2.shape)
    gb = unbroadcast(call("matmul", _swap_last(a2), g2), b2.shape)
    return reshape(ga, a.shape), reshape(gb, b.shape)


@register_gradient("gemm")
def _gemm(c, g):
    a, b = c.args[:2]
    ta, tb, alpha = c.attrs["trans_a"], c.attrs["trans_b"], c.attrs["alpha"]
    if c.attrs["b_panel"]:
        raise NoGradientError(
            f"grad: gemm {c.name!r} reads B packed in panels (b_panel), an inference-only "
            "layout. Instead: take gradients of the model before mb.compile packs it")
    # B operands are transposed by an explicit op, not trans_b=1: mlcbook's gemm kernel
    # reads a transposed B across rows, several times slower than the transpose itself
    if ta:
        ga = call("gemm", _t(b) if tb else b, _t(g), alpha=alpha)
    else:
        ga = call("gemm", g, _t(b) if not tb else b, alpha=alpha)
    if tb:
        gb = call("gemm", g, _t(a) if ta else a, trans_a=1, alpha=alpha)
    else:
        gb = call("gemm", a, g, trans_a=1 - ta, alpha=alpha)
    if len(c.args) == 2:
        return ga, gb
    cg = unbroadcast(g, c.args[2].shape)
    beta = c.attrs["beta"]
    return ga, gb, cg if beta == 1 else _mul(cg, _k(beta, g))


# --- data movement -------------------------------------------------------------------------
def _reshape_back(c, g):
    return (reshape(g, c.args[0].shape),)


for _name in ("reshape", "flatten", "squeeze", "unsqueeze"):
    register_gradient(_name)(_reshape_back)


@register_gradient("expand")
def _expand(c, g):
    return (unbroadcast(g, c.args[0].shape),)


@register_gradient("tile")
def _tile(c, g):
    # out[r0 * s0 + i0, ...] = x[i0, ...]: the gradient as (r0, s0, r1, s1, ...), summed
    # over the repeats
    x = c.args[0]
    split = tuple(d for r, s in zip(c.attrs["repeats"], x.shape) for d in (r, s))
    g = call("sum", reshape(g, split), axes=tuple(range(0, 2 * x.type.ndim, 2)), keepdims=0)
    return (reshape(g, x.shape),)


@register_gradient("trilu")
def _trilu(c, g):
    # the kept triangle passes the gradient, the zeroed one none: the same mask on g
    return (call("trilu", g, **c.attrs),)


@register_gradient("transpose")
def _transpose(c, g):
    nd = c.args[0].type.ndim
    perm = c.attrs.get("perm") or tuple(reversed(range(nd)))
    inverse = tuple(int(i) for i in np.argsort(perm))
    return (call("transpose", g, perm=inverse),)


@register_gradient("concat")
def _concat(c, g):
    axis = c.attrs["axis"] % c.type.ndim
    out, off = [], 0
    for a in c.args:
        n = a.shape[axis]
        out.append(call("slice", g, starts=(off,), ends=(off + n,), axes=(axis,)))
        off += n
    return tuple(out)


@register_gradient("split")
def _split(c, grads):
    parts = [gi if gi is not None else Constant(np.zeros(t.shape, t.dtype))
             for gi, t in zip(grads, c.type.fields)]
    return (concat(parts, axis=c.attrs["axis"]),)


@register_gradient("slice")
def _slice(c, g):
    x = c.args[0]
    ranges = slice_ranges(x.shape, c.attrs["starts"], c.attrs["ends"], c.attrs.get("axes"),
                          c.attrs.get("steps"))
    for axis, (start, step, _n) in enumerate(ranges):
        if (start, step) != (0, 1) or g.shape[axis] != x.shape[axis]:
            g = scatter_strided(g, axis, start, step, x.shape[axis])
    return (g,)


@register_gradient("pad")
def _pad(c, g):
    x = c.args[0]
    if c.attrs["mode"] != "constant":
        raise NoGradientError(
            f"grad: pad {c.name!r} uses mode={c.attrs['mode']!r}; only mode='constant' has a "
            "gradient rule. Instead: pad with zeros, or register a rule for this mode")
    nd = x.type.ndim
    pads = c.attrs["pads"]
    for axis in range(nd):
        g = pad_axis(g, axis, -pads[axis], -pads[nd + axis])
    return (g,)


@register_gradient("gather")
def _gather(c, g):
    data, idx = c.args
    axis = c.attrs["axis"] % data.type.ndim
    n = data.shape[axis]
    flat = reshape(idx, (idx.type.size,))
    flat = call("where", call("less", flat, scalar(0, idx.dtype)),
                call("add", flat, scalar(n, idx.dtype)), flat)
    rows = Constant(np.arange(n, dtype=idx.dtype).reshape(n, 1))
    onehot = as_float(call("equal", rows, reshape(flat, (1, idx.type.size))), data.dtype)
    pre = math.prod(data.shape[:axis])
    post = math.prod(data.shape[axis + 1:])
    g3 = reshape(g, (pre, idx.type.size, post))
    return reshape(call("matmul", onehot, g3), data.shape), None


def _zeros(like: Expr) -> Constant:
    return Constant(np.zeros(like.shape, like.dtype))


@register_gradient("gather_elements")
def _gather_elements(c, g):
    # each read element gets the gradients of every place that read it: a scatter that adds
    data, idx = c.args
    return call("scatter_elements", _zeros(data), idx, g, axis=c.attrs["axis"],
                reduction="add"), None


@register_gradient("gather_nd")
def _gather_nd(c, g):
    data, idx = c.args
    if c.attrs["batch_dims"]:
        raise NoGradientError(
            f"grad: gather_nd {c.name!r} has batch_dims={c.attrs['batch_dims']}; only "
            "batch_dims=0 has a gradient rule. Instead: fold the batch axes into the indices "
            "(batch_dims=0), or register a rule")
    return call("scatter_nd", _zeros(data), idx, g, reduction="add"), None


def _scatter(c, g, gather):
    """The gradients of a scatter (``gather``: its reading counterpart): the updates get what
    flows to the places they wrote; the data what flows to the places not overwritten (all
    of it when the updates add)."""
    data, idx, updates = c.args
    reduction = c.attrs["reduction"]
    attrs = {"axis": c.attrs["axis"]} if "axis" in c.attrs else {}
    if reduction not in ("none", "add"):
        raise NoGradientError(
            f"grad: {c.op} {c.name!r} uses reduction={reduction!r}; only 'none' and 'add' "
            "have a gradient rule. Instead: scatter with one of those, or register a rule")
    d_updates = call(gather, g, idx, **attrs)
    d_data = g if reduction == "add" else call(c.op, g, idx, _zeros(updates),
                                              reduction="none", **attrs)
    return d_data, None, d_updates


@register_gradient("topk")
def _topk(c, g):
    # each of the k values came from one place of its line: its gradient goes back there
    gv = g[0] if isinstance(g, tuple) else g
    x = c.args[0]
    if gv is None:
        return (None,) * len(c.args)
    return (call("scatter_elements", _zeros(x), TupleGetItem(c, 1), gv,
                 axis=c.attrs["axis"] % x.type.ndim, reduction="add"),) \
        + (None,) * (len(c.args) - 1)


@register_gradient("scatter_elements")
def _scatter_elements(c, g):
    return _scatter(c, g, "gather_elements")


@register_gradient("scatter_nd")
def _scatter_nd(c, g):
    return _scatter(c, g, "gather_nd")


__all__: list[str] = []


# --- ops whose value never depends on input values: no gradient flows -------------------------
@register_gradient("shape")
@register_gradient("size")
def _type_only(c, g):
    return (None,)


@register_gradient("constant_of_shape")
@register_gradient("range")
def _no_inputs(c, g):
    return ()
