"""Checkers for chapter 4, *Code generation with LLVM*: schedules judged by the code they become.

Most exercises hand the student's function a fresh :class:`~mlcbook.schedule.Schedule` of a
program built for freshly drawn sizes; the function schedules it in place. The check then
compiles the result with :func:`mlcbook.build`, runs it against numpy, and reads what the
compiler made of it: the vector width in the LLVM IR, where the parallel loop sits, how fast
the kernel runs beside numpy in the same check.
"""

from __future__ import annotations

import re
import time

import numpy as np

from ..errors import MLCError, ScheduleError
from ..tir.expr import PrimExpr, Var
from ..tir.function import PrimFunc
from ..tir.stmt import For
from .compare import (Fail, NotImplementedAnswer, Partial, student_line, describe, expect_array,
                      randn, trial)
from .registry import exercise


def _lanes() -> int:
    from ..codegen import Target
    return Target().vector_lanes("float32")


def _schedule(func: PrimFunc):
    from ..schedule import Schedule
    return Schedule(func)


def _build(func_or_mod):
    from ..runtime import build
    try:
        return build(func_or_mod)
    except MLCError as err:
        raise Fail(f"compiling your scheduled program raised {type(err).__name__}: {err}") \
            from None


# --- the programs the exercises schedule -----------------------------------------------------
def weighted_column_sum(n: int, m: int) -> PrimFunc:
    """``S[j] = sum_i A[i, j] * w[i]`` for ``A`` of shape ``(n, m)``: block ``"S"``, loops
    ``j`` (spatial) then ``i`` (reduce)."""
    from .. import te
    A = te.placeholder((n, m), "float32", name="A")
    w = te.placeholder((n,), "float32", name="w")
    i = te.reduce_axis(n, name="i")
    S = te.compute((m,), lambda j: te.sum(A[i, j] * w[i], axis=i), name="S")
    return te.create_prim_func([A, w, S])


def matmul(n: int, m: int, k: int) -> PrimFunc:
    """``C = A @ B`` for ``A`` of shape ``(n, k)`` and ``B`` of shape ``(k, m)``: block
    ``"C"``, loops ``i, j, k``."""
    from .. import te
    A = te.placeholder((n, k), "float32", name="A")
    B = te.placeholder((k, m), "float32", name="B")
    r = te.reduce_axis(k, name="k")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def outer_product_matmul(n: int, m: int, k: int):
    """A schedule of :func:`matmul` with its loops in the order ``k, i, j``: for each ``k``,
    add the outer product of a column of ``A`` and a row of ``B`` to all of ``C``."""
    sch = _schedule(matmul(n, m, k))
    i, j, r = sch.get_loops(sch.get_block("C"))
    sch.reorder(r, i, j)
    return sch


# --- calling the student's schedule function -------------------------------------------------
def _refusal(err: ScheduleError) -> str:
    """The first sentences of a schedule error, without the program it prints."""
    lines = []
    for line in str(err).splitlines():
        if line.startswith((" ", "\t")):
            break
        lines.append(line)
    return " ".join(lines)


def _apply(answer, name: str, sch, refused_hint=None):
    """Run ``answer(sch)``; return the schedule it leaves (or returns)."""
    from ..schedule import Schedule
    if answer is None:
        raise NotImplementedAnswer(f"got None instead of your function {name}")
    if not callable(answer):
        raise Fail(f"expected your function {name}, got {type(answer).__name__} {answer!r:.60}",
                   about_inputs=False)
    try:
        result = answer(sch)
    except NotImplementedError:
        raise NotImplementedAnswer(f"{name} raised NotImplementedError; replace the "
                                   "`raise NotImplementedError` line with your code") from None
    except ScheduleError as err:
        hint = refused_hint(err) if refused_hint else None
        raise Fail(f"a step of {name} was refused by the schedule: {type(err).__name__}: "
                   f"{_refusal(err)}", hint) from None
    except Exception as err:  # noqa: BLE001 - any error in student code is reported, not raised
        raise Fail(f"{name} raised {type(err).__name__}: {err}{student_line(err)}") from None
    if result is None or result is sch:
        return sch
    if isinstance(result, Schedule):
        return result
    raise Fail(f"{name} returned {type(result).__name__} {result!r:.60}; it should change the "
               "schedule it is given in place and return nothing", about_inputs=False)


