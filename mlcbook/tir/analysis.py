"""Facts about programs that passes and checks share: integer bounds, free variables, buffer uses.

    >>> i = Var("i")
    >>> int_bounds(i * 4 + 3, {i: (0, 31)})
    (3, 127)
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .expr import (Binary, Buffer, BufferLoad, Call, Cast, Const, PrimExpr, Select, Unary, Var,
                   is_int)
from .functor import Visitor
from .stmt import Block, BlockRealize, BufferStore, For

Interval = Optional[tuple[int, int]]


def int_bounds(e: PrimExpr, ranges: dict) -> Interval:
    """Inclusive ``(lo, hi)`` that integer expression ``e`` can take when each variable in
    ``ranges`` lies within its inclusive interval; ``None`` when it cannot be bounded."""
    if isinstance(e, Const):
        return (int(e.value), int(e.value)) if is_int(e.dtype) else None
    if isinstance(e, Var):
        return ranges.get(e)
    if isinstance(e, Cast):
        return int_bounds(e.value, ranges) if is_int(e.dtype) and is_int(e.value.dtype) else None
    if isinstance(e, Unary) and e.op == "-":
        b = int_bounds(e.a, ranges)
        return None if b is None else (-b[1], -b[0])
    if isinstance(e, Select):
        t, f = int_bounds(e.true_value, ranges), int_bounds(e.false_value, ranges)
        return None if t is None or f is None else (min(t[0], f[0]), max(t[1], f[1]))
    if not isinstance(e, Binary) or not is_int(e.dtype):
        return None
    a, b = int_bounds(e.a, ranges), int_bounds(e.b, ranges)
    if a is None or b is None:
        return None
    op = e.op
    if op == "+":
        return a[0] + b[0], a[1] + b[1]
    if op == "-":
        return a[0] - b[1], a[1] - b[0]
    if op == "*":
        ps = [x * y for x in a for y in b]
        return min(ps), max(ps)
    if op == "min":
        return min(a[0], b[0]), min(a[1], b[1])
    if op == "max":
        return max(a[0], b[0]), max(a[1], b[1])
    if op == "//" and b[0] == b[1] and b[0] != 0:
        c = b[0]
        qs = [a[0] // c, a[1] // c]
        return min(qs), max(qs)
    if op == "%" and b[0] == b[1] and b[0] > 0:
        c = b[0]
        if a[0] >= 0 and a[1] - a[0] < c and a[0] % c <= a[1] % c:
            return a[0] % c, a[1] % c
        return 0, c - 1
    return None


def int_values(e: PrimExpr, env: dict):
    """Values of integer expression ``e`` with each variable bound in ``env`` to an int or a
    numpy integer array (arrays broadcast, so one call evaluates many points); ``x // 0`` and
    ``x % 0`` are 0, as everywhere in the loop IR. Raises ValueError for anything else (a
    variable not in ``env``, a load, a float).

        >>> int_values(i // 4 * 10 + i % 4, {i: np.arange(6)})
        array([ 0,  1,  2,  3, 10, 11])
    """
    if isinstance(e, Var):
        if e not in env:
            raise ValueError(f"{e.name} has no value")
        return env[e]
    if isinstance(e, Const) and is_int(e.dtype):
        return int(e.value)
    if isinstance(e, Unary) and e.op == "-":
        return -int_values(e.a, env)
    if isinstance(e, Cast) and is_int(e.dtype) and is_int(e.value.dtype):
        return int_values(e.value, env)
    if isinstance(e, Binary) and e.op in _INT_OPS:
        a, b = int_values(e.a, env), int_values(e.b, env)
        if e.op in ("//", "%"):
            nonzero = np.not_equal(b, 0)
            return np.where(nonzero, _INT_OPS[e.op](a, np.where(nonzero, b, 1)), 0)
        return _INT_OPS[e.op](a, b)
    raise ValueError(f"cannot evaluate {e}")


_INT_OPS = {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide,
            "%": np.mod, "min": np.minimum, "max": np.maximum}


def expr_key(e: PrimExpr) -> tuple:
    """A hashable key equal for expressions that are the same tree over the same variables."""
    if isinstance(e, Var):
        return ("v", id(e))
    if isinstance(e, Const):
        return ("c", e.dtype, e.value)
    if isinstance(e, Binary):
        return ("b", e.op, expr_key(e.a), expr_key(e.b))
    if isinstance(e, Unary):
        return ("u", e.op, expr_key(e.a))
    if isinstance(e, Cast):
        return ("cast", e.dtype, expr_key(e.value))
    if isinstance(e, Select):
        return ("s", expr_key(e.cond), expr_key(e.true_value), expr_key(e.false_value))
    if isinstance(e, Call):
        return ("call", e.name) + tuple(expr_key(a) for a in e.args)
    if isinstance(e, BufferLoad):
        return ("ld", id(e.buffer)) + tuple(expr_key(i) for i in e.indices)
    return ("id", id(e))


def loop_ranges(loops) -> dict:
    """``{loop_var: (0, extent-1)}`` for loops with constant extents."""
    out = {}
    for lp in loops:
        if isinstance(lp.extent, Const):
            out[lp.loop_var] = (0, lp.extent.value - 1)
    return out


def free_vars(node) -> list[Var]:
    """Variables used in ``node`` but not defined inside it, in order of first use."""
    defined: set[int] = set()
    seen: dict[int, Var] = {}

    class _V(Visitor):
        def visit_For(self, n: For):
            defined.add(id(n.loop_var))
            self.visit(n.extent)
            self.visit(n.body)

        def visit_Block(self, n: Block):
            for iv in n.iter_vars:
                defined.add(id(iv.var))
            self.generic_visit(n)

        def visit_Var(self, n: Var):
            if id(n) not in defined:
                seen.setdefault(id(n), n)

    _V().visit(node)
    return [v for k, v in seen.items() if k not in defined]


def buffers_read(node) -> list[Buffer]:
    """Buffers loaded anywhere in ``node``, in order of first load."""
    out: dict[int, Buffer] = {}

    class _V(Visitor):
        def visit_BufferLoad(self, n: BufferLoad):
            out.setdefault(id(n.buffer), n.buffer)
            self.generic_visit(n)

    _V().visit(node)
    return list(out.values())


def buffers_written(node) -> list[Buffer]:
    """Buffers stored to anywhere in ``node``, in order of first store."""
    out: dict[int, Buffer] = {}

    class _V(Visitor):
        def visit_BufferStore(self, n: BufferStore):
            out.setdefault(id(n.buffer), n.buffer)
            self.generic_visit(n)

    _V().visit(node)
    return list(out.values())


def collect_blocks(node) -> list[BlockRealize]:
    """Every BlockRealize under ``node`` in program order (the root block included)."""
    out: list[BlockRealize] = []

    class _V(Visitor):
        def visit_BlockRealize(self, n: BlockRealize):
            out.append(n)
            self.generic_visit(n)

    _V().visit(node)
    return out
