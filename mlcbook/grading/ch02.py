"""Checkers for chapter 2, *Loop IR*: programs written in mlcbook's script and in TE.

Every exercise is a Python function that *builds* a program for the sizes it is given
(``make_bmm_relu(BATCH, N, M, K)`` returns a PrimFunc), so a check can ask for programs of
fresh sizes, run each one in the interpreter on random inputs and compare with numpy.
Script exercises are also graded on their blocks: an iteration variable that the block's
stores do not index must be ``reduce``, one they do index must be ``spatial``.
"""

from __future__ import annotations

import numpy as np

from ..errors import MLCError
from ..tir.analysis import collect_blocks, free_vars
from ..tir.arith import int_bounds
from ..tir.expr import BufferLoad
from ..tir.function import IRModule, PrimFunc
from ..tir.functor import Visitor
from ..tir.interpreter import interpret
from ..tir.stmt import Allocate, BlockRealize, BufferStore, For, IfThenElse, SeqStmt
from .compare import (GLOBAL_MAX_HINT, SENTINEL, Fail, call, describe, distinct_dims, empty,
                      expect_array, randn, softmax_cases, softmax_global_max, softmax_reference,
                      trial)
from .registry import exercise


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


# --- building and running the student's program ----------------------------------------------
def _build(answer, name: str, *sizes: int) -> PrimFunc:
    """``answer(*sizes)``, which must return a PrimFunc."""
    func = call(answer, name, *sizes)
    shown = f"{name}({', '.join(str(s) for s in sizes)})"
    if func is None:
        raise Fail(f"{shown} returned None: end {name} with `return` and the program you "
                   "built (the name of your @T.prim_func, or the result of "
                   "te.create_prim_func)", about_inputs=False)
    if isinstance(func, IRModule):
        raise Fail(f"{shown} returned an IRModule; return the PrimFunc itself (e.g. "
                   "mod['main'])", about_inputs=False)
    if not isinstance(func, PrimFunc):
        raise Fail(f"{shown} returned {type(func).__name__} {func!r:.60}; it should return "
                   "the PrimFunc built with @T.prim_func or te.create_prim_func",
                   about_inputs=False)
    return func


def _expect_params(func: PrimFunc, name: str, sizes: tuple[int, ...],
                   expected: list[tuple[str, tuple[int, ...]]]) -> None:
    """The parameters must be ``expected`` (role, shape) pairs, all float32, the last the
    only output."""
    shown = f"{name}({', '.join(str(s) for s in sizes)})"
    want = ", ".join(f"{role} {shape}" for role, shape in expected)
    if len(func.params) != len(expected):
        got = ", ".join(f"{p.name} {p.shape}" for p in func.params)
        raise Fail(f"the program built by {shown} has {len(func.params)} parameter(s) ({got}); "
                   f"expected {len(expected)}: {want}")
    for index, (param, (role, shape)) in enumerate(zip(func.params, expected)):
        if param.shape != tuple(shape):
            raise Fail(f"wrong shape: parameter #{index + 1} ({param.name}, the {role}) of the "
                       f"program built by {shown} has shape {param.shape}, expected {shape}",
                       _shape_hint(param.shape, tuple(shape), expected, name))
        if param.dtype != "float32":
            raise Fail(f"parameter {param.name} has dtype {param.dtype!r}; every buffer of "
                       "this exercise is \"float32\"")
    if func.num_outputs != 1:
        raise Fail(f"the program has {func.num_outputs} outputs; it has one, its last "
                   f"parameter ({expected[-1][0]}): leave out num_outputs in @T.prim_func")


def _shape_hint(got: tuple, want: tuple, expected: list, name: str) -> str:
    others = [role for role, shape in expected if tuple(shape) == got]
    if others:
        return (f"that is the shape of the {others[0]}: the parameters go in the order "
                f"{', '.join(role.split()[-1] for role, _ in expected)}")
    if sorted(got) == sorted(want):
        return "the dimensions are in the wrong order"
    if len(got) == len(want) and all(abs(g - w) <= 1 for g, w in zip(got, want)):
        dims = [d for d, (g, w) in enumerate(zip(got, want)) if g != w]
        return (f"dimension {dims[0]} is off by one: check how you compute it from the sizes "
                f"passed to {name}")
    return f"build every shape from the sizes passed to {name}, not from fixed numbers"