def _expect_program(sch, expected: PrimFunc, name: str) -> None:
    """The scheduled program must be the one the check asked for, with the same parameters."""
    got = [tuple(p.shape) for p in sch.func.params]
    want = [tuple(p.shape) for p in expected.params]
    if got != want:
        raise Fail(f"the schedule {name} left has parameters of shapes {got}, but the check "
                   f"asked for {want}: schedule the `sch` your function is given instead of "
                   "building a program of your own")


def _loops(stmt) -> list[tuple[For, list[For]]]:
    """Every loop of a statement with the loops around it, outermost first."""
    from ..tir.functor import Visitor

    class Loops(Visitor):
        def __init__(self):
            self.found, self.stack = [], []

        def visit_For(self, s: For):
            self.found.append((s, list(self.stack)))
            self.stack.append(s)
            self.visit(s.body)
            self.stack.pop()

    v = Loops()
    v.visit(stmt)
    return v.found


# --- 04.vectorize ----------------------------------------------------------------------------
_VECTOR_OP = re.compile(r"= (?:fmul|fadd)(?: \w+)* <(\d+) x float>|"
                        r"call[^@]*<(\d+) x float> @\"?llvm\.fm(?:a|uladd)\.")


def _vector_widths(llvm_ir: str) -> list[int]:
    return sorted({int(a or b) for a, b in _VECTOR_OP.findall(llvm_ir)})


def _strided_access(mod) -> str | None:
    """The first access under a vectorized loop whose neighbouring lanes are not neighbours
    in memory, as ``"S[j_0 * 2 + j_1], whose lanes (j_0) are 2 floats apart"``; None if
    all are.

    Read from the lowered program, not the LLVM IR: how a strided access is compiled (a
    gather, or for small strides one wide load and a shuffle) is the code generator's choice.
    """
    from ..tir.analysis import free_vars
    from ..tir.arith import expr_key, linear
    from ..tir.functor import Visitor
    from ..tir.transform import lower

    def lane_stride(index, var) -> int | None:
        """Elements between neighbouring lanes; None if that is not one fixed distance."""
        form, key = linear(index, casts=True), expr_key(var)
        if any(k != key and any(v is var for v in free_vars(atom))
               for k, (_, atom) in form.terms.items()):
            return None  # the lane variable sits inside a non-affine term, like j // 2
        return form.terms.get(key, (0, var))[0]

    class Find(Visitor):
        def __init__(self):
            self.lanes: list[Var] = []
            self.found: str | None = None

        def visit_For(self, node: For) -> None:
            vector = node.kind == "vectorized"
            self.lanes += [node.loop_var] if vector else []
            self.generic_visit(node)
            if vector:
                self.lanes.pop()

        def access(self, node) -> None:
            for var in self.lanes:
                stride = lane_stride(node.indices[0], var)
                if stride not in (0, 1) and self.found is None:
                    apart = "a varying distance" if stride is None else f"{abs(stride)} floats"
                    self.found = (f"{node.buffer.name}[{node.indices[0]}], whose lanes "
                                  f"({var.name}) are {apart} apart")
            self.generic_visit(node)

        visit_BufferLoad = visit_BufferStore = access

    find = Find()
    for f in lower(mod).functions.values():
        if isinstance(f, PrimFunc):
            find.visit(f.body)
    return find.found


def _vectorize_refused(err: ScheduleError) -> str:
    text = str(err)
    if "reduction axis" in text:
        return ("i is the reduction loop: its steps all add into the same S[j], so they cannot "
                "run as lanes side by side. Vectorize part of the spatial loop j instead")
    if "innermost" in text:
        return ("only the innermost loop can become SIMD lanes: split j, reorder so that i "
                "sits between the two parts of j, and vectorize the inner part")
    return None


@exercise("04.vectorize", points=2, answer="schedule_vectorize",
          title="Vectorize a weighted column sum")
