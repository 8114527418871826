"""What every committed step must leave true: a well-formed program whose vectorized loops
still compile to vector code.

:func:`check_step` runs after a primitive changed the program and before the schedule
commits it: :func:`mlcbook.tir.verify` (a failure there is a bug in the primitive's own
checks), then :func:`check_vector_lanes`.

**The lane rule, where it is needed.** Whether a vectorized loop can run as SIMD lanes is
code generation's rule (:func:`mlcbook.tir.lanes.vectorize_hazard`) applied to the
*lowered* loop, and lowering the whole program after every step made scheduling several
times slower. So a step is judged only for the vectorized loops it rebuilt (a loop it
left alone is the same object, judged by the step that made it), and of those:

1. a loop holding no loop and storing each buffer it writes once, without reading it
   back (a copy, an init, a write-back), passes: lowering adds no statement to it, and
   the rule lets one plain store per buffer through (lanes that meet are stored in lane
   order, as the loop would);
2. the others are lowered in a *slice* of the program: the statements on the way from
   the function body down to them, everything beside that way dropped, and the
   function's intermediate buffers passed in as parameters (so lowering does not compact
   them, the costly part). No hazard there: the step is accepted;
3. a hazard in the slice: the whole program is lowered, and only its verdict refuses the
   step, so every refusal (its message included) is exactly the whole program's.

A slice lowers the loop as the program does but for its intermediate buffers, which keep
the strides of the whole buffer instead of those of the compacted one: a difference that
changes no verdict we know of. A verdict that did depend on it would be judged at build
time instead: code generation applies the same rule to what it compiles and refuses
with ``VectorizeError`` (MLC-C006), never emitting a wrong vector loop. (Leaving a loop
the step did not rebuild to the step that made it rests on the same ground: a step beside
it can change how a buffer they share is compacted.)

    check_step(ctx, "compute_at", before)     # raises InvalidResultError / VectorLaneError
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import TIRError
from ..tir.expr import BufferLoad, Const
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.lanes import vectorize_hazard
from ..tir.stmt import Block, BufferStore, For
from ..tir.transform.lower import lower
from ..tir.verify import verify
from . import tree
from .context import Context
from .errors import InvalidResultError, VectorLaneError, schedule_error


def check_step(ctx: Context, step: str, before: PrimFunc) -> None:
    """Refuse ``step`` unless ``ctx.func`` (its result from ``before``) is well formed and
    its vectorized loops still compile to vector code."""
    try:
        verify(ctx.func)
    except TIRError as err:
        raise schedule_error(
            InvalidResultError,
            f"{step} would produce a malformed program: {err}",
            "this is a bug in mlcbook's check of this step; please report it with the "
            "trace (print(sch.trace))", ctx.func) from None
    check_vector_lanes(ctx, step, before)


def check_vector_lanes(ctx: Context, step: str, before: PrimFunc, marked=None) -> None:
    """Refuse ``step`` if it leaves a vectorized loop that code generation could not emit as
    vector code (see the module docstring for which loops are judged, and how). Loops that
    already failed the rule ``before`` (hand-written ones) are left to ``mb.build``'s error.

    ``marked`` is the loop variable ``vectorize`` just marked: its refusal shows the
    program as it was, since the loop is not vectorized after all.
    """
    kept = {id(lp) for lp in vectorized_loops(before)}
    changed = [lp for lp in vectorized_loops(ctx.func)
               if id(lp) not in kept and not _stores_once(lp)]
    if not changed or not _slice_hazards(ctx.func, changed):
        return
    names = {lp.loop_var for lp in changed}
    bad = [(var, why) for var, why in _lane_hazards(ctx.func).items() if var in names]
    if not bad:
        return
    old = _lane_hazards(before)
    for var, why in bad:
        if var in old:
            continue
        name = var.name
        if var is marked:
            raise schedule_error(
                VectorLaneError,
                f"cannot vectorize loop {name}: code generation could not run its iterations "
                f"as SIMD lanes: {why}.",
                "vectorize a loop whose iterations each write their own elements (usually "
                "the innermost spatial loop), or leave this one serial.",
                before, tree.find_loop(before.body, var), f"loop {name}")
        mark = tree.find_loop(ctx.func.body, var)
        ctx.fail(VectorLaneError,
                 f"cannot {step}: loop {name} is vectorized, and after this step code "
                 f"generation could not run its iterations as SIMD lanes: {why}.",
                 f"keep each lane of {name} on its own elements, e.g. compute_at / "
                 f"reverse_compute_at at a loop outside {name} rather than inside it; or do "
                 f"not vectorize {name}.",
                 mark, f"loop {name}")


def vectorized_loops(func: PrimFunc) -> list[For]:
    """The loops of ``func`` marked vectorized, in program order."""
    return [lp for lp in tree.loops_under(func.body) if lp.kind == "vectorized"]


#: the last few (function, loops) judged and whether their slice has a hazard: vectorize
#: judges the loop it marks, and the check after every step judges it again
_sliced: list = []


def _slice_hazards(func: PrimFunc, loops: list[For]) -> bool:
    """Whether any of ``loops`` fails the lane rule once lowered in the slice of ``func``
    that holds only them and the statements on the way down to them."""
    key = tuple(id(lp) for lp in loops)
    for f, k, found in _sliced:
        if f is func and k == key:
            return found
    on_way, inside = set(), set()
    for lp in loops:
        on_way.update(id(s) for s in tree.path_to(func.body, lp))
        inside.update(id(s) for s in tree.walk(lp))
    body = tree.map_stmts(func.body, lambda s: s if id(s) in on_way or id(s) in inside else None)
    root = body.block
    taken = {b.name for b in func.params}
    passed = tuple(b for b in root.alloc_buffers if b.name not in taken)
    body = replace(body, block=replace(root, alloc_buffers=tuple(
        b for b in root.alloc_buffers if b not in passed)))
    sliced = PrimFunc(func.name, func.params + passed, body, func.num_outputs + len(passed),
                      func.attrs)
    names = {lp.loop_var for lp in loops}
    found = any(var in names for var in _hazards_of(sliced))
    _sliced.append((func, key, found))
    del _sliced[:-4]
    return found


def _stores_once(loop: For) -> bool:
    """Whether ``loop`` holds no loop, no init and no allocation, and stores each buffer it
    writes once without loading it (case 1 of the module docstring)."""
    stores: list = []
    loaded: set = set()

    def visit(n):
        if isinstance(n, BufferStore):
            stores.append(n.buffer)
        elif isinstance(n, BufferLoad):
            loaded.add(n.buffer)

    for s in tree.walk(loop.body):
        if isinstance(s, For) or isinstance(s, Block) and (s.init is not None or s.alloc_buffers):
            return False
    post_order_visit(loop.body, visit)
    return (isinstance(loop.extent, Const) and len(stores) == len(set(stores))
            and not loaded & set(stores))


#: the last few functions lowered whole and their hazards: a step's result is the next
#: step's starting point
_checked: list = []


def _lane_hazards(func: PrimFunc) -> dict:
    """``{loop var: why}`` for the vectorized loops of ``func`` that code generation would
    refuse, found by lowering the whole of ``func``."""
    for f, hazards in _checked:
        if f is func:
            return hazards
    hazards = _hazards_of(func) if vectorized_loops(func) else {}
    _checked.append((func, hazards))
    del _checked[:-4]
    return hazards


def _hazards_of(func: PrimFunc) -> dict:
    hazards: dict = {}

    def visit(n):
        if isinstance(n, For) and n.kind == "vectorized" and n.loop_var not in hazards:
            why = vectorize_hazard(n)
            if why is not None:
                hazards[n.loop_var] = why

    for _, lowered in lower(func).items():
        post_order_visit(lowered.body, visit)
    return hazards


__all__ = ["check_step", "check_vector_lanes", "vectorized_loops"]
