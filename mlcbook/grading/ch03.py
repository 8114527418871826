"""Checkers for chapter 3, *Transforming tensor programs*: schedules.

Every answer is a function that takes a :class:`~mlcbook.schedule.Schedule` of a given
program and transforms it (``def tile(sch, ti, tj): ...``). A check applies it to fresh
schedules, runs the result in the interpreter against numpy, and reads the loop nest:
which loops surround each block, in which order, over which extents, of which kind, and
which iteration variable each loop feeds. A message names the first loop that differs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MLCError, ScheduleError
from ..schedule import Schedule
from ..schedule.tree import child_stmts
from ..script import parse
from ..tir.analysis import free_vars
from ..tir.function import PrimFunc
from ..tir.interpreter import interpret
from ..tir.stmt import BlockRealize, For
from ..tir.structural import structural_equal
from .compare import NotImplementedAnswer, Fail, describe, expect_array, randn, scaled_atol, trial
from .registry import exercise

# --- the programs of the exercises -----------------------------------------------------------


def matmul(n: int = 32, m: int = 32, k: int = 32) -> PrimFunc:
    """``C = A @ B`` as one block "C" in loops i, j, k."""
    return parse(f'''
@T.prim_func
def matmul(A: T.Buffer(({n}, {k}), "float32"), B: T.Buffer(({k}, {m}), "float32"),
           C: T.Buffer(({n}, {m}), "float32")):
    for i, j, k in T.grid({n}, {m}, {k}):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
''')


def mm_relu(n: int = 32, m: int = 32, k: int = 32) -> PrimFunc:
    """The chapter's ``mm_relu``: block "Y" sums A @ B, block "C" applies relu."""
    return parse(f'''
@T.prim_func
def mm_relu(A: T.Buffer(({n}, {k}), "float32"), B: T.Buffer(({k}, {m}), "float32"),
            C: T.Buffer(({n}, {m}), "float32")):
    Y = T.alloc_buffer(({n}, {m}), "float32")
    for i, j, k in T.grid({n}, {m}, {k}):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid({n}, {m}):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
''')


def bmm_relu() -> PrimFunc:
    """Batched ``mm_relu``: ``C[b] = relu(A[b] @ B[b])`` for 4 batches of 32 x 32."""
    return parse('''
@T.prim_func
def bmm_relu(A: T.Buffer((4, 32, 32), "float32"), B: T.Buffer((4, 32, 32), "float32"),
             C: T.Buffer((4, 32, 32), "float32")):
    Y = T.alloc_buffer((4, 32, 32), "float32")
    for b, i, j, k in T.grid(4, 32, 32, 32):
        with T.block("Y"):
            vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
            with T.init():
                Y[vb, vi, vj] = T.float32(0)
            Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]
    for b, i, j in T.grid(4, 32, 32):
        with T.block("C"):
            vb, vi, vj = T.axis.remap("SSS", [b, i, j])
            C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))
''')


def bmm_relu_target() -> PrimFunc:
    """The program exercise 03.bmm_relu_target asks for."""
    return parse('''
@T.prim_func
def bmm_relu(A: T.Buffer((4, 32, 32), "float32"), B: T.Buffer((4, 32, 32), "float32"),
             C: T.Buffer((4, 32, 32), "float32")):
    Y = T.alloc_buffer((4, 32, 32), "float32")
    for b in T.parallel(4):
        for i, j_0 in T.grid(32, 4):
            for ax1_0 in range(8):
                for ax1_1 in T.unroll(4):
                    for ax0 in T.vectorized(8):
                        with T.block("Y"):
                            vb, vi = T.axis.remap("SS", [b, i])
                            vj = T.axis.spatial(32, j_0 * 8 + ax0)
                            vk = T.axis.reduce(32, ax1_0 * 4 + ax1_1)
                            with T.init():
                                Y[vb, vi, vj] = T.float32(0)
                            Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]
            for j_1 in T.vectorized(8):
                with T.block("C"):
                    vb, vi = T.axis.remap("SS", [b, i])
                    vj = T.axis.spatial(32, j_0 * 8 + j_1)
                    C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))
''')