def _check_vectorize(answer, rng):
    lanes = _lanes()
    sizes = [(int(n), lanes * int(q)) for n, q in
             zip(rng.choice(np.arange(3, 40), 3, replace=False),
                 rng.choice(np.arange(2, 7), 3, replace=False))]
    for n, m in sizes:
        func = weighted_column_sum(n, m)
        A, w = randn(rng, (n, m)), randn(rng, (n,))
        with trial(describe(A=A, w=w)):
            sch = _apply(answer, "schedule_vectorize", _schedule(func), _vectorize_refused)
            _expect_program(sch, func, "schedule_vectorize")
            kernel = _build(sch.mod)
            S = np.empty(m, dtype="float32")
            kernel(A, w, S)
            expect_array("S", S, A.astype(np.float64).T @ w)
            ir = kernel.llvm_ir()
            widths = _vector_widths(ir)
            if not widths:
                raise Fail("the kernel computes S correctly but its LLVM IR has no vector "
                           "arithmetic: every fmul and fadd works on a single float",
                           "split j by the vector width, reorder so that the reduction loop i "
                           "is outside the inner part of j, and vectorize that inner part")
            strided = _strided_access(sch.mod)
            if strided is not None:
                raise Fail(f"the kernel is vectorized, but in {strided}: the lanes read "
                           "addresses that are not neighbours in memory, so its vector "
                           "accesses are gathers and scatters (or a wider load and a shuffle) "
                           "instead of one contiguous load",
                           "vectorize the *inner* part of the split j loop, whose consecutive "
                           "values are consecutive columns, not the outer part")
            wrong = [w_ for w_ in widths if w_ % lanes]
            if wrong:
                raise Fail(f"the vector operations are {wrong[0]} floats wide "
                           f"(<{wrong[0]} x float> in the LLVM IR), but this CPU's SIMD "
                           f"registers hold {lanes} float32: a width that is not a multiple of "
                           f"{lanes} leaves part of a register unused or needs masking",
                           f"split j with an inner factor of {lanes} (LANES) and vectorize "
                           "that inner loop")
    widths = ", ".join(f"<{w_} x float>" for w_ in widths)
    return (f"vectorized ({widths} arithmetic, contiguous loads) and equal to numpy on "
            f"{len(sizes)} fresh sizes")


# --- 04.parallel -----------------------------------------------------------------------------
def _parallel_refused(err: ScheduleError) -> str:
    if "reduction axis" in str(err):
        return ("k is the reduction loop: every k adds into all of C, so two threads running "
                "different k would race on C. Move a spatial loop (i) outside k with reorder, "
                "then parallelize that")
    return None


@exercise("04.parallel", points=2, answer="schedule_parallel",
          title="Parallelize a matmul whose outer loop is a reduction")
def _check_parallel(answer, rng):
    from ..runtime import get_num_threads, set_num_threads
    sizes = [(int(rng.integers(6, 40)), int(rng.integers(3, 30)), int(rng.integers(3, 20)))
             for _ in range(2)]
    for n, m, k in sizes:
        A, B = randn(rng, (n, k)), randn(rng, (k, m))
        with trial(describe(A=A, B=B)):
            sch = _apply(answer, "schedule_parallel", outer_product_matmul(n, m, k),
                         _parallel_refused)
            _expect_program(sch, matmul(n, m, k), "schedule_parallel")
            kernel = _build(sch.mod)
            old = get_num_threads()
            try:
                for threads in (2, 1):
                    set_num_threads(threads)
                    C = np.empty((n, m), dtype="float32")
                    kernel(A, B, C)
                    expect_array("C", C, A.astype(np.float64) @ B)
            finally:
                set_num_threads(old)
            loops = _loops(sch.func.body)
            parallel = [(loop, outer) for loop, outer in loops if loop.kind == "parallel"]
            if not parallel:
                raise Fail("the kernel is correct, but no loop is parallel: it runs on one "
                           "core", "mark a loop with sch.parallel(loop)")
            loop, outer = parallel[0]
            name = loop.loop_var.name
            if outer:
                around = ", ".join(o.loop_var.name for o in outer)
                raise Fail(f"loop {name} is parallel, but it sits inside loop(s) {around}: the "
                           "runtime starts a new parallel region, handing out chunks to the "
                           "threads, for every iteration of the loops around it",
                           "reorder so that a spatial loop is the outermost loop, and "
                           "parallelize that one: then the threads start once per call")
            extent = getattr(loop.extent, "value", None)
            if isinstance(extent, int) and extent < 2:
                raise Fail(f"the parallel loop {name} has {extent} iteration: one thread gets "
                           "all the work", "parallelize a loop with many iterations")
            if "launcher" not in kernel.llvm_ir():
                raise Fail("a loop is marked parallel, but the compiled kernel never calls the "
                           "runtime's launcher")
    return (f"the outer loop runs on the thread pool and the result equals numpy on "
            f"{len(sizes)} fresh sizes, with 1 and 2 threads")


