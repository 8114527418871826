"""Arithmetic simplification of loop IR: constant folding, identities, and index algebra.

    >>> i, j = Var("i"), Var("j")
    >>> str(simplify((i * 8 + j) // 8, {j: (0, 7)}))
    'i'
    >>> str(simplify((i * 8 + j) % 8, {j: (0, 7)}))
    'j'

Integer expressions are put in a *linear form* (:class:`~mlcbook.tir.arith.Linear`: a sum
of ``coefficient * atom`` plus a constant, where an atom is anything that is not ``+``,
``-`` or multiplication by a constant), so that ``i*4 + j - i*4`` cancels to ``j``. Floor
division and modulo by a positive constant ``c`` split the linear form into the part that
is a multiple of ``c`` and the rest ``r``: ``(q*c + r) // c == q + r // c`` holds for floor division whatever
``r`` is, and when the bounds of the variables (``ranges``, inclusive ``(lo, hi)`` per
variable, plus the extents of the loops and blocks around a statement) prove
``0 <= r < c``, ``r // c`` is 0 and ``(q*c + r) % c`` is ``r``.

An integer divisor of 0 folds to 0 (``x // 0 == x % 0 == 0``, the rule of
:class:`~mlcbook.tir.expr.Binary` that the interpreter and compiled code follow too), and a
constant quotient that does not fit its dtype (``INT_MIN // -1``) is left unfolded.

Float arithmetic is only folded when exact: ``x * 1.0``, ``x / 1.0`` and ``x - 0.0`` go,
but ``x + 0.0`` stays (it turns -0.0 into +0.0) and ``x * 0.0`` stays (NaN, inf).
"""

from __future__ import annotations

import math
from math import gcd
from typing import Optional

import numpy as np

from .arith import Linear, expr_key, int_bounds, linear
from .expr import (Binary, Call, Cast, Const, PrimExpr, Select, Unary, Var, int_range,
                   is_float, is_int)
from .function import PrimFunc
from .scalar import MATH_IMPL
from .functor import Mutator
from .stmt import Block, Evaluate, For, IfThenElse, no_op


def simplify(node, ranges: Optional[dict] = None):
    """Simplify an expression, a statement or a PrimFunc; returns a new node (or the same).

    ``ranges`` maps variables to inclusive integer bounds ``(lo, hi)``; inside statements
    the extents of enclosing loops and of block iteration variables are added on the way.
    """
    s = _Simplifier(ranges)
    if isinstance(node, PrimFunc):
        return node.with_body(s.visit(node.body))
    return s.visit(node)


def simplify_assuming(node, cond: PrimExpr, ranges: Optional[dict] = None):
    """``node`` simplified for where ``cond`` holds: each conjunct of ``cond`` that bounds one
    integer variable (``i - 1 >= 0``, ``i < 57``) narrows that variable's range, so that the
    clamps it makes redundant go. Only for a value used nowhere else (the taken branch of a
    select evaluated lazily), since elsewhere the clamp may be what keeps an index in bounds.

        >>> i = Var("i")
        >>> clamped = mb.tir.max(mb.tir.min(i - 1, 55), 0)
        >>> str(simplify_assuming(clamped, (i - 1 >= 0) & (i - 1 < 56)))
        'i - 1'
    """
    node = _ClampsHeld(conjuncts(cond)).visit(node)
    bounds = dict(ranges or {})
    for part in conjuncts(cond):
        v, lo, hi = var_bound(part)
        if v is not None:
            old_lo, old_hi = bounds.get(v, (None, None))
            lo = lo if old_lo is None else old_lo if lo is None else max(lo, old_lo)
            hi = hi if old_hi is None else old_hi if hi is None else min(hi, old_hi)
            bounds[v] = (lo, hi)
    known = {v: b for v, b in bounds.items() if None not in b}
    return simplify(node, known) if known else node


def _nonneg_form(cond: PrimExpr):
    """``cond`` as ``f >= 0`` for a linear form ``f``, or None."""
    if not (isinstance(cond, Binary) and is_int(cond.a.dtype)):
        return None
    a, b = linear(cond.a), linear(cond.b)
    return {">=": lambda: a - b, ">": lambda: a - b - 1, "<=": lambda: b - a,
            "<": lambda: b - a - 1}.get(cond.op, lambda: None)()


def _same_terms(f, g) -> bool:
    return f.terms.keys() == g.terms.keys() and all(
        f.terms[k][0] == g.terms[k][0] for k in f.terms)