def _run(func: PrimFunc, *inputs: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
    """Interpret ``func`` on ``inputs``; the output starts filled with the sentinel."""
    out = empty(out_shape)
    out[...] = SENTINEL
    try:
        interpret(func, *inputs, out)
    except MLCError as err:
        raise Fail(f"running your program in the interpreter raised {type(err).__name__}: "
                   f"{err}") from None
    return out


def _expect_no_poison(name: str, got: np.ndarray, expected: np.ndarray) -> None:
    """Fail if ``got`` holds NaN where ``expected`` is finite, in a program without
    division or exp: there the NaN comes from a read of memory nobody wrote."""
    poisoned = np.isnan(got) & np.isfinite(expected)
    if poisoned.any():
        idx = tuple(int(i) for i in np.argwhere(poisoned)[0])
        at = f"{name}[{', '.join(str(i) for i in idx)}]"
        raise Fail(f"{at} is nan, expected {float(expected[idx]):.6g} ({int(poisoned.sum())} of "
                   f"{poisoned.size} entries are nan): the program read an element of an "
                   "intermediate buffer before writing it (the interpreter fills fresh buffers "
                   "with NaN to show exactly this)",
                   "check the loop ranges of the block that fills the buffer, and that it "
                   "runs before the block that reads it")


# --- what blocks say -------------------------------------------------------------------------
class _Stores(Visitor):
    """The stores of one block body, not descending into nested blocks."""

    def __init__(self):
        self.stores: list[BufferStore] = []

    def visit_BufferStore(self, s: BufferStore) -> None:
        self.stores.append(s)

    def visit_BlockRealize(self, s: BlockRealize) -> None:
        pass  # a nested block's stores are its own


def _block_stores(block) -> list[BufferStore]:
    v = _Stores()
    v.visit(block.body)
    if block.init is not None:
        v.visit(block.init)
    return v.stores


def _check_axis_kinds(func: PrimFunc, reduction: str | None) -> None:
    """Each block iteration variable's kind must match how the block's stores use it.

    A variable the written indices do not mention means every one of its values updates the
    same element: the block accumulates over it, so it is ``reduce``. A variable they do
    mention picks a different element per value: ``spatial``. If ``reduction`` is given,
    some block must reduce (it names what is summed, for the message).
    """
    has_reduce = False
    blocks = [r.block for r in collect_blocks(func.body)]
    for block in blocks:
        if block.name == "root" and not block.iter_vars:
            continue
        stores = _block_stores(block)
        if not stores:
            continue
        _check_init(block, stores, blocks)
        written = {id(v) for s in stores for i in s.indices for v in free_vars(i)}
        shown = str(BufferLoad(stores[0].buffer, stores[0].indices))
        for iv in block.iter_vars:
            name = iv.var.name
            if iv.kind == "spatial" and id(iv.var) not in written:
                raise Fail(
                    f"block {block.name!r}: iteration variable {name} is spatial, but it "
                    f"should be reduce: the block writes {shown}, the same element for every "
                    f"value of {name}, so the block accumulates over {name}",
                    f"declare it with {name} = T.axis.reduce(extent, loop) or with the letter R "
                    "in T.axis.remap; the init then runs once per element, not once per "
                    "iteration", about_inputs=False)
            if iv.kind == "reduce" and id(iv.var) in written:
                raise Fail(
                    f"block {block.name!r}: iteration variable {name} is reduce, but it should "
                    f"be spatial: the block writes {shown}, a different element for each value "
                    f"of {name}",
                    f"declare it with {name} = T.axis.spatial(extent, loop) or with the letter S "
                    "in T.axis.remap", about_inputs=False)
            has_reduce = has_reduce or iv.kind == "reduce"
    if reduction is not None and not has_reduce:
        raise Fail(f"no block has a reduce iteration variable, but the program sums over "
                   f"{reduction}",
                   "make the sum a block of its own whose reduce axis runs over the sum, with "
                   "`with T.init():` setting the element to 0, as block Y of mm_relu does; "
                   "a loop inside a block hides the reduction from the compiler",
                   about_inputs=False)


def _check_init(block, stores: list[BufferStore], blocks: list) -> None:
    """A block that reduces must start each element's sum: with ``T.init()``, or by a block of
    its own that writes the buffer first (what decompose_reduction makes)."""
    reduce = [iv.var.name for iv in block.iter_vars if iv.kind == "reduce"]
    if not reduce or block.init is not None:
        return
    buffer = stores[0].buffer
    if any(other is not block and any(s.buffer is buffer for s in _block_stores(other))
           for other in blocks):
        return
    shown = str(BufferLoad(buffer, stores[0].indices))
    raise Fail(f"block {block.name!r} reduces over {', '.join(reduce)} but has no "
               f"`with T.init():`, so nothing sets {shown} before the first update adds to "
               "it: the sum starts from whatever the buffer held",
               f"put `with T.init(): {shown} = T.float32(0)` in block {block.name!r}, before "
               "the update; it runs once per element, on the first step of the reduction",
               about_inputs=False)


def _int(e) -> int | None:
    """The value of a constant integer expression such as ``16 // 4``, else None."""
    b = int_bounds(e, {})
    return b[0] if b is not None and b[0] == b[1] else None


def _loops_of(func: PrimFunc) -> dict[str, tuple[list[For], BlockRealize]]:
    """For each block name: the loops around it (outermost first, counted from the nearest
    enclosing block) and its BlockRealize."""
    out: dict[str, tuple[list[For], BlockRealize]] = {}

    def walk(node, loops):
        if isinstance(node, For):
            walk(node.body, loops + [node])
        elif isinstance(node, BlockRealize):
            out[node.block.name] = (loops, node)
            walk(node.block.body, [])
        elif isinstance(node, SeqStmt):
            for s in node.stmts:
                walk(s, loops)
        elif isinstance(node, IfThenElse):
            walk(node.then_case, loops)
            if node.else_case is not None:
                walk(node.else_case, loops)
        elif isinstance(node, Allocate):
            walk(node.body, loops)

    walk(func.body, [])
    return out


# --- 02.bmm_relu -----------------------------------------------------------------------------
@exercise("02.bmm_relu", points=2, answer="make_bmm_relu",
          title="bmm_relu in script, with the right block axes")
def _check_bmm_relu(answer, rng):
    cases = [distinct_dims(rng, 4), distinct_dims(rng, 4), [1, int(rng.integers(2, 6)), 3, 1]]
    for batch, n, m, k in cases:
        sizes = (batch, n, m, k)
        func = _build(answer, "make_bmm_relu", *sizes)
        _expect_params(func, "make_bmm_relu", sizes,
                       [("input A", (batch, n, k)), ("input B", (batch, k, m)),
                        ("output C", (batch, n, m))])
        _check_axis_kinds(func, reduction="k (the shared dimension of A and B)")
        A, B = randn(rng, (batch, n, k)), randn(rng, (batch, k, m))
        with trial(describe(A=A, B=B)):
            C = _run(func, A, B, out_shape=(batch, n, m))
            _expect_no_poison("C", C, _relu(np.matmul(A.astype(np.float64), B)))
            expect_array("C", C, _relu(np.matmul(A.astype(np.float64), B)), mistakes=[
                (lambda: np.matmul(A, B), "C equals A @ B: apply relu to the finished sums, "
                                          "C[...] = T.max(Y[...], T.float32(0))"),
                (lambda: _relu(np.matmul(A, B[:1])), "every batch was multiplied by B[0]: "
                                                     "index B with the batch variable too"),
                (lambda: _relu(np.matmul(A[:1], B)), "every batch used A[0]: index A with "
                                                     "the batch variable too"),
            ])
    return f"relu(A @ B) with a reduce axis over k, on {len(cases)} fresh sizes"


# --- 02.conv2d -------------------------------------------------------------------------------
def _conv2d(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    kh, kw = W.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(X.astype(np.float64), (kh, kw),
                                                       axis=(2, 3))
    return np.einsum("ncyxhw,ochw->noyx", windows, W.astype(np.float64))


@exercise("02.conv2d", points=3, answer="make_conv2d",
          title="2-D convolution (NCHW, valid) in script")
def _check_conv2d(answer, rng):
    cases = [  # (N, CI, H, W, CO, KH, KW)
        (1, 2, 6, 7, 3, 3, 2),
        (2, 3, int(rng.integers(5, 9)), int(rng.integers(5, 9)), 2, 3, 3),
        (1, 1, 4, 5, 2, 1, 1),
    ]
    for sizes in cases:
        N, CI, H, W_, CO, KH, KW = sizes
        OH, OW = H - KH + 1, W_ - KW + 1
        func = _build(answer, "make_conv2d", *sizes)
        _expect_params(func, "make_conv2d", sizes,
                       [("input X", (N, CI, H, W_)), ("weight Wt", (CO, CI, KH, KW)),
                        ("output Y", (N, CO, OH, OW))])
        _check_axis_kinds(func, reduction="the input channels and the kernel window")
        X, Wt = randn(rng, (N, CI, H, W_)), randn(rng, (CO, CI, KH, KW))
        with trial(describe(X=X, Wt=Wt)):
            Y = _run(func, X, Wt, out_shape=(N, CO, OH, OW))
            _expect_no_poison("Y", Y, _conv2d(X, Wt))
            expect_array("Y", Y, _conv2d(X, Wt), mistakes=[
                (lambda: _conv2d(X, Wt[:, :, ::-1, ::-1]),
                 "Y is a convolution with the kernel flipped; deep-learning conv2d does not "
                 "flip: Y[n, co, y, x] sums X[n, ci, y + dy, x + dx] * Wt[co, ci, dy, dx]"),
                (lambda: _conv2d(X[:, :1], Wt[:, :1]),
                 "only input channel 0 was used: sum over every input channel ci too"),
            ])
    return f"matches the reference conv2d on {len(cases)} fresh shapes"


# --- 02.te_linear_relu -----------------------------------------------------------------------
@exercise("02.te_linear_relu", points=1, answer="make_linear_relu",
          title="linear + relu with te.compute")
def _check_te_linear_relu(answer, rng):
    cases = [distinct_dims(rng, 3), distinct_dims(rng, 3), [1, int(rng.integers(2, 6)), 1]]
    for n, m, k in cases:
        sizes = (n, m, k)
        func = _build(answer, "make_linear_relu", *sizes)
        _expect_params(func, "make_linear_relu", sizes,
                       [("input X", (n, k)), ("weight W", (m, k)), ("bias B", (m,)),
                        ("output Y", (n, m))])
        X, W, B = randn(rng, (n, k)), randn(rng, (m, k)), randn(rng, (m,))
        with trial(describe(X=X, W=W, B=B)):
            Y = _run(func, X, W, B, out_shape=(n, m))
            lin = X.astype(np.float64) @ W.T.astype(np.float64)
            expect_array("Y", Y, _relu(lin + B), mistakes=[
                (lambda: lin + B, "Y equals X @ W.T + B: apply relu (mb.tir.max(x, 0.0)) in a "
                                  "last stage"),
                (lambda: _relu(lin), "the bias is missing: add B[j] to each sum"),
                (lambda: _relu(lin) + B, "relu was applied before adding the bias; add B "
                                         "first, then take relu"),
            ])
    return f"matches relu(X @ W.T + B) on {len(cases)} fresh sizes"


# --- 02.te_softmax ---------------------------------------------------------------------------
@exercise("02.te_softmax", points=2, answer="make_softmax",
          title="Numerically stable softmax with te.compute")
def _check_te_softmax(answer, rng):
    cases = softmax_cases(rng, "(a te.max stage) ")
    for X, note, hint in cases:
        func = _build(answer, "make_softmax", *X.shape)
        _expect_params(func, "make_softmax", X.shape,
                       [("input X", X.shape), ("output Y", X.shape)])
        with trial(describe(X=X) + note, hint=hint):
            Y = _run(func, X, out_shape=X.shape)
            expect_array("Y", Y, softmax_reference(X, axis=1), rtol=1e-4, atol=1e-6, mistakes=[
                (lambda: softmax_reference(X, axis=0), "Y is the softmax of each column (axis 0); "
                                              "softmax here runs along each row (axis 1)"),
                (lambda: np.exp(X.astype(np.float64) - X.max(axis=1, keepdims=True)),
                 "the rows of Y do not sum to 1: divide by the row's sum of exponentials"),
                (lambda: softmax_global_max(X), GLOBAL_MAX_HINT),
                (lambda: softmax_global_max(X, np.float32), GLOBAL_MAX_HINT),
            ])
    return (f"matches softmax along the last axis on {len(cases)} inputs, including large "
            "values and rows far apart")


# --- 02.loop_order ---------------------------------------------------------------------------
_SPLIT = 4


def _binding_at(expr, point: dict) -> int | None:
    b = int_bounds(expr, {v: (x, x) for v, x in point.items()})
    return b[0] if b is not None and b[0] == b[1] else None


def _loop_list(loops: list[For]) -> str:
    """``"i: 4, j0: 3"``, extents folded (``12 // 4`` shows as 3)."""
    shown = []
    for lp in loops:
        extent = _int(lp.extent)
        shown.append(f"{lp.loop_var.name}: {lp.extent if extent is None else extent}")
    return ", ".join(shown)


def _check_split_structure(func: PrimFunc, N: int, M: int, K: int) -> None:
    nests = _loops_of(func)
    for name in ("Y", "C"):
        if name not in nests:
            raise Fail(f"the program has no block named {name!r} (it has "
                       f"{', '.join(repr(b) for b in nests if b != 'root') or 'none'}); name "
                       "the matmul block \"Y\" and the relu block \"C\", as in mm_relu",
                       about_inputs=False)
    loops_y, realize_y = nests["Y"]
    want = (N, M // _SPLIT, K, _SPLIT)
    got = tuple(_int(lp.extent) for lp in loops_y)
    if got != want:
        shown = _loop_list(loops_y)
        raise Fail(f"the loops around block 'Y' are ({shown}) from outermost to innermost; "
                   f"expected i: {N}, j0: {M // _SPLIT}, k: {K}, j1: {_SPLIT}",
                   "split j into j0 (M // 4) and j1 (4) and put k between them")
    i, j0, k, j1 = (lp.loop_var for lp in loops_y)
    block = realize_y.block
    if len(block.iter_vars) != 3:
        raise Fail(f"block 'Y' has {len(block.iter_vars)} iteration variables; it has three, "
                   "vi, vj (spatial) and vk (reduce), in that order", about_inputs=False)
    if [iv.kind for iv in block.iter_vars] != ["spatial", "spatial", "reduce"]:
        raise Fail("block 'Y' declares its iteration variables in the order "
                   f"{', '.join(f'{iv.var.name} ({iv.kind})' for iv in block.iter_vars)}; "
                   "declare vi, vj (spatial) and vk (reduce), in that order",
                   about_inputs=False)
    names = [iv.var.name for iv in block.iter_vars]
    expected = [("row", "i", lambda p: p[i]),
                ("column", "j0 * 4 + j1", lambda p: p[j0] * _SPLIT + p[j1]),
                ("reduction", "k", lambda p: p[k])]
    points = [{i: a, j0: b, k: c, j1: d}
              for a, b, c, d in [(0, 0, 0, 0), (N - 1, M // _SPLIT - 1, K - 1, _SPLIT - 1),
                                 (N // 2, 1, K // 2, 1), (1, M // _SPLIT - 1, 0, 2)]]
    for value, name, (role, formula, reference) in zip(realize_y.iter_values, names, expected):
        if any(_binding_at(value, p) != reference(p) for p in points):
            raise Fail(f"block 'Y': iteration variable {name} (the {role}) is bound to {value}; "
                       f"expected {formula}",
                       "j1, the innermost loop, walks 4 neighbouring columns: vj = j0 * 4 + j1")
    loops_c, _ = nests["C"]
    got_c = tuple(_int(lp.extent) for lp in loops_c)
    if (len(loops_c) != 3 or loops_c[0] is not loops_y[0] or loops_c[1] is not loops_y[1]
            or got_c[2] != _SPLIT):
        shown = _loop_list(loops_c)
        raise Fail(f"the loops around block 'C' are ({shown}); expected the loops i and j0 it "
                   "shares with block 'Y', then one loop of 4",
                   "put the relu loop inside the j0 loop, after the k loop, so each strip of "
                   "4 columns gets its relu right after its sums are finished")


@exercise("02.loop_order", points=2, answer="make_mm_relu_split",
          title="mm_relu with j split and the relu moved in")
def _check_loop_order(answer, rng):
    # K is never 4, so that loops k and j1 in the wrong order show in their extents
    cases = [(int(rng.integers(2, 6)), _SPLIT * int(rng.integers(2, 5)),
              int(rng.choice([2, 3, 5, 6, 7]))), (3, 8, 5), (1, _SPLIT, 1)]
    for N, M, K in cases:
        func = _build(answer, "make_mm_relu_split", N, M, K)
        _expect_params(func, "make_mm_relu_split", (N, M, K),
                       [("input A", (N, K)), ("input B", (K, M)), ("output C", (N, M))])
        _check_axis_kinds(func, reduction="k")
        with trial(f"sizes N={N}, M={M}, K={K}"):
            _check_split_structure(func, N, M, K)
        A, B = randn(rng, (N, K)), randn(rng, (K, M))
        with trial(describe(A=A, B=B)):
            C = _run(func, A, B, out_shape=(N, M))
            _expect_no_poison("C", C, _relu(A.astype(np.float64) @ B))
            expect_array("C", C, _relu(A.astype(np.float64) @ B), mistakes=[
                (lambda: A @ B, "C equals A @ B: block 'C' must apply relu"),
            ])
    return (f"loops (i, j0, k, j1) with the relu under j0, equal to relu(A @ B) on "
            f"{len(cases)} fresh sizes")