# --- 04.flatten_index ------------------------------------------------------------------------
def _table(answer, shape: tuple[int, ...]) -> np.ndarray:
    """Run ``answer(indices, shape)`` for every index of ``shape`` (in the interpreter)."""
    from ..tir.expr import Buffer, as_expr
    from ..tir.interpreter import interpret
    from ..tir.stmt import BufferStore
    names = "ijklmn"
    indices = tuple(Var(names[d], "int32") for d in range(len(shape)))
    if answer is None:
        raise NotImplementedAnswer("got None instead of your function flat_index")
    if not callable(answer):
        raise Fail(f"expected your function flat_index, got {type(answer).__name__}",
                   about_inputs=False)
    try:
        expr = answer(indices, shape)
    except NotImplementedError:
        raise NotImplementedAnswer("flat_index raised NotImplementedError; replace the "
                                   "`raise NotImplementedError` line with your code") from None
    except Exception as err:  # noqa: BLE001 - any error in student code is reported, not raised
        raise Fail(f"flat_index raised {type(err).__name__}: {err}{student_line(err)}") from None
    names_shown = ", ".join(v.name for v in indices) + ("," if len(indices) == 1 else "")
    shown = f"flat_index(({names_shown}), {shape})"
    if isinstance(expr, (list, tuple)):
        raise Fail(f"{shown} returned a {type(expr).__name__}; return one expression, the "
                   "position of the element in the flat buffer")
    if isinstance(expr, (int, np.integer)) and not isinstance(expr, bool):
        expr = as_expr(int(expr))
    if not isinstance(expr, PrimExpr):
        raise Fail(f"{shown} returned {type(expr).__name__} {expr!r:.60}; build the index "
                   "with + and * from the index expressions (they are loop-IR expressions)")
    if expr.dtype != "int32":
        raise Fail(f"{shown} has dtype {expr.dtype}, expected an int32 index: use // (not /) "
                   "if you divide, and only integers")
    from ..tir.analysis import free_vars
    stray = [v.name for v in free_vars(expr) if all(v is not x for x in indices)]
    if stray:
        raise Fail(f"{shown} uses variable(s) {', '.join(stray)}, which are not among the "
                   "indices it was given")
    out = Buffer("flat", shape, "int32")
    body = BufferStore(out, expr, indices)
    for var, extent in reversed(list(zip(indices, shape))):
        body = For(var, extent, body)
    table = np.full(shape, -1, dtype="int32")
    try:
        interpret(PrimFunc("flat_index", (out,), body), table)
    except MLCError as err:
        raise Fail(f"evaluating {shown} for every index raised {type(err).__name__}: "
                   f"{err}") from None
    return table


def _flatten_mistakes(shape: tuple[int, ...]) -> list[tuple[np.ndarray, str]]:
    idx = np.indices(shape)
    last = len(shape) - 1
    own = sum(idx[d] * shape[d] for d in range(last)) + idx[last]
    next_only = sum(idx[d] * shape[d + 1] for d in range(last)) + idx[last]
    return [
        (np.arange(int(np.prod(shape))).reshape(shape, order="F"),
         "that is column-major (Fortran) order, where the first index changes fastest; numpy "
         "and mlcbook store row-major: the last index changes fastest, so its stride is 1"),
        (own, "each index was multiplied by the size of its own dimension; the stride of "
              "dimension d is the product of the sizes of all dimensions *after* d"),
        (next_only, "each index was multiplied by the size of the next dimension only; the "
                    "stride of dimension d is the product of the sizes of *all* dimensions "
                    "after d (for 2-D the two agree, from 3-D on they do not)"),
    ]


@exercise("04.flatten_index", points=2, answer="flat_index",
          title="The row-major flattening rule of lowering")
def _check_flatten(answer, rng):
    shapes = [(int(rng.integers(2, 9)),)] + [
        tuple(int(d) for d in rng.choice(np.arange(2, 8), ndim, replace=False))
        for ndim in (2, 3, 4)]
    for shape in shapes:
        got = _table(answer, shape)
        size = int(np.prod(shape))
        want = np.arange(size, dtype=np.int64).reshape(shape)
        if np.array_equal(got, want):
            continue
        first = tuple(int(i) for i in np.argwhere(got != want)[0])
        msg = (f"for shape {shape}, element {first} got flat index {int(got[first])}, "
               f"expected {int(want[first])}")
        hint = next((h for table, h in _flatten_mistakes(shape) if np.array_equal(got, table)),
                    None)
        raise Fail(msg, hint)
    return f"row-major flat indices are right for {len(shapes)} fresh shapes, 1-D to 4-D"


