"""Integer arithmetic of the loop IR: bounds, values, linear forms and affine regions.

Every pass that reasons about indices goes through this module: the simplifier, the
compaction of allocations, the vectorize lane rule, the schedule's region checks and code
generation.

    >>> i, j = Var("i"), Var("j")
    >>> int_bounds(i * 4 + 3, {i: (0, 31)})
    (3, 127)
    >>> f = linear(i * 8 + j - i * 8 + 3)     # i cancels
    >>> str(f.to_expr()), f.bounds({j: (0, 7)})
    ('j + 3', (3, 10))

A :class:`Linear` form is ``const + sum(coef * atom)``, where an *atom* is any integer
expression that is not a sum, a difference, a negation or a product with a constant
(``i``, ``f // 32``, ``x * y``, a load). Equal atoms (by :func:`expr_key`) share one term,
so ``i*4 + j - i*4`` cancels to ``j``. An *affine* form is a linear one whose atoms are all
variables; :func:`affine` can stand a fresh variable (:class:`Atoms`) for a non-affine
piece such as ``f // 32``, so that the same piece in two regions compares equal. The
schedule bounds what a loop touches with :func:`relax`: the loops inside take every value
of their ranges, the loops outside stay symbolic (``i0*32`` to ``i0*32 + 31``).
"""

from __future__ import annotations

from math import gcd
from typing import Callable, Iterable, Optional

import numpy as np

from .expr import (Binary, BufferLoad, Call, Cast, Const, PrimExpr, Select, Unary, Var,
                   int_range, is_int)
from .functor import post_order_visit

__all__ = ["expr_key", "int_bounds", "int_values", "Linear", "linear", "Atoms", "affine",
           "relax", "union", "provably_le"]

Interval = Optional[tuple[int, int]]


def expr_key(e: PrimExpr) -> tuple:
    """A hashable key equal for expressions that are the same tree over the same variables."""
    if isinstance(e, Var):
        return ("v", id(e))
    if isinstance(e, Const):
        return ("c", e.dtype, e.value if e.value == e.value else "nan")  # NaN is one constant
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


# --- bounds and values -------------------------------------------------------------------------
def int_bounds(e: PrimExpr, ranges: dict) -> Interval:
    """Inclusive ``(lo, hi)`` that integer expression ``e`` can take when each variable in
    ``ranges`` lies within its inclusive interval; ``None`` when it cannot be bounded."""
    if isinstance(e, Const):
        return (int(e.value), int(e.value)) if is_int(e.dtype) else None
    if isinstance(e, Var):
        return ranges.get(e)
    if isinstance(e, Cast):
        if not (is_int(e.dtype) and is_int(e.value.dtype)):
            return None
        b, (lo, hi) = int_bounds(e.value, ranges), int_range(e.dtype)
        # a value outside the target type wraps (-1 -> 4294967295 for uint32)
        return b if b is not None and lo <= b[0] and b[1] <= hi else (lo, hi)
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


