"""The gradient rule of ``grid_sample``, in graph ops: the op written out as gathers of
``x`` weighted by the taps of each grid point, differentiated by
:func:`~mlcbook.train.autodiff.backward`.

The sampling helpers of :mod:`mlcbook.te.ops.grid_sample` (coordinates, padding modes,
taps) are written once for any math ``m`` (loop-IR expressions in the op's compute); here
they run on :class:`_Dual` values: a graph expression of the grid that is differentiated
beside the same expression of a copy of the grid that is not. Floor, rounding, comparisons and
indices read the copy, so they pass no gradient (their derivative is 0 almost
everywhere), while a tap's weight keeps its derivative in the grid:

    >>> dx, dgrid = gradient_rule("grid_sample")(call, g)

Importing this module registers the rule.
"""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np

from ..graph.expr import Constant, Expr, Var
from ..te.ops.grid_sample import source_coordinate, tap_index, taps
from .autodiff import backward, register_gradient
from .graph_math import Bind, call, reshape, scalar


class _Dual:
    """``live`` (differentiated) and ``fixed`` (the same value, not differentiated)."""

    def __init__(self, live: Expr, fixed: Expr):
        self.live, self.fixed = live, fixed

    def _pair(self, other):
        if isinstance(other, _Dual):
            return other
        c = scalar(float(other), self.fixed.dtype)
        return _Dual(c, c)

    def _apply(self, op: str, other, swap: bool = False) -> "_Dual":
        a, b = (self._pair(other), self) if swap else (self, self._pair(other))
        return _Dual(call(op, a.live, b.live), call(op, a.fixed, b.fixed))

    def __add__(self, o):
        return self._apply("add", o)

    def __radd__(self, o):
        return self._apply("add", o, True)

    def __sub__(self, o):
        return self._apply("sub", o)

    def __rsub__(self, o):
        return self._apply("sub", o, True)

    def __mul__(self, o):
        return self._apply("mul", o)

    def __rmul__(self, o):
        return self._apply("mul", o, True)

    def _test(self, op: str, o) -> "_Dual":
        v = call(op, self.fixed, self._pair(o).fixed)
        return _Dual(v, v)

    def __ge__(self, o):
        return self._test("greater_equal", o)

    def __lt__(self, o):
        return self._test("less", o)

    def __and__(self, o):
        return self._test("logical_and", o)


def _fixed(op: str):
    def f(v: _Dual) -> _Dual:
        out = call(op, v.fixed)
        return _Dual(out, out)
    return f


def _both(op: str):
    def f(a: _Dual, b) -> _Dual:
        return a._apply(op, b)
    return f


#: the math the sampling helpers ask for, on dual values (``trunc`` gives an int64 index)
DUAL_MATH = SimpleNamespace(
    floor=_fixed("floor"), rint=_fixed("round"),
    abs=lambda v: _Dual(call("abs", v.live), call("abs", v.fixed)),
    minimum=_both("minimum"), maximum=_both("maximum"),
    trunc=lambda v: call("cast", v.fixed, dtype="int64"))


def sample(x: Expr, grid: _Dual, attrs) -> Expr:
    """``grid_sample(x, grid)`` in graph ops (its compute, step by step): for each
    combination of taps, ``x`` gathered at the taps' flat index times their weights."""
    mode, padding, align = attrs["mode"], attrs["padding_mode"], bool(attrs["align_corners"])
    n, ch, sizes = x.shape[0], x.shape[1], x.shape[2:]
    r, out = len(sizes), grid.fixed.shape[1:-1]
    points = math.prod(out)
    per_axis = []
    for a in range(r):
        k = r - 1 - a                             # the grid's last axis is (x, y[, z])
        coordinate = _Dual(*(reshape(call("slice", g, starts=(k,), ends=(k + 1,), axes=(-1,)),
                                     (n, points)) for g in (grid.live, grid.fixed)))
        c = source_coordinate(coordinate, sizes[a], mode, padding, align, DUAL_MATH)
        per_axis.append([(tap_index(p, sizes[a], padding, align, DUAL_MATH), w)
                         for p, w in taps(c, mode, DUAL_MATH)])
    flat_x = reshape(x, (n, ch, math.prod(sizes)))
    total = None
    for combo in itertools.product(*per_axis):
        flat = None
        for a, ((index, _), _) in enumerate(combo):
            clamped = call("clip", index, min=0, max=sizes[a] - 1)
            term = call("mul", clamped, Constant(np.asarray(math.prod(sizes[a + 1:]),
                                                            np.int64)))
            flat = term if flat is None else call("add", flat, term)
        at = call("expand", reshape(flat, (n, 1, points)), shape=(n, ch, points))
        factors = [call("cast", inside.fixed, dtype=x.dtype) for (_, inside), _ in combo
                   if inside is not None]
        factors += [_cast(w.live, x.dtype) for _, w in combo if w is not None]
        weight = None
        for f in factors:
            weight = f if weight is None else call("mul", weight, f)
        v = call("gather_elements", flat_x, at, axis=2)
        if weight is not None:
            v = call("mul", v, reshape(weight, (n, 1, points)))
        total = v if total is None else call("add", total, v)
    return reshape(total, (n, ch) + tuple(out))


def _cast(v: Expr, dtype: str) -> Expr:
    return v if v.dtype == dtype else call("cast", v, dtype=dtype)


@register_gradient("grid_sample")
def _grid_sample(c, g):
    """``dx`` and ``dgrid``: :func:`sample` on stand-ins for ``x``, the grid and its
    undifferentiated copy, differentiated against ``sum(y * g)``."""
    x, grid = c.args
    xs, gs = Var("grid_sample.x", x.type), Var("grid_sample.grid", grid.type)
    fixed, gv = Var("grid_sample.grid_fixed", grid.type), Var("grid_sample.g", g.type)
    y = sample(xs, _Dual(gs, fixed), c.attrs)
    loss = call("sum", call("mul", y, gv), keepdims=0)
    bind = Bind({id(xs): x, id(gs): grid, id(fixed): grid, id(gv): g})
    return tuple(bind.visit(e) for e in backward(loss, [xs, gs]))


__all__ = ["sample", "DUAL_MATH"]