# --- 04.matmul_speed -------------------------------------------------------------------------
#: (fraction of numpy's speed, points) — a correct kernel earns at least 1 point
SPEED_STEPS = ((0.15, 4), (0.08, 3), (0.03, 2))


def _seconds(run, budget: float = 0.02) -> float:
    """Time one repetition of ``run``: enough calls to fill ``budget`` seconds."""
    t0 = time.perf_counter()
    run()
    first = time.perf_counter() - t0
    number = max(1, min(100, int(budget / max(first, 1e-6))))
    if number == 1:
        return first
    t0 = time.perf_counter()
    for _ in range(number):
        run()
    return (time.perf_counter() - t0) / number


def _speed_vs_numpy(kernel, A, B, C, repeat: int = 5) -> tuple[float, float]:
    """Median seconds per call of the kernel and of numpy's matmul, measured alternately so
    that both see the same load on the machine."""
    ptrs = kernel.check_args((A, B, C))
    out = np.empty_like(C)
    kernel.run_unchecked(ptrs)  # warm-up
    np.matmul(A, B, out=out)
    t0 = time.perf_counter()
    kernel.run_unchecked(ptrs)
    if time.perf_counter() - t0 > 1.0:  # a very slow kernel: its one run is measurement enough
        repeat = 1
    ours, theirs = [], []
    for _ in range(repeat):
        ours.append(_seconds(lambda: kernel.run_unchecked(ptrs)))
        theirs.append(_seconds(lambda: np.matmul(A, B, out=out)))
    return float(np.median(ours)), float(np.median(theirs))


def _unchanged(sch, func: PrimFunc) -> bool:
    from ..tir.structural import structural_equal
    return structural_equal(sch.func, func)


@exercise("04.matmul_speed", points=4, answer="schedule_matmul",
          title="Schedule a matmul of awkward sizes for speed")
def _check_matmul_speed(answer, rng):
    small = (4 * int(rng.integers(2, 6)), 16 * int(rng.integers(1, 4)), int(rng.integers(3, 40)))
    big = (4 * int(rng.integers(118, 132)), 16 * int(rng.integers(17, 21)),
           int(rng.integers(380, 421)))
    for n, m, k in (small, big):
        func = matmul(n, m, k)
        A, B = randn(rng, (n, k)), randn(rng, (k, m))
        with trial(f"the {n}x{k} @ {k}x{m} matmul"):
            sch = _apply(answer, "schedule_matmul", _schedule(func))
            _expect_program(sch, func, "schedule_matmul")
            if _unchanged(sch, func):
                raise Fail("schedule_matmul left the program unchanged: that is the naive loop "
                           "nest, about 100 to 500 times slower than numpy",
                           "start with the steps of the chapter's climb: reorder, a register "
                           "tile with split, unroll and vectorize, then parallel")
            kernel = _build(sch.mod)
            C = np.empty((n, m), dtype="float32")
            kernel(A, B, C)
            expect_array("C", C, A.astype(np.float64) @ B, rtol=1e-3, atol=1e-3)
    t_ours, t_numpy = _speed_vs_numpy(kernel, A, B, C)
    ratio = t_numpy / t_ours
    gflops = 2 * n * m * k / t_ours / 1e9
    points = next((p for threshold, p in SPEED_STEPS if ratio >= threshold), 1)
    message = (f"correct on {small[0]}x{small[2]} @ {small[2]}x{small[1]} and "
               f"{n}x{k} @ {k}x{m}; {gflops:.1f} GFLOP/s = {ratio:.3f}x numpy "
               f"({2 * n * m * k / t_numpy / 1e9:.1f} GFLOP/s, measured in this check, "
               "medians of 5)")
    if points == 4:
        return message
    nxt = next(threshold for threshold, p in reversed(SPEED_STEPS) if p == points + 1)
    return Partial(points, f"{message}: {points}/4 points; {nxt}x numpy earns the next point, "
                           f"{SPEED_STEPS[0][0]}x all 4. Hint: a split whose factor does not "
                           "divide its loop leaves a bounds test in the innermost loop; keep "
                           "a register tile of C (unroll x vectorize) across the k loop, and "
                           "parallelize the outermost loop")
