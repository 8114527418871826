"""When a loop marked ``vectorized`` may really run its iterations as SIMD lanes.

Vector code runs each statement for all lanes before the next statement, where the loop
runs all statements for lane 0, then lane 1, ... The two orders agree unless lanes
communicate through memory. :func:`vectorize_hazard` returns why they might (a buffer
written in the loop is accessed at lane-overlapping places), or ``None`` when every buffer
written in the body is accessed at one index that moves with the lane, e.g.
``C[i*64 + v] = C[i*64 + v] + A[i, k] * B[k*64 + v]``.

    >>> vectorize_hazard(loop)            # None: safe to emit vector instructions
"""

from __future__ import annotations

from typing import Optional

from ..tir.analysis import free_vars
from ..tir.expr import Binary, BufferLoad, Cast, Const, Unary, Var
from ..tir.functor import Visitor
from ..tir.analysis import expr_key
from ..tir.simplify import _Simplifier
from ..tir.stmt import Allocate, BufferStore, For


def vectorize_hazard(loop: For) -> Optional[str]:
    """Why ``loop``'s iterations cannot run as lanes of one vector, or ``None`` if they can."""
    v = loop.loop_var
    acc = _Accesses()
    acc.visit(loop.body)
    inner = acc.defined
    for buf, (stores, loads) in acc.by_buffer.items():
        if not stores:
            continue
        keys = {expr_key(i) for i in stores + loads}
        name = buf.name
        if len(keys) > 1:
            return (f"buffer {name!r} is written and accessed at different indices inside "
                    f"the loop over {v.name}, so lanes may depend on each other")
        index = stores[0]
        used = set(free_vars(index))
        if used & inner:
            return (f"the index of {name!r} depends on a loop inside the loop over {v.name}, "
                    "so lanes may write the same element in a different order")
        if v not in used:
            if loads:
                return (f"every lane reads and writes the same element of {name!r}: the loop "
                        f"over {v.name} carries a dependence (a reduction?); it cannot be "
                        "vectorized")
            continue
        if not _injective_in(index, v, getattr(loop.extent, "value", None)):
            return (f"the index {index} of {name!r} is not a one-to-one function of {v.name}, "
                    "so lanes may write the same element")
    return None


def _injective_in(index, v: Var, lanes) -> bool:
    """True when different values of ``v`` (in ``range(lanes)``) give different ``index``
    values, whatever the other variables are: ``index`` is ``f(v) + rest`` with ``v`` not in
    ``rest``, and ``f`` is either ``c*v`` (c != 0) or, evaluated lane by lane, one-to-one."""
    lin = _Simplifier(None)._lin(index)
    f_terms = []
    for c, atom in lin.terms.values():
        used = free_vars(atom)
        if v in used:
            if any(u is not v for u in used):
                return False  # v is mixed with another variable inside a term
            f_terms.append((c, atom))
    if len(f_terms) == 1 and f_terms[0][1] is v:
        return True
    if not isinstance(lanes, int) or lanes > 4096:
        return False
    try:
        values = {sum(c * _eval(atom, v, lane) for c, atom in f_terms) for lane in range(lanes)}
    except ValueError:
        return False  # e.g. an index loaded from memory
    return len(values) == lanes


def _eval(e, v: Var, value: int) -> int:
    """Value of an integer expression of ``v`` alone."""
    if isinstance(e, Var):
        return value
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Binary):
        a, b = _eval(e.a, v, value), _eval(e.b, v, value)
        return {"+": a + b, "-": a - b, "*": a * b, "//": a // b if b else 0,
                "%": a % b if b else 0, "min": min(a, b), "max": max(a, b)}[e.op]
    if isinstance(e, Unary) and e.op == "-":
        return -_eval(e.a, v, value)
    if isinstance(e, Cast):
        return _eval(e.value, v, value)
    raise ValueError(f"cannot evaluate {e}")


class _Accesses(Visitor):
    def __init__(self):
        self.by_buffer: dict = {}
        self.defined: set = set()

    def _entry(self, buf):
        return self.by_buffer.setdefault(buf, ([], []))

    def visit_For(self, s: For):
        self.defined.add(s.loop_var)
        self.generic_visit(s)

    def visit_Allocate(self, s: Allocate):
        self.generic_visit(s)

    def visit_BufferStore(self, s: BufferStore):
        self._entry(s.buffer)[0].append(s.indices[0])
        self.generic_visit(s)

    def visit_BufferLoad(self, e: BufferLoad):
        self._entry(e.buffer)[1].append(e.indices[0])
        self.generic_visit(e)