# --- reading a loop nest ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Loop:
    node: For
    feeds: tuple[str, ...]   # the block iteration variables whose bindings use this loop

    def describe(self) -> str:
        kind = "" if self.node.kind == "serial" else f", {self.node.kind}"
        feeds = ", ".join(self.feeds) or "no iteration variable"
        return f"loop {self.node.loop_var.name} (extent {self.node.extent}{kind}, feeding {feeds})"

    def same(self, other: "_Loop") -> bool:
        return (str(self.node.extent), self.node.kind, self.feeds) == (
            str(other.node.extent), other.node.kind, other.feeds)


def _nest(func: PrimFunc) -> list[tuple[str, list[_Loop]]]:
    """Each block (program order) with the loops around it, outermost first."""
    out: list[tuple[str, list[_Loop]]] = []

    def walk(s, loops):
        if isinstance(s, For):
            walk(s.body, loops + [s])
            return
        if isinstance(s, BlockRealize) and s is not func.body:
            feeds = []
            for lp in loops:
                names = tuple(iv.var.name for iv, v in zip(s.block.iter_vars, s.iter_values)
                              if any(x is lp.loop_var for x in free_vars(v)))
                feeds.append(_Loop(lp, names))
            out.append((s.block.name, feeds))
        for c in child_stmts(s):
            walk(c, loops)

    walk(func.body, [])
    return out


def _first_difference(got: PrimFunc, target: PrimFunc) -> str | None:
    """Where the loop nests of ``got`` and ``target`` first differ, in words; None if equal."""
    g, t = _nest(got), _nest(target)
    if [n for n, _ in g] != [n for n, _ in t]:
        return (f"your program has the blocks {[n for n, _ in g]} in this order, the target has "
                f"{[n for n, _ in t]}")
    for (name, gl), (_, tl) in zip(g, t):
        for k, (a, b) in enumerate(zip(gl, tl)):
            if not a.same(b):
                return (f"block {name!r}: loop #{k + 1} around it is {a.describe()}, but in the "
                        f"target it is {b.describe()}")
        if len(gl) != len(tl):
            return (f"block {name!r} has {len(gl)} loops around it "
                    f"({', '.join(lp.node.loop_var.name for lp in gl)}), the target has "
                    f"{len(tl)} ({', '.join(lp.node.loop_var.name for lp in tl)})")
    for (n1, g1), (n2, g2), (_, t1), (_, t2) in zip(g, g[1:], t, t[1:]):
        gs, ts = _shared(g1, g2), _shared(t1, t2)
        if gs != ts:
            return (f"blocks {n1!r} and {n2!r} share their {gs} outermost loop(s) in your "
                    f"program but {ts} in the target (compute_at / reverse_compute_at move a "
                    "block under another's loops)")
    if not structural_equal(got, target):
        return ("the loops match the target, but a binding, predicate or block body differs; "
                "compare print(sch.mod) with the target")
    return None


