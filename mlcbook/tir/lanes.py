"""When a loop marked ``vectorized`` may really run its iterations as SIMD lanes.

Vector code runs each statement for all lanes before the next statement (and each
iteration of a loop nested inside for all lanes before the next iteration), where the loop
runs everything for lane 0, then lane 1, ... The two orders agree unless lanes communicate
through memory. :func:`vectorize_hazard` returns why they might, or ``None`` when every
buffer written in the body is either

* accessed at one index that gives different lanes different elements whatever the
  loops inside do, e.g. ``C[i*64 + v] = C[i*64 + v] + A[i, k] * B[k*64 + v]`` (``k`` a
  loop inside) or ``P[h*8 + v] = X[...]`` (``h`` a loop of 8 inside); or
* only stored, by one statement outside any inner loop: lanes that hit the same element
  are stored in lane order (as ``llvm.masked.scatter`` does), so the last lane wins, as it
  does in the loop.

    >>> vectorize_hazard(loop)            # None: safe to emit vector instructions

:meth:`mlcbook.schedule.Schedule.vectorize` applies this rule to the lowered program and
code generation to what it compiles, so a loop the schedule vectorizes always compiles to
vector code. (It is a fact about loop IR, so it lives here, below both.)
"""

from __future__ import annotations

from itertools import product
from math import gcd, prod
from typing import Optional

from .analysis import buffers_read, free_vars
from .arith import expr_key, int_values, linear
from .expr import BufferLoad, Const, Var
from .functor import Visitor
from .stmt import BufferStore, For

#: at most this many (lane, inner iteration) combinations are tried one by one when an
#: index is not a sum of loop variables times constants
MAX_ENUMERATED = 4096


def vectorize_hazard(loop: For) -> Optional[str]:
    """Why ``loop``'s iterations cannot run as lanes of one vector, or ``None`` if they can.

    The reason is a clause naming the culprit, e.g. "every lane reads and writes the same
    element of 's', so ..."; callers say which loop and what to do."""
    v = loop.loop_var
    if not isinstance(loop.extent, Const):
        return f"its extent {loop.extent} is not a constant, so the number of lanes is unknown"
    acc = _Accesses()
    acc.visit(loop.body)
    sizes = {v: loop.extent.value}
    for inner in acc.loops:
        if inner.kind == "vectorized":
            return (f"loop {inner.loop_var.name} inside the loop over {v.name} is vectorized "
                    "too, and only one loop of a nest can become SIMD lanes")
        if v in free_vars(inner.extent) or buffers_read(inner.extent):
            return (f"the extent of loop {inner.loop_var.name} inside the loop over {v.name} "
                    "depends on the lane or on memory, so lanes could run it a different "
                    "number of times")
        if isinstance(inner.extent, Const):
            sizes[inner.loop_var] = inner.extent.value
    inner_vars = {lp.loop_var for lp in acc.loops}
    for buf, (stores, loads) in acc.by_buffer.items():
        if not stores:
            continue
        name = buf.name
        keys = {expr_key(i) for i, _ in stores} | {expr_key(i) for i in loads}
        if len(keys) > 1:
            return (f"buffer {name!r} is written and accessed at different indices inside "
                    f"the loop over {v.name}, so lanes may read or overwrite each other's "
                    "elements")
        index = stores[0][0]
        if _lanes_apart(index, v, inner_vars, sizes):
            continue
        if not loads and len(stores) == 1 and not stores[0][1]:
            continue  # one plain store: a scatter keeps the loop's last-lane-wins order
        used = set(free_vars(index))
        if v not in used and not used & inner_vars and loads:
            return (f"every lane reads and writes the same element of {name!r}, so the lanes "
                    f"of the loop over {v.name} would update it at once (a reduction over "
                    f"{v.name}, or work every lane repeats)")
        what = "reads and writes" if loads else "writes"
        return (f"different lanes may access the same element of {name!r} (the loop over "
                f"{v.name} {what} it at index {index}, which does not give each lane its own "
                "elements whatever the loops inside it do)")
    return None


def _lanes_apart(index, v: Var, inner: set, sizes: dict) -> bool:
    """True when two different values of ``v`` never give the same ``index``, whatever
    the loops ``inner`` (inside the vectorized loop) are at. Outer variables are the same
    for all lanes, so only the terms that move with ``v`` or ``inner`` matter."""
    lin = linear(index)
    moving = []
    for c, atom in lin.terms.values():
        used = set(free_vars(atom))
        if v in used or used & inner:
            moving.append((c, atom, used))
    if not any(v in used for _, _, used in moving):
        return sizes[v] == 1
    if all(isinstance(atom, Var) and atom in sizes for _, atom, _ in moving):
        if _digit_apart([(c, atom) for c, atom, _ in moving], v, sizes):
            return True
    return _enumerated_apart(moving, v, sizes)


def _digit_apart(terms: list, v: Var, sizes: dict) -> bool:
    """``index = cv*v + sum(c*x)``: lanes stay apart when the terms with smaller
    coefficients span less than ``cv`` and the larger ones move in steps (their gcd) longer
    than everything below them spans: ``P[h*8 + v]`` with 8 lanes, ``k + 4*v + 32*h``."""
    cv = abs(next(c for c, x in terms if x is v))
    others = [(abs(c), sizes[x] - 1) for c, x in terms if x is not v and sizes[x] > 1]
    low = sum(c * span for c, span in others if c < cv)
    high = [c for c, _ in others if c >= cv]
    step = 0
    for c in high:
        step = gcd(step, c)
    return low < cv and (not high or step > cv * (sizes[v] - 1) + low)


def _enumerated_apart(moving: list, v: Var, sizes: dict) -> bool:
    """Try every lane and inner iteration (when there are few) and see whether two lanes meet."""
    names = sorted({x for _, _, used in moving for x in used}, key=lambda x: x.name)
    if any(x not in sizes for x in names) or prod(sizes[x] for x in names) > MAX_ENUMERATED:
        return False
    lane_of: dict = {}
    for values in product(*(range(sizes[x]) for x in names)):
        env = dict(zip(names, values))
        try:
            at = int(sum(c * int_values(atom, env) for c, atom, _ in moving))
        except ValueError:
            return False  # e.g. an index loaded from memory
        if lane_of.setdefault(at, env[v]) != env[v]:
            return False
    return True


class _Accesses(Visitor):
    """Per buffer: its stores as ``(index, under an inner loop)`` and its load indices;
    and the loops inside."""

    def __init__(self):
        self.by_buffer: dict = {}
        self.loops: list[For] = []
        self._depth = 0

    def _entry(self, buf):
        return self.by_buffer.setdefault(buf, ([], []))

    def visit_For(self, s: For):
        self.loops.append(s)
        self._depth += 1
        self.generic_visit(s)
        self._depth -= 1

    def visit_BufferStore(self, s: BufferStore):
        self._entry(s.buffer)[0].append((s.indices[0], self._depth > 0))
        self.generic_visit(s)

    def visit_BufferLoad(self, e: BufferLoad):
        self._entry(e.buffer)[1].append(e.indices[0])
        self.generic_visit(e)