class _ClampsHeld(Mutator):
    """Integer ``min``/``max`` that facts of the form ``f >= 0`` decide, gone: under
    ``2*x + r - 1 >= 0``, ``max(2*x + r - 1, 0)`` is ``2*x + r - 1``, although neither ``x``
    nor ``r`` alone is bounded (a strided pool's padded read)."""

    def __init__(self, facts):
        self.facts = [f for f in map(_nonneg_form, facts) if f is not None]

    def _nonneg(self, f) -> bool:
        return any(_same_terms(f, g) and f.const >= g.const for g in self.facts)

    def visit_Binary(self, e: Binary):
        e = self.generic_visit(e)
        if e.op not in ("min", "max") or not is_int(e.dtype) or not self.facts:
            return e
        d = linear(e.a) - linear(e.b)
        if self._nonneg(d):            # a >= b
            return e.a if e.op == "max" else e.b
        if self._nonneg(linear(e.b) - linear(e.a)):
            return e.b if e.op == "max" else e.a
        return e


def conjuncts(cond: PrimExpr) -> list:
    """The operands of a chain of ``and``: ``conjuncts(a & (b & c)) == [a, b, c]``."""
    if isinstance(cond, Binary) and cond.op == "and":
        return conjuncts(cond.a) + conjuncts(cond.b)
    return [cond]


def var_bound(cond: PrimExpr) -> tuple:
    """``(v, lo, hi)`` when ``cond`` is a comparison of ``±v + c`` with a constant (either
    bound None if it says nothing of it), else ``(None, None, None)``."""
    flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
    if not (isinstance(cond, Binary) and cond.op in flip and is_int(cond.a.dtype)):
        return None, None, None
    d = linear(cond.a) - linear(cond.b)          # cond is: d op 0
    if len(d.terms) != 1:
        return None, None, None
    (coef, v), = d.terms.values()
    if not isinstance(v, Var) or coef not in (1, -1):
        return None, None, None
    op = cond.op if coef == 1 else flip[cond.op]
    c = -d.const * coef                           # v op c
    return {"<": (v, None, c - 1), "<=": (v, None, c),
            ">": (v, c + 1, None), ">=": (v, c, None)}[op]


def _fits(value: int, dtype: str) -> bool:
    lo, hi = int_range(dtype)
    return lo <= value <= hi


# bfloat16 arithmetic happens in float32 (rounded on store), so constants fold in float32
_NP = {"float16": np.float16, "bfloat16": np.float32, "float32": np.float32, "float64": np.float64}


def _float_const(value: float, dtype: str) -> Const:
    return Const(float(_NP[dtype](value)), dtype)