def _shared(a: list[_Loop], b: list[_Loop]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x.node is not y.node:
            break
        n += 1
    return n


# --- running the student's schedule ------------------------------------------------------------
def _apply(answer, name: str, func: PrimFunc, *args, seed: int = 0) -> Schedule:
    """A fresh schedule of ``func`` after ``answer(sch, *args)``; errors become Fails."""
    if answer is None:
        raise NotImplementedAnswer(f"got None instead of your function {name}")
    if not callable(answer):
        raise Fail(f"expected your function {name}, got {type(answer).__name__}",
                   about_inputs=False)
    sch = Schedule(func, seed=seed)
    try:
        answer(sch, *args)  # what it returns does not matter: the schedule is the answer
    except NotImplementedError:
        raise NotImplementedAnswer(f"{name} raised NotImplementedError; replace the `raise "
                                   "NotImplementedError` line with your schedule") from None
    except ScheduleError as err:
        # The whole error: its program listing, marked `# <-- here`, shows which loop.
        raise Fail(f"{name} was refused by the schedule: {err}",
                   "read the error: it names the fact that makes the step change the "
                   "program's meaning, and what to do instead") from None
    except Exception as err:  # noqa: BLE001 - any error in student code is reported
        raise Fail(f"{name} raised {type(err).__name__}: {err}") from None
    if len(sch.trace) == 0:
        raise NotImplementedAnswer(f"{name} left the schedule unchanged")
    return sch


def _run(func: PrimFunc, *inputs: np.ndarray) -> np.ndarray:
    out = np.full(func.params[-1].shape, np.nan, dtype=np.float32)
    try:
        interpret(func, *[x.copy() for x in inputs], out)
    except MLCError as err:
        raise Fail(f"running the scheduled program raised {type(err).__name__}: {err}") from None
    return out


def _check_values(func: PrimFunc, reference, rng, *shapes) -> None:
    inputs = [randn(rng, s) for s in shapes]
    want = reference(*[x.astype(np.float64) for x in inputs])
    with trial(describe(**{p.name: x for p, x in zip(func.params, inputs)})):
        # the program sums 8 to 32 float32 products per entry
        expect_array(func.params[-1].name, _run(func, *inputs), want, atol=scaled_atol(want))


def _loops_of(sch: Schedule, block: str) -> list[_Loop]:
    for name, loops in _nest(sch.func):
        if name == block:
            return loops
    raise Fail(f"the scheduled program has no block {block!r} any more; keep it (do not "
               "inline it)")


def _relu_mm(a, b):
    return np.maximum(a @ b, 0)


# --- 03.tile ----------------------------------------------------------------------------------
@exercise("03.tile", points=2, answer="tile",
          title="Tile a matmul for any tile sizes")
def _check_tile(answer, rng):
    cases = [(8, 4), (int(rng.choice([2, 4, 16])), int(rng.choice([8, 2]))), (5, 3)]
    for ti, tj in cases:
        n, m, k = 16, 24, 8
        sch = _apply(answer, "tile", matmul(n, m, k), ti, tj)
        loops = _loops_of(sch, "C")
        want = [(-(-n // ti), ("vi",)), (-(-m // tj), ("vj",)), (k, ("vk",)), (ti, ("vi",)),
                (tj, ("vj",))]
        shown = ", ".join(f"{lp.node.loop_var.name}: {lp.node.extent}" for lp in loops)
        if len(loops) != 5:
            raise Fail(f"tile(sch, {ti}, {tj}) left {len(loops)} loops around block C ({shown}); "
                       "expected 5: i_0, j_0, k, i_1, j_1",
                       "split i and j, then reorder all five loops")
        for pos, (lp, (extent, feeds)) in enumerate(zip(loops, want)):
            if str(lp.node.extent) != str(extent) or (lp.feeds != feeds and extent != 1):
                hint = None
                twin = {0: 3, 1: 4, 3: 0, 4: 1}.get(pos)
                if twin is not None and lp.feeds == feeds and str(lp.node.extent) == str(
                        want[twin][0]):
                    hint = ("the outer and inner extents are swapped: factors=[None, ti] makes "
                            "the inner loop ti long")
                raise Fail(f"tile(sch, {ti}, {tj}): loop #{pos + 1} around block C is "
                           f"{lp.describe()}; expected extent {extent} feeding {feeds[0]} "
                           f"(your loops: {shown})", hint)
        _check_values(sch.func, lambda a, b: a @ b, rng, (n, k), (k, m))
    return (f"loops i_0, j_0, k, i_1, j_1 for tiles {', '.join(f'{a}x{b}' for a, b in cases)}, "
            "and the same C = A @ B")


# --- 03.fuse_relu ------------------------------------------------------------------------------
@exercise("03.fuse_relu", points=2, answer="fuse_relu",
          title="Compute relu tile by tile, inside the matmul's loops")
def _check_fuse_relu(answer, rng):
    n = m = k = 32
    sch = _apply(answer, "fuse_relu", mm_relu(n, m, k))
    y, c = _loops_of(sch, "Y"), _loops_of(sch, "C")
    shared = _shared(y, c)
    if shared == 0:
        raise Fail("blocks Y and C share no loop: the relu still runs after the whole matmul",
                   "tile one block, then move the other under its tile loops with compute_at "
                   "or reverse_compute_at")
    outer = y[:shared]
    roles = [lp.feeds for lp in outer]
    if shared != 2 or roles != [("vi",), ("vj",)] or [str(lp.node.extent) for lp in outer] != \
            [str(n // 8), str(m // 8)]:
        raise Fail(f"Y and C share the loops {', '.join(lp.describe() for lp in outer)}; "
                   f"expected exactly two: over row tiles (extent {n // 8}, feeding vi) and "
                   f"column tiles (extent {m // 8}, feeding vj), so that each 8 x 8 tile is "
                   "finished and its relu applied before the next tile starts")
    inner_c = 1
    for lp in c[shared:]:
        inner_c *= int(str(lp.node.extent))
    if inner_c != 64:
        raise Fail(f"inside the shared loops, block C runs {inner_c} times per tile; it should "
                   "run once per element of the 8 x 8 tile (64 times)")
    _check_values(sch.func, _relu_mm, rng, (n, k), (k, m))
    return "Y and C share the 8 x 8 tile loops, and the result is relu(A @ B)"


# --- 03.bmm_relu_target --------------------------------------------------------------------------
@exercise("03.bmm_relu_target", points=3, answer="schedule_bmm_relu",
          title="Schedule bmm_relu into a given program")
def _check_bmm_relu_target(answer, rng):
    sch = _apply(answer, "schedule_bmm_relu", bmm_relu())
    _check_values(sch.func, _relu_mm, rng, (4, 32, 32), (4, 32, 32))
    where = _first_difference(sch.func, bmm_relu_target())
    if where is not None:
        raise Fail(f"the result is right, but the program is not the target yet: {where}",
                   about_inputs=False)
    return "the same program as the target, computing relu(A @ B) per batch"


# --- 03.stochastic ---------------------------------------------------------------------------------
@exercise("03.stochastic", points=2, answer="stochastic_tile",
          title="A stochastic tiling that a tuner can search")
def _check_stochastic(answer, rng):
    n, m, k = 16, 32, 8
    func = matmul(n, m, k)
    seen = set()
    for seed in [int(s) for s in rng.integers(0, 2**16, size=6)]:
        sch = _apply(answer, "stochastic_tile", func, seed=seed)
        samples = [(i, inst) for i, inst in sch.trace.decisions
                   if inst.kind == "sample_perfect_tile"]
        if len(samples) != 2:
            raise Fail(f"your schedule made {len(samples)} sample_perfect_tile decision(s); it "
                       "should sample one tiling for i and one for j",
                       "use sch.sample_perfect_tile(loop, n=2, max_innermost_factor=8) and pass "
                       "its result to sch.split", about_inputs=False)
        decisions = [inst.decision for _, inst in samples]
        loops = _loops_of(sch, "C")
        # a loop of extent 1 feeds nothing (its variable is always 0), whatever it was split from
        got = [(str(lp.node.extent), lp.feeds if str(lp.node.extent) != "1" else ())
               for lp in loops]
        want = [(str(e), feeds if e != 1 else ()) for e, feeds in [
            (decisions[0][0], ("vi",)), (decisions[1][0], ("vj",)), (k, ("vk",)),
            (decisions[0][1], ("vi",)), (decisions[1][1], ("vj",))]]
        if got != want:
            raise Fail(f"with the sampled tiles {decisions[0]} (i) and {decisions[1]} (j), the "
                       f"loops around C are {[lp.describe() for lp in loops]}; expected i_0, j_0, "
                       "k, i_1, j_1 with the sampled extents (did you split with the sampled "
                       "values themselves?)")
        # judged by the limit asked for, not the tiles drawn: with a larger limit, all six
        # draws can come out at 8 or less by luck
        limit = max(inst.args["max_innermost_factor"] for _, inst in samples)
        if limit > 8:
            raise Fail(f"an inner tile may be as large as {limit} (drawn this time: "
                       f"{[d[1] for d in decisions]}); ask for at most 8 with "
                       "max_innermost_factor=8", about_inputs=False)
        seen.add(str(decisions))
        _check_values(sch.func, lambda a, b: a @ b, rng, (n, k), (k, m))
        # a tuner changes a decision and replays: the split must follow it
        index = samples[0][0]
        other = next(d for d in ([2, 8], [4, 4], [8, 2]) if d != decisions[0])
        try:
            new = sch.trace.with_decision(index, other).apply(func)
        except ScheduleError as err:
            raise Fail(f"replaying your trace with the decision of i changed to {other} "
                       f"failed: {str(err).splitlines()[0]}") from None
        first = _loops_of(new, "C")
        if [str(first[0].node.extent), str(first[3].node.extent)] != [str(x) for x in other]:
            raise Fail(f"replaying the trace with the decision of i changed to {other} did not "
                       "change the split of i: pass the values returned by "
                       "sample_perfect_tile to sch.split as they are, not numbers computed "
                       "from them")
    if len(seen) < 2:
        raise Fail(f"6 different seeds all gave the same tiles {seen.pop()}: the tiles must be "
                   "sampled, not fixed")
    return f"{len(seen)} different tilings from 6 seeds, each replayable with a changed decision"