# --- linear forms ------------------------------------------------------------------------------
class Linear:
    """``const + sum(coef * atom)`` over the integer dtype ``dtype`` (see the module docstring).

        >>> f = Linear([(32, i0), (1, j)], const=4)
        >>> str(f.to_expr()), str((f - 4).scale(2).to_expr())
        ('i0 * 32 + j + 4', 'i0 * 64 + j * 2')

    Forms are values: every operation returns a new form. ``terms`` maps the
    :func:`expr_key` of each atom to ``(coef, atom)``, in the order the atoms first appeared,
    and never holds a zero coefficient.
    """

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, terms: Iterable[tuple[int, PrimExpr]] = (), const: int = 0,
                 dtype: str = "int32"):
        self.terms: dict = {}
        self.const = const
        self.dtype = dtype
        for coef, atom in terms:
            self._accumulate(expr_key(atom), coef, atom)

    @classmethod
    def _of(cls, dtype: str, terms: dict, const: int) -> "Linear":
        out = cls.__new__(cls)
        out.terms, out.const, out.dtype = terms, const, dtype
        return out

    def _accumulate(self, key, coef: int, atom: PrimExpr) -> None:
        old = self.terms.get(key)
        total = coef if old is None else old[0] + coef
        if total:
            self.terms[key] = (total, atom if old is None else old[1])
        elif old is not None:
            del self.terms[key]

    def __add__(self, other) -> "Linear":
        if not isinstance(other, Linear):
            return Linear._of(self.dtype, dict(self.terms), self.const + other)
        out = Linear._of(self.dtype, dict(self.terms), self.const + other.const)
        for key, (coef, atom) in other.terms.items():
            out._accumulate(key, coef, atom)
        return out

    def __sub__(self, other) -> "Linear":
        return self + (other.scale(-1) if isinstance(other, Linear) else -other)

    def scale(self, k: int) -> "Linear":
        if k == 0:
            return Linear._of(self.dtype, {}, 0)
        return Linear._of(self.dtype, {key: (c * k, a) for key, (c, a) in self.terms.items()},
                          self.const * k)

    def split(self, c: int) -> tuple["Linear", "Linear"]:
        """``(q, r)`` with ``self == q*c + r``: q takes every term whose coefficient is a
        multiple of ``c`` (divided by ``c``), r the others and ``const % c``."""
        q, r = {}, {}
        for key, (coef, atom) in self.terms.items():
            if coef % c == 0:
                q[key] = (coef // c, atom)
            else:
                r[key] = (coef, atom)
        return (Linear._of(self.dtype, q, self.const // c),
                Linear._of(self.dtype, r, self.const % c))

    def part(self, keep: Callable[[PrimExpr], bool]) -> "Linear":
        """The terms whose atom passes ``keep``, without the constant."""
        return Linear._of(self.dtype, {k: t for k, t in self.terms.items() if keep(t[1])}, 0)

    def common_factor(self) -> int:
        """The gcd of the constant and every coefficient (0 for the zero form)."""
        g = abs(self.const)
        for coef, _ in self.terms.values():
            g = gcd(g, abs(coef))
        return g

    def is_const(self) -> bool:
        return not self.terms

    @property
    def coeffs(self) -> dict:
        """``{atom: coef}`` (atoms compare by identity, as variables do)."""
        return {atom: coef for coef, atom in self.terms.values()}

    def bounds(self, ranges: dict) -> Interval:
        """Inclusive bounds over ``ranges`` (see :func:`int_bounds`), or None."""
        lo = hi = self.const
        for coef, atom in self.terms.values():
            b = int_bounds(atom, ranges)
            if b is None:
                return None
            x, y = coef * b[0], coef * b[1]
            lo += min(x, y)
            hi += max(x, y)
        return lo, hi

    def to_expr(self) -> PrimExpr:
        """A tidy expression: positive terms first, then the negative ones, the constant
        last (``i0 * 32 + j - k + 4``); ``(x // c) * (k*c) + (x % c) * k`` becomes ``x * k``."""
        lin = self._merge_div_mod()
        # constants take the dtype of the atoms (a form read through casts has theirs)
        dt = next(iter(lin.terms.values()))[1].dtype if lin.terms else lin.dtype
        pos = [(c, a) for c, a in lin.terms.values() if c > 0]
        neg = [(c, a) for c, a in lin.terms.values() if c < 0]
        out: Optional[PrimExpr] = None
        const = lin.const
        if not pos and const > 0:
            out, const = Const(const, dt), 0
        for c, a in pos:
            t = a if c == 1 else Binary("*", a, Const(c, a.dtype))
            out = t if out is None else Binary("+", out, t)
        for c, a in neg:
            if out is None:
                out = Binary("*", a, Const(c, a.dtype))
            else:
                out = Binary("-", out, a if c == -1 else Binary("*", a, Const(-c, a.dtype)))
        if out is None:
            return Const(const, dt)
        if const > 0:
            out = Binary("+", out, Const(const, dt))
        elif const < 0:
            out = Binary("-", out, Const(-const, dt))
        return out

    def _merge_div_mod(self) -> "Linear":
        # undo the split a fuse made, for any x (floor division and modulo):
        #   (x // c) * (k*c) + (x % c) * k        is x * k
        #   ((x // c) % m) * (k*c) + (x % c) * k  is (x % (c*m)) * k     (c, m > 0)
        # the second turns three fused loops' indices into one remainder the first then
        # merges with the quotient: f // 3364 * 3364 + f // 58 % 58 * 58 + f % 58 is f
        lin = self
        while True:
            for key, (coef, atom) in lin.terms.items():
                merged = _merge_with_mod(lin, coef, atom)
                if merged is not None:
                    lin = Linear._of(lin.dtype, {k: t for k, t in lin.terms.items()
                                                 if k not in (key, merged[0])}, lin.const)
                    lin = lin + merged[1]
                    break
            else:
                return lin

    def __repr__(self) -> str:
        return f"Linear({self.to_expr()})"


def _merge_with_mod(lin: Linear, coef: int, atom: PrimExpr):
    """When ``coef * atom`` is ``k * (x % c)`` and ``lin`` has the term that pairs with it
    (see :meth:`Linear._merge_div_mod`): ``(key of that term, the pair's sum as a form)``."""
    if not (isinstance(atom, Binary) and atom.op == "%" and isinstance(atom.b, Const)):
        return None
    x, c = atom.a, atom.b.value
    div = ("b", "//", expr_key(x), expr_key(atom.b))
    if div in lin.terms and lin.terms[div][0] == coef * c:
        return div, linear(x).scale(coef)
    if c <= 0:
        return None
    for key, (k, other) in lin.terms.items():
        if (k == coef * c and isinstance(other, Binary) and other.op == "%"
                and isinstance(other.b, Const) and other.b.value > 0
                and expr_key(other.a) == div):
            whole = Binary("%", x, Const(c * other.b.value, atom.b.dtype))
            return key, Linear._of(lin.dtype, {expr_key(whole): (coef, whole)}, 0)
    return None


def linear(e: PrimExpr, casts: bool = False) -> Linear:
    """Integer expression ``e`` as a :class:`Linear` form (never fails: what is not linear
    is an atom). With ``casts``, integer-to-integer casts are looked through, which is right
    for values and bounds but not for rebuilding an expression of one dtype."""
    dt = e.dtype
    if isinstance(e, Const) and is_int(dt):
        return Linear._of(dt, {}, int(e.value))
    if isinstance(e, Binary):
        if e.op in ("+", "-"):
            a, b = linear(e.a, casts), linear(e.b, casts)
            return a + b if e.op == "+" else a - b
        if e.op == "*":
            a, b = linear(e.a, casts), linear(e.b, casts)
            if not b.terms:
                return a.scale(b.const)
            if not a.terms:
                return b.scale(a.const)
    elif isinstance(e, Unary) and e.op == "-":
        return linear(e.a, casts).scale(-1)
    elif casts and isinstance(e, Cast) and is_int(dt) and is_int(e.value.dtype):
        return linear(e.value, casts)
    return Linear._of(dt, {expr_key(e): (1, e)}, 0)


# --- affine forms and regions ------------------------------------------------------------------
class Atoms:
    """Names for non-affine pieces (``f // 32``) so that they can be compared across regions.

    Two occurrences of the same expression over the same variables become the same atom,
    a fresh Var whose range (added to ``ranges``) is the expression's bounds.
    """

    def __init__(self, ranges: dict):
        self.ranges = ranges
        self.by_key: dict = {}
        self.exprs: dict = {}   # atom var -> the expression it stands for

    def atom(self, e: PrimExpr) -> Optional[Var]:
        key = expr_key(e)
        v = self.by_key.get(key)
        if v is None:
            b = int_bounds(e, self.ranges)
            if b is None:
                return None
            v = Var(f"atom{len(self.by_key)}", e.dtype)
            self.by_key[key] = v
            self.exprs[v] = e
            self.ranges[v] = b
        return v


def affine(e: PrimExpr, atoms: Optional[Atoms] = None,
           relaxed: Optional[dict] = None) -> Optional[Linear]:
    """``e`` as a linear form over variables only, or None if it is not one (``//``, ``%``,
    loads, ...). With ``atoms``, a non-affine piece that uses none of the ``relaxed``
    variables becomes an atom instead of making the whole expression non-affine.

        >>> str(affine(i * 32 + j).to_expr()), affine(i // 4)
        ('i * 32 + j', None)
    """
    if not is_int(e.dtype):
        return None
    lin = linear(e, casts=True)
    if all(isinstance(a, Var) for _, a in lin.terms.values()):
        return lin
    if atoms is None:
        return None
    out = Linear._of(lin.dtype, {}, lin.const)
    for coef, a in lin.terms.values():
        if not isinstance(a, Var):
            if not is_int(a.dtype) or _mentions(a, relaxed or {}):
                return None
            a = atoms.atom(a)
            if a is None:
                return None
        out._accumulate(expr_key(a), coef, a)
    return out


def _mentions(e: PrimExpr, variables) -> bool:
    found: list = []
    post_order_visit(e, lambda n: found.append(n) if isinstance(n, Var) and n in variables
                     else None)
    return bool(found)


def relax(e: PrimExpr, relax_ranges: dict, ranges: dict,
          atoms: Optional[Atoms] = None) -> Optional[tuple[Linear, Linear]]:
    """Inclusive bounds of ``e`` when the variables of ``relax_ranges`` take any value in
    their ranges; the other variables stay symbolic. Falls back to constant bounds over
    ``ranges`` (every variable) when ``e`` is not affine; None if it cannot be bounded.

        >>> lo, hi = relax(i0 * 32 + ii, {ii: (0, 31)}, ranges)
        >>> str(lo.to_expr()), str(hi.to_expr())
        ('i0 * 32', 'i0 * 32 + 31')
    """
    a = affine(e, atoms, relax_ranges)
    if a is not None:
        lo = hi = a.part(lambda v: v not in relax_ranges) + a.const
        for v, c in a.coeffs.items():
            if v in relax_ranges:
                r0, r1 = relax_ranges[v]
                lo = lo + min(c * r0, c * r1)
                hi = hi + max(c * r0, c * r1)
        return lo, hi
    b = int_bounds(e, ranges)
    if b is None:
        return None
    return Linear(const=b[0]), Linear(const=b[1])


def union(x: tuple[Linear, Linear], y: tuple[Linear, Linear],
          ranges: dict) -> Optional[tuple[Linear, Linear]]:
    """The smallest interval with affine ends holding both (constant if the ends differ in shape)."""
    lo_d, hi_d = x[0] - y[0], x[1] - y[1]
    if lo_d.is_const() and hi_d.is_const():
        return (x[0] if lo_d.const <= 0 else y[0]), (x[1] if hi_d.const >= 0 else y[1])
    bs = [a.bounds(ranges) for a in (*x, *y)]
    if any(b is None for b in bs):
        return None
    return Linear(const=min(b[0] for b in bs)), Linear(const=max(b[1] for b in bs))


def provably_le(a: Linear, b: Linear, ranges: dict) -> bool:
    """True when ``a <= b`` for every value of the variables in ``ranges``."""
    d = b - a
    if d.is_const():
        return d.const >= 0
    bd = d.bounds(ranges)
    return bd is not None and bd[0] >= 0