# --- the simplifier ------------------------------------------------------------------------------
class _Simplifier(Mutator):
    def __init__(self, ranges: Optional[dict]):
        self.ranges: dict = dict(ranges or {})

    # statements: learn the ranges of loop and block variables on the way down
    def visit_For(self, s: For):
        extent = self.visit(s.extent)
        b = int_bounds(extent, self.ranges)
        if b is not None:
            self.ranges[s.loop_var] = (0, max(b[1] - 1, 0))
        body = self.visit(s.body)
        if extent is s.extent and body is s.body:
            return s
        return For(s.loop_var, extent, body, s.kind, s.annotations)

    def visit_Block(self, s: Block):
        for iv in s.iter_vars:
            b = int_bounds(iv.extent, self.ranges)
            if b is not None:
                self.ranges[iv.var] = (0, max(b[1] - 1, 0))
        return self.generic_visit(s)

    def visit_IterVar(self, iv):
        return iv  # the variable is a definition, not a use; keep it a Var

    def visit_IfThenElse(self, s: IfThenElse):
        cond = self.visit(s.cond)
        if isinstance(cond, Const):
            if cond.value:
                return self.visit(s.then_case)
            return self.visit(s.else_case) if s.else_case is not None else no_op()
        then_case = self.visit(s.then_case)
        else_case = self.visit(s.else_case) if s.else_case is not None else None
        if isinstance(else_case, Evaluate):
            else_case = None
        if cond is s.cond and then_case is s.then_case and else_case is s.else_case:
            return s
        return IfThenElse(cond, then_case, else_case)

    # expressions
    def visit_Var(self, e: Var):
        b = self.ranges.get(e)
        if b is not None and b[0] == b[1] and is_int(e.dtype):
            return Const(b[0], e.dtype)
        return e

    def visit_Binary(self, e: Binary):
        a, b = self.visit(e.a), self.visit(e.b)
        out = self._binary(e.op, a, b)
        if out is None:
            return e if (a is e.a and b is e.b) else Binary(e.op, a, b)
        return out

    def visit_Unary(self, e: Unary):
        a = self.visit(e.a)
        if e.op == "not":
            if isinstance(a, Const):
                return Const(not a.value, "bool")
            if isinstance(a, Unary) and a.op == "not":
                return a.a
            return e if a is e.a else Unary("not", a)
        if e.dtype in ("int32", "int64"):
            return linear(a).scale(-1).to_expr()
        if is_int(e.dtype):  # narrow and unsigned types wrap: leave their negation alone
            return e if a is e.a else Unary("-", a)
        if isinstance(a, Const):
            return _float_const(-a.value, e.dtype)
        if isinstance(a, Unary) and a.op == "-":
            return a.a
        return e if a is e.a else Unary("-", a)

    def visit_Cast(self, e: Cast):
        v = self.visit(e.value)
        if v.dtype == e.dtype:
            return v
        if isinstance(v, Const):
            folded = _fold_cast(v, e.dtype)
            if folded is not None:
                return folded
        return e if v is e.value else Cast(e.dtype, v)

    def visit_Select(self, e: Select):
        cond = self.visit(e.cond)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        if isinstance(cond, Const):
            return t if cond.value else f
        if expr_key(t) == expr_key(f):
            return t
        if cond is e.cond and t is e.true_value and f is e.false_value:
            return e
        return Select(cond, t, f)

    def visit_Call(self, e: Call):
        args = tuple(self.visit(a) for a in e.args)
        if all(isinstance(a, Const) for a in args):
            folded = _fold_call(e.name, args, e.dtype)
            if folded is not None:
                return folded
        if all(x is y for x, y in zip(args, e.args)):
            return e
        return Call(e.name, args)

    # --- binary rules -----------------------------------------------------------------------
    def _binary(self, op: str, a: PrimExpr, b: PrimExpr) -> Optional[PrimExpr]:
        dt = a.dtype
        if op in ("and", "or"):
            return _logic(op, a, b)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return self._compare(op, a, b)
        if is_int(dt):
            return self._int_arith(op, a, b)
        if is_float(dt):
            return _float_arith(op, a, b)
        return None

    def _int_arith(self, op, a, b) -> Optional[PrimExpr]:
        dt = a.dtype
        if op in ("//", "%") and isinstance(b, Const) and b.value == 0:
            return Const(0, dt)
        if dt not in ("int32", "int64"):
            # narrow and unsigned types wrap; fold constants only
            if isinstance(a, Const) and isinstance(b, Const) and op in _INT_FOLD:
                r = _INT_FOLD[op](a.value, b.value)
                return Const(r, dt) if _fits(r, dt) else None
            return None
        if op in ("+", "-", "*"):
            la, lb = linear(a), linear(b)
            if op == "+":
                lin = la + lb
            elif op == "-":
                lin = la - lb
            elif not lb.terms:
                lin = la.scale(lb.const)
            elif not la.terms:
                lin = lb.scale(la.const)
            else:
                return None
            if not all(_fits(c, dt) for c, _ in lin.terms.values()) or not _fits(lin.const, dt):
                return None
            return lin.to_expr()
        if op in ("min", "max"):
            if isinstance(a, Const) and isinstance(b, Const):
                return Const((min if op == "min" else max)(a.value, b.value), dt)
            d = (linear(a) - linear(b)).bounds(self.ranges)
            if d is not None:
                if d[1] <= 0:
                    return a if op == "min" else b
                if d[0] >= 0:
                    return b if op == "min" else a
            return None
        if op in ("//", "%") and isinstance(b, Const):
            c = b.value
            if isinstance(a, Const):
                r = a.value // c if op == "//" else a.value % c
                return Const(r, dt) if _fits(r, dt) else None
            if c == 1:
                return a if op == "//" else Const(0, dt)
            if c > 0:
                return self._floordiv(a, c) if op == "//" else self._floormod(a, c)
        return None

    def _floordiv(self, a: PrimExpr, c: int) -> PrimExpr:
        if isinstance(a, Binary) and a.op == "//" and isinstance(a.b, Const) and a.b.value > 0:
            return self._floordiv(a.a, a.b.value * c)   # (x // c1) // c2 == x // (c1*c2)
        q, r = linear(a).split(c)
        rest = self._div_rest(r, c, "//")
        return (q + linear(rest)).to_expr() if q.terms or q.const else rest

    def _floormod(self, a: PrimExpr, c: int) -> PrimExpr:
        if isinstance(a, Binary) and a.op == "%" and isinstance(a.b, Const) \
                and a.b.value > 0 and a.b.value % c == 0:
            a = a.a                                       # (x % (k*c)) % c == x % c
        _, r = linear(a).split(c)
        return self._div_rest(r, c, "%")

    def _div_rest(self, r: Linear, c: int, op: str) -> PrimExpr:
        """``r // c`` or ``r % c`` for the non-multiple rest ``r`` of a split."""
        dt = r.dtype
        b = r.bounds(self.ranges)
        if b is not None and b[0] // c == b[1] // c:
            k = b[0] // c                                 # r lies in [k*c, (k+1)*c)
            if op == "//":
                return Const(k, dt)
            return (r - k * c).to_expr()
        g = gcd(r.common_factor(), c)
        if g > 1:
            # floor(g*r' / c) == floor(r' / (c/g)); (g*r') % c == g * (r' % (c/g))
            inner = r.split(g)[0].to_expr()
            if op == "//":
                return self._floordiv(inner, c // g)
            return linear(self._floormod(inner, c // g)).scale(g).to_expr()
        return Binary(op, r.to_expr(), Const(c, dt))

    def _compare(self, op, a, b) -> Optional[PrimExpr]:
        if isinstance(a, Const) and isinstance(b, Const):
            return Const(_CMP[op](a.value, b.value), "bool")
        if not is_int(a.dtype):
            return None
        d = (linear(a) - linear(b)).bounds(self.ranges)
        if d is None:
            return None
        lo, hi = d
        truth = {"<": (hi < 0, lo >= 0), "<=": (hi <= 0, lo > 0),
                 ">": (lo > 0, hi <= 0), ">=": (lo >= 0, hi < 0),
                 "==": (lo == hi == 0, lo > 0 or hi < 0),
                 "!=": (lo > 0 or hi < 0, lo == hi == 0)}[op]
        if truth[0]:
            return Const(True, "bool")
        if truth[1]:
            return Const(False, "bool")
        return None

_INT_FOLD = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
             "//": lambda x, y: x // y, "%": lambda x, y: x % y, "min": min, "max": max}

_CMP = {"==": lambda x, y: x == y, "!=": lambda x, y: x != y, "<": lambda x, y: x < y,
        "<=": lambda x, y: x <= y, ">": lambda x, y: x > y, ">=": lambda x, y: x >= y}


def _logic(op: str, a: PrimExpr, b: PrimExpr) -> Optional[PrimExpr]:
    for x, y in ((a, b), (b, a)):
        if isinstance(x, Const):
            if op == "and":
                return y if x.value else Const(False, "bool")
            return Const(True, "bool") if x.value else y
    return None


def _float_arith(op: str, a: PrimExpr, b: PrimExpr) -> Optional[PrimExpr]:
    dt = a.dtype
    if isinstance(a, Const) and isinstance(b, Const):
        x, y = _NP[dt](a.value), _NP[dt](b.value)
        with np.errstate(all="ignore"):
            r = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                 "/": lambda: x / y, "min": lambda: np.minimum(x, y),
                 "max": lambda: np.maximum(x, y)}[op]()
        return _float_const(r, dt)
    if isinstance(b, Const):
        if (op in ("*", "/") and b.value == 1.0) or (op == "-" and b.value == 0.0):
            return a
    if isinstance(a, Const) and op == "*" and a.value == 1.0:
        return b
    return None


def _fold_cast(v: Const, dtype: str) -> Optional[Const]:
    if dtype == "bool":
        return Const(bool(v.value), "bool")
    if is_float(dtype):
        return _float_const(float(v.value), dtype)
    value = v.value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)  # truncation toward zero, as the cast does
    value = int(value)
    return Const(value, dtype) if _fits(value, dtype) else None


def _fold_call(name: str, args: tuple, dtype: str) -> Optional[Const]:
    r = MATH_IMPL[name](*(a.value for a in args))
    if isinstance(r, float) and not math.isfinite(r):
        return None   # kept as a call: the code states what overflowed or left the domain
    if is_int(dtype):
        return Const(int(r), dtype) if _fits(int(r), dtype) else None
    return _float_const(r, dtype)
