"""What loop-IR programs compute: every construct against a hand-computed numpy result.

Every test runs twice, once with the reference evaluator (``mb.tir.evaluate``, the
specification) and once with the fast interpreter (``mb.tir.interpret``): the module-level
name ``interpret`` is each of them in turn.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mlcbook as mb
from mlcbook.errors import (ArgumentError, BindingMismatchError, ExecutionError,
                            IndexOutOfBoundsError, TIRError, UndefinedVariableError)
from mlcbook.tir import (Allocate, Block, BlockRealize, Buffer, BufferRegion, BufferStore,
                         Evaluate, For, IfThenElse, IRModule, IterVar, PrimFunc, SeqStmt, Var,
                         cast, const, interpret, root_block_realize, seq)

from ._programs import matmul

RNG = np.random.default_rng(0)
RUNNERS = {"evaluate": mb.tir.evaluate, "interpret": mb.tir.interpret}


@pytest.fixture(autouse=True, scope="module", params=sorted(RUNNERS))
def runner(request):
    """Run the module's tests with ``interpret`` bound to each runner."""
    global interpret
    interpret = RUNNERS[request.param]
    yield request.param
    interpret = mb.tir.interpret


def _map(fn, in_dtypes, out_dtype, n=8):
    """Out[i] = fn(X0[i], X1[i], ...) over plain loops (no blocks)."""
    ins = [Buffer(f"X{k}", (n,), dt) for k, dt in enumerate(in_dtypes)]
    out = Buffer("Out", (n,), out_dtype)
    i = Var("i")
    body = For(i, n, BufferStore(out, fn(*[b[i] for b in ins]), (i,)))
    return PrimFunc("map", (*ins, out), body)


def _run_map(fn, out_dtype, *inputs):
    f = _map(fn, [a.dtype.name for a in inputs], out_dtype, inputs[0].shape[0])
    out = np.zeros(inputs[0].shape, out_dtype)
    interpret(f, *inputs, out)
    return out


def _block_map(name, n, out, value_of, reads=(), binding=lambda i: i, predicate=True):
    """for i in range(n): a block over vi in [0, n), vi = binding(i), out[vi] = value_of(vi)."""
    i, vi = Var("i"), Var("vi")
    block = Block(name, (IterVar(vi, n),), tuple(BufferRegion.full(b) for b in reads),
                  (BufferRegion.point(out, (vi,)),), BufferStore(out, value_of(vi), (vi,)))
    return For(i, n, BlockRealize((binding(i),), predicate, block))


# --- blocks, loops, statements ----------------------------------------------------------------
def test_matmul_with_init_matches_numpy_on_odd_shapes():
    f = matmul(7, 5, 3)
    a = RNG.standard_normal((7, 3)).astype("float32")
    b = RNG.standard_normal((3, 5)).astype("float32")
    c = np.full((7, 5), 99.0, "float32")  # garbage: init must reset it
    interpret(f, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)



def test_init_runs_only_when_every_reduce_var_is_zero():
    # S[vi] = sum over (vk, vl) of A[vi, vk, vl]; the reduce vars are bound to k, l.
    A, S = Buffer("A", (3, 4, 5)), Buffer("S", (3,))
    i, k, l, vi, vk, vl = (Var(n) for n in ("i", "k", "l", "vi", "vk", "vl"))
    block = Block("S", (IterVar(vi, 3), IterVar(vk, 4, "reduce"), IterVar(vl, 5, "reduce")),
                  (BufferRegion.full(A),), (BufferRegion.point(S, (vi,)),),
                  BufferStore(S, S[vi] + A[vi, vk, vl], (vi,)),
                  init=BufferStore(S, const(0.0, "float32"), (vi,)))
    body = For(i, 3, For(k, 4, For(l, 5, BlockRealize((i, k, l), True, block))))
    f = PrimFunc("sum2", (A, S), root_block_realize(body))
    a = RNG.standard_normal((3, 4, 5)).astype("float32")
    s = np.full(3, 7.0, "float32")
    interpret(f, a, s)
    np.testing.assert_allclose(s, a.sum(axis=(1, 2)), rtol=1e-5)


def test_init_without_reduce_vars_runs_every_time():
    B = Buffer("B", (4,))
    body = _block_map("b", 4, B, lambda vi: B[vi] + 1.0)
    blk = body.body.block
    block = Block("b", blk.iter_vars, blk.reads, blk.writes, blk.body,
                  init=BufferStore(B, const(10.0, "float32"), (blk.iter_vars[0].var,)))
    f = PrimFunc("f", (B,), For(body.loop_var, 4, BlockRealize(body.body.iter_values, True, block)))
    b = np.zeros(4, "float32")
    interpret(f, b)
    np.testing.assert_array_equal(b, np.full(4, 11.0))


def test_block_binding_and_predicate_skip_iterations():
    # a split loop: vi = io * 4 + ii over 3 * 4 = 12 iterations, predicate vi < 10
    A, B = Buffer("A", (10,)), Buffer("B", (10,))
    io, ii, vi = Var("io"), Var("ii"), Var("vi")
    block = Block("B", (IterVar(vi, 10),), (BufferRegion.point(A, (vi,)),),
                  (BufferRegion.point(B, (vi,)),), BufferStore(B, A[vi] * 2.0, (vi,)))
    realize = BlockRealize((io * 4 + ii,), io * 4 + ii < 10, block)
    f = PrimFunc("f", (A, B), root_block_realize(For(io, 3, For(ii, 4, realize))))
    a = np.arange(10, dtype="float32")
    b = np.zeros(10, "float32")
    interpret(f, a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_false_constant_predicate_skips_the_block():
    B = Buffer("B", (4,))
    f = PrimFunc("f", (B,), _block_map("b", 4, B, lambda vi: const(1.0, "float32"),
                                       predicate=False))
    b = np.full(4, 5.0, "float32")
    interpret(f, b)
    np.testing.assert_array_equal(b, np.full(4, 5.0))


def test_block_alloc_buffer_intermediate_mm_relu():
    A, B, C = Buffer("A", (6, 4)), Buffer("B", (4, 5)), Buffer("C", (6, 5))
    Y = Buffer("Y", (6, 5))
    f0 = matmul(6, 5, 4)  # loops i, j, k around block "C"; retarget it to write Y
    A0, B0, C0 = f0.params
    mm = mb.tir.replace_buffers(f0.body.block.body, {A0: A, B0: B, C0: Y})
    i, j, vi, vj = Var("i"), Var("j"), Var("vi"), Var("vj")
    relu = Block("relu", (IterVar(vi, 6), IterVar(vj, 5)), (BufferRegion.point(Y, (vi, vj)),),
                 (BufferRegion.point(C, (vi, vj)),),
                 BufferStore(C, mb.tir.max(Y[vi, vj], 0.0), (vi, vj)))
    body = seq(mm, For(i, 6, For(j, 5, BlockRealize((i, j), True, relu))))
    f = PrimFunc("mm_relu", (A, B, C), root_block_realize(body, (Y,)))
    a = RNG.standard_normal((6, 4)).astype("float32")
    b = RNG.standard_normal((4, 5)).astype("float32")
    c = np.empty((6, 5), "float32")
    interpret(f, a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-5, atol=1e-6)


def test_script_mm_relu_with_root_alloc_buffer():
    from mlcbook.script import T

    @T.prim_func
    def mm_relu(A: T.Buffer((9, 7), "float32"), B: T.Buffer((7, 5), "float32"),
                C: T.Buffer((9, 5), "float32")):
        Y = T.alloc_buffer((9, 5), "float32")
        for i, j, k in T.grid(9, 5, 7):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                T.reads(A[vi, vk], B[vk, vj])
                T.writes(Y[vi, vj])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(9, 5):
            with T.block("C"):
                vi = T.axis.spatial(9, i)
                vj = T.axis.spatial(5, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

    a = RNG.standard_normal((9, 7)).astype("float32")
    b = RNG.standard_normal((7, 5)).astype("float32")
    c = np.empty((9, 5), "float32")
    interpret(mm_relu, a, b, c)
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["serial", "parallel", "vectorized", "unrolled"])
def test_every_loop_kind_runs_all_iterations(kind):
    A, B = Buffer("A", (5,)), Buffer("B", (5,))
    i = Var("i")
    f = PrimFunc("f", (A, B), For(i, 5, BufferStore(B, A[i] + 1.0, (i,)), kind))
    a = np.arange(5, dtype="float32")
    b = np.zeros(5, "float32")
    interpret(f, a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_loops_run_in_order_serially():
    # B[0] accumulates i * 10 + B[0]: the order of iterations is visible
    B = Buffer("B", (1,), "int32")
    i = Var("i")
    f = PrimFunc("f", (B,), For(i, 3, BufferStore(B, B[0] * 10 + i + 1, (0,)), "parallel"))
    b = np.zeros(1, "int32")
    interpret(f, b)
    assert b[0] == 123


def test_loop_extent_depending_on_outer_loop():
    # triangular loop: B[i] = number of j < i + 1
    B = Buffer("B", (4,), "int32")
    i, j = Var("i"), Var("j")
    f = PrimFunc("f", (B,), For(i, 4, seq(BufferStore(B, 0, (i,)),
                                          For(j, i + 1, BufferStore(B, B[i] + 1, (i,))))))
    b = np.zeros(4, "int32")
    interpret(f, b)
    np.testing.assert_array_equal(b, [1, 2, 3, 4])


def test_seq_and_if_then_else():
    B = Buffer("B", (6,), "int32")
    i = Var("i")
    body = For(i, 6, IfThenElse(i % 2 == 0, BufferStore(B, i * 10, (i,)),
                                SeqStmt((BufferStore(B, 1, (i,)), BufferStore(B, B[i] + i, (i,))))))
    f = PrimFunc("f", (B,), body)
    b = np.zeros(6, "int32")
    interpret(f, b)
    np.testing.assert_array_equal(b, [0, 2, 20, 4, 40, 6])


def test_if_without_else_leaves_data_alone():
    B = Buffer("B", (4,), "int32")
    i = Var("i")
    f = PrimFunc("f", (B,), For(i, 4, IfThenElse(i >= 2, BufferStore(B, 9, (i,)))))
    b = np.array([1, 2, 3, 4], "int32")
    interpret(f, b)
    np.testing.assert_array_equal(b, [1, 2, 9, 9])


def test_evaluate_is_a_no_op():
    B = Buffer("B", (2,))
    f = PrimFunc("f", (B,), seq(Evaluate(const(0)), For(Var("i"), 2, Evaluate(const(1)))))
    b = np.array([3.0, 4.0], "float32")
    interpret(f, b)
    np.testing.assert_array_equal(b, [3.0, 4.0])


def test_allocate_is_a_scratch_buffer():
    A, B = Buffer("A", (4,)), Buffer("B", (4,))
    T = Buffer("T", (4,), scope="local")
    i, j = Var("i"), Var("j")
    body = Allocate(T, seq(For(i, 4, BufferStore(T, A[i] * 3.0, (i,))),
                           For(j, 4, BufferStore(B, T[3 - j], (j,)))))
    f = PrimFunc("f", (A, B), body)
    a = np.arange(4, dtype="float32")
    b = np.zeros(4, "float32")
    interpret(f, a, b)
    np.testing.assert_array_equal(b, (a * 3)[::-1])


@pytest.mark.parametrize("dtype, poison", [("float32", np.nan), ("float16", np.nan),
                                           ("int32", -2**31), ("int8", -128), ("uint8", 255),
                                           ("bool", True)])
def test_fresh_allocation_is_poisoned(dtype, poison):
    B = Buffer("B", (3,), dtype)
    T = Buffer("T", (3,), dtype)
    i = Var("i")
    f = PrimFunc("f", (B,), Allocate(T, For(i, 3, BufferStore(B, T[i], (i,)))))
    b = np.zeros(3, dtype)
    interpret(f, b)
    np.testing.assert_array_equal(b, np.full(3, poison, dtype))


def test_block_alloc_buffer_is_fresh_on_every_entry():
    # an inner block allocates T, writes T[0] only when vi == 0, then reads it
    B = Buffer("B", (2,))
    T = Buffer("T", (1,))
    i, vi = Var("i"), Var("vi")
    store = IfThenElse(vi == 0, BufferStore(T, const(1.0, "float32"), (0,)))
    block = Block("b", (IterVar(vi, 2),), (), (BufferRegion.point(B, (vi,)),),
                  seq(store, BufferStore(B, T[0], (vi,))), alloc_buffers=(T,))
    f = PrimFunc("f", (B,), root_block_realize(For(i, 2, BlockRealize((i,), True, block))))
    b = np.zeros(2, "float32")
    interpret(f, b)
    assert b[0] == 1.0 and np.isnan(b[1])


def test_deep_loop_nest_beyond_python_block_limit():
    # 24 nested loops: more than CPython's 20 statically nested blocks in one function
    B = Buffer("B", (8,), "int32")
    loops = [Var(f"i{k}") for k in range(24)]
    index = loops[0] * 4 + loops[1] * 2 + loops[2]
    stmt = BufferStore(B, B[index] + index + 1, (index,))
    for k, v in enumerate(reversed(loops)):
        stmt = For(v, 2 if k >= 21 else 1, stmt)
    f = PrimFunc("f", (B,), stmt)
    b = np.zeros(8, "int32")
    interpret(f, b)
    np.testing.assert_array_equal(b, np.arange(1, 9))


def test_loop_invariant_index_arithmetic_is_not_moved_past_a_guard():
    # B[i, j] = A[6 // i] only when i > 0: 6 // i must not run for i == 0
    A, B = Buffer("A", (7,)), Buffer("B", (3, 2))
    i, j = Var("i"), Var("j")
    body = For(i, 3, For(j, 2, IfThenElse(i > 0, BufferStore(B, A[6 // i] + A[i * 2 + 1], (i, j)))))
    f = PrimFunc("f", (A, B), body)
    a = np.arange(7, dtype="float32") * 10
    b = np.zeros((3, 2), "float32")
    interpret(f, a, b)
    np.testing.assert_array_equal(b, [[0, 0], [60 + 30, 60 + 30], [30 + 50, 30 + 50]])


def test_long_expression_chain_compiles():
    n = 400
    A, B = Buffer("A", (n,)), Buffer("B", (1,))
    e = A[0]
    for k in range(1, n):
        e = e + A[k]
    f = PrimFunc("f", (A, B), BufferStore(B, e, (0,)))
    a = RNG.standard_normal(n).astype("float32")
    b = np.zeros(1, "float32")
    interpret(f, a, b)
    np.testing.assert_allclose(b[0], a.astype("float64").sum(), rtol=1e-5)


def test_too_deep_expression_is_a_clear_error():
    n = 3000
    A, B = Buffer("A", (n,)), Buffer("B", (1,))
    e = A[0]
    for k in range(1, n):
        e = e + A[k]
    f = PrimFunc("f", (A, B), BufferStore(B, e, (0,)))
    with pytest.raises(TIRError, match="MLC-T000.*'f' is too deeply nested.*split"):
        interpret(f, np.ones(n, "float32"), np.zeros(1, "float32"))


def test_zero_dim_buffer():
    A, B = Buffer("A", ()), Buffer("B", ())
    f = PrimFunc("f", (A, B), BufferStore(B, A[()] + 1.0, ()))
    b = np.zeros((), "float32")
    interpret(f, np.array(2.0, "float32"), b)
    assert b == 3.0


def test_non_contiguous_arrays_are_read_and_written():
    f = matmul(4, 4, 4)
    a = RNG.standard_normal((4, 4)).astype("float32")
    b = RNG.standard_normal((4, 4)).astype("float32")
    big = np.zeros((8, 4), "float32")
    c = big[::2]  # a strided view
    interpret(f, a.T, b, c)
    np.testing.assert_allclose(c, a.T @ b, rtol=1e-5, atol=1e-6)
    assert not big[1::2].any()


# --- expressions and dtypes --------------------------------------------------------------------
def test_int_floor_division_and_modulo():
    x = np.array([7, -7, 7, -7, 0, 5, -1, 6], "int32")
    y = np.array([2, 2, -2, -2, 3, 5, 4, -4], "int32")
    np.testing.assert_array_equal(_run_map(lambda a, b: a // b, "int32", x, y), x // y)
    np.testing.assert_array_equal(_run_map(lambda a, b: a % b, "int32", x, y), x % y)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_int_division_and_modulo_by_zero_give_zero_like_numpy(dtype):
    x = np.array([7, -7, 0, 5, -1, 6, 9, -9], dtype)
    y = np.array([0, 0, 0, 2, 0, -4, -2, 3], dtype)
    with np.errstate(divide="ignore"):
        quot, rem = x // y, x % y
    got_q = _run_map(lambda a, b: a // b, dtype, x, y)
    got_r = _run_map(lambda a, b: a % b, dtype, x, y)
    np.testing.assert_array_equal(got_q, quot)
    np.testing.assert_array_equal(got_r, rem)
    assert not got_q[y == 0].any() and not got_r[y == 0].any()


def test_division_by_a_constant_zero_gives_zero():
    x = np.array([7, -7, 0, 1], "int32")
    np.testing.assert_array_equal(_run_map(lambda a: a // const(0), "int32", x), [0] * 4)
    np.testing.assert_array_equal(_run_map(lambda a: a % const(0), "int32", x), [0] * 4)


def test_division_by_a_loop_variable_that_reaches_zero():
    # i - 3 is 0 at i == 3: the divisor is not provably nonzero; i + 1 is
    n = 8
    x, i = Buffer("X", (n,), "int32"), Var("i")
    q, r = Buffer("Q", (n,), "int32"), Buffer("R", (n,), "int32")
    body = For(i, n, seq(BufferStore(q, x[i] // (i - 3), (i,)),
                         BufferStore(r, x[i] % (i + 1), (i,))))
    xs = np.array([-7, 7, 5, 9, -2, 11, -13, 100], "int32")
    got_q, got_r = np.zeros(n, "int32"), np.zeros(n, "int32")
    interpret(PrimFunc("f", (x, q, r), body, num_outputs=2), xs, got_q, got_r)
    idx = np.arange(n, dtype="int32")
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(got_q, xs // (idx - 3))
    np.testing.assert_array_equal(got_r, xs % (idx + 1))
    assert got_q[3] == 0


def test_int_min_divided_by_minus_one_wraps():
    x = np.full(2, np.iinfo("int32").min, "int32")
    y = np.array([-1, 1], "int32")
    with np.errstate(over="ignore"):
        expected = x // y
    np.testing.assert_array_equal(_run_map(lambda a, b: a // b, "int32", x, y), expected)


def test_float_arithmetic_and_ieee_division():
    x = np.array([1.5, -2.0, 0.0, 3.0, 1.0, -1.0, 0.0, 7.0], "float32")
    y = np.array([0.5, 4.0, 0.0, -3.0, 0.0, 0.0, 2.0, 0.25], "float32")
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(_run_map(lambda a, b: a / b, "float32", x, y), x / y)
    np.testing.assert_array_equal(_run_map(lambda a, b: a * b - a + b, "float32", x, y),
                                  x * y - x + y)
    np.testing.assert_array_equal(_run_map(lambda a: -a, "float32", x), -x)


def test_int32_arithmetic_wraps_on_store():
    x = np.array([100000, -100000, 2**31 - 1, 3, 0, 1, -1, 46341], "int32")
    with np.errstate(over="ignore"):
        expected = x * x + x
    np.testing.assert_array_equal(_run_map(lambda a: a * a + a, "int32", x), expected)


def test_min_max_and_nan_propagation():
    x = np.array([1.0, -2.0, np.nan, 3.0, 0.0, 5.0, -1.0, np.nan], "float32")
    y = np.array([2.0, -3.0, 1.0, np.nan, 0.0, 5.0, 4.0, np.nan], "float32")
    np.testing.assert_array_equal(_run_map(mb.tir.min, "float32", x, y), np.minimum(x, y))
    np.testing.assert_array_equal(_run_map(mb.tir.max, "float32", x, y), np.maximum(x, y))
    i = np.array([3, -4, 0, 9, 2, 2, -1, 7], "int64")
    j = np.array([1, 5, 0, -9, 3, 2, -2, 8], "int64")
    np.testing.assert_array_equal(_run_map(mb.tir.max, "int64", i, j), np.maximum(i, j))
    np.testing.assert_array_equal(_run_map(mb.tir.min, "int64", i, j), np.minimum(i, j))


@pytest.mark.parametrize("op, ref", [
    (lambda a, b: a < b, np.less), (lambda a, b: a <= b, np.less_equal),
    (lambda a, b: a > b, np.greater), (lambda a, b: a >= b, np.greater_equal),
    (lambda a, b: a == b, np.equal), (lambda a, b: a != b, np.not_equal)])
def test_comparisons_give_bool(op, ref):
    x = np.array([1.0, 2.0, 3.0, np.nan, -1.0, 0.0, 5.0, 2.0], "float32")
    y = np.array([2.0, 2.0, 1.0, 1.0, -1.0, -0.0, 6.0, np.nan], "float32")
    np.testing.assert_array_equal(_run_map(op, "bool", x, y), ref(x, y))


def test_logical_ops_and_select():
    p = np.array([True, True, False, False, True, False, True, False])
    q = np.array([True, False, True, False, False, True, True, False])
    np.testing.assert_array_equal(_run_map(lambda a, b: a & b, "bool", p, q), p & q)
    np.testing.assert_array_equal(_run_map(lambda a, b: a | b, "bool", p, q), p | q)
    np.testing.assert_array_equal(_run_map(lambda a: ~a, "bool", p), ~p)
    x = np.arange(8, dtype="float32")
    out = _run_map(lambda a, b: mb.tir.select(a, b, -1.0), "float32", p, x)
    np.testing.assert_array_equal(out, np.where(p, x, -1.0))


def test_select_evaluates_only_the_chosen_branch():
    # padding: B[i] = A[i - 1] if 1 <= i <= 4 else 0, with A of size 4 and i in [0, 6)
    A, B = Buffer("A", (4,)), Buffer("B", (6,))
    i = Var("i")
    value = mb.tir.select((i >= 1) & (i <= 4), A[i - 1], 0.0)
    f = PrimFunc("pad", (A, B), For(i, 6, BufferStore(B, value, (i,))))
    a = np.array([1, 2, 3, 4], "float32")
    b = np.empty(6, "float32")
    interpret(f, a, b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4, 0])


def _erf(x):
    return np.vectorize(math.erf)(x.astype("float64"))


@pytest.mark.parametrize("name, ref", [
    ("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt), ("rsqrt", lambda x: 1 / np.sqrt(x)),
    ("tanh", np.tanh), ("sigmoid", lambda x: 1 / (1 + np.exp(-x))), ("erf", _erf),
    ("abs", np.abs), ("floor", np.floor), ("ceil", np.ceil)])
def test_math_calls_match_numpy(name, ref):
    x = np.array([0.5, 1.0, 2.5, 0.01, 3.0, -1.5, -0.3, 7.25], "float32")
    if name in ("log", "sqrt", "rsqrt"):
        x = np.abs(x)
    out = _run_map(getattr(mb.tir, name), "float32", x)
    np.testing.assert_allclose(out, ref(x.astype("float64")).astype("float32"), rtol=1e-6)


def test_math_calls_at_special_values_follow_ieee():
    x = np.array([0.0, -1.0, np.inf, -np.inf, np.nan, 1000.0, -1000.0, -0.0], "float64")
    with np.errstate(all="ignore"):
        for name, ref in [("exp", np.exp), ("log", np.log), ("sqrt", np.sqrt),
                          ("rsqrt", lambda v: 1 / np.sqrt(v)), ("tanh", np.tanh),
                          ("sigmoid", lambda v: 1 / (1 + np.exp(-v))), ("floor", np.floor),
                          ("ceil", np.ceil), ("abs", np.abs)]:
            out = _run_map(getattr(mb.tir, name), "float64", x)
            np.testing.assert_array_equal(out, ref(x), err_msg=name)


def test_pow_including_overflow_and_domain_errors():
    x = np.array([2.0, -8.0, 0.0, 10.0, -10.0, 4.0, 0.0, -2.0], "float64")
    y = np.array([3.0, 1 / 3, -1.0, 400.0, 401.0, 0.5, 0.0, -3.0], "float64")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_run_map(mb.tir.pow, "float64", x, y), np.power(x, y))


def test_int_abs():
    x = np.array([-3, 0, 5, -2**31 + 1, 7, -1, 2, -9], "int32")
    np.testing.assert_array_equal(_run_map(mb.tir.abs, "int32", x), np.abs(x))


def test_cast_float_to_int_truncates_toward_zero():
    x = np.array([2.7, -2.7, 0.5, -0.5, 3.0, -3.0, 100.9, -100.9], "float32")
    np.testing.assert_array_equal(_run_map(lambda a: cast("int32", a), "int32", x),
                                  np.trunc(x).astype("int32"))


def test_cast_nan_to_int_is_an_execution_error():
    x = np.array([1.0, np.nan, 0, 0, 0, 0, 0, 0], "float32")
    with pytest.raises(ExecutionError, match=r"MLC-A002.*nan cannot be cast.*Out\[i\]"):
        _run_map(lambda a: cast("int32", a), "int32", x)


def test_int_casts_wrap_like_c():
    x = np.array([300, -129, 127, 255, 256, -1, 1000, 0], "int32")
    np.testing.assert_array_equal(_run_map(lambda a: cast("int8", a), "int8", x),
                                  x.astype("int8"))
    np.testing.assert_array_equal(_run_map(lambda a: cast("uint8", a), "uint8", x),
                                  x.astype("uint8"))
    big = np.array([2**40 + 5, -2**33, 7, 2**31, 0, 1, -1, 2**32 - 1], "int64")
    np.testing.assert_array_equal(_run_map(lambda a: cast("int32", a), "int32", big),
                                  big.astype("int32"))
    small = np.array([-128, -1, 0, 1, 127, 5, -5, 100], "int8")
    np.testing.assert_array_equal(_run_map(lambda a: cast("int32", a) * 1000, "int32", small),
                                  small.astype("int32") * 1000)


def test_cast_keeps_operator_precedence():
    x = np.array([1, 2, 3, -4, 5, 6, 7, 8], "int32")
    y = np.array([10, 20, 30, 40, 50, 60, 70, 80], "int32")
    out = _run_map(lambda a, b: cast("int64", a + b) * 2, "int64", x, y)
    np.testing.assert_array_equal(out, (x + y).astype("int64") * 2)
    out = _run_map(lambda a, b: cast("float32", a - b) * 2.0, "float32", x, y)
    np.testing.assert_array_equal(out, (x - y).astype("float32") * 2)


def test_casts_to_float_round_to_the_target_dtype():
    i = np.array([16777217, 3, -16777219, 0, 1, 2**30 + 1, 5, -7], "int32")
    np.testing.assert_array_equal(_run_map(lambda a: cast("float32", a), "float32", i),
                                  i.astype("float32"))
    d = np.array([0.1, 1 / 3, 1e-46, 3.4e39, -2.5, 1e10 + 1, 7.0, -0.1], "float64")
    # the cast rounds to float32; the float64 output then shows exactly the float32 value
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_run_map(lambda a: cast("float32", a), "float32", d),
                                      d.astype("float32"))
        np.testing.assert_array_equal(
            _run_map(lambda a: cast("float64", cast("float32", a)), "float64", d),
            d.astype("float32").astype("float64"))
        np.testing.assert_array_equal(
            _run_map(lambda a: cast("float64", cast("float16", a)), "float64", d),
            d.astype("float16").astype("float64"))


def test_bool_casts():
    x = np.array([0.0, 1.5, -2.0, np.nan, 0.0, -0.0, 3.0, 0.25], "float32")
    np.testing.assert_array_equal(_run_map(lambda a: cast("bool", a), "bool", x), x.astype(bool))
    p = np.array([True, False] * 4)
    np.testing.assert_array_equal(_run_map(lambda a: cast("int32", a) * 5, "int32", p), p * 5)
    np.testing.assert_array_equal(_run_map(lambda a: cast("float32", a), "float32", p),
                                  p.astype("float32"))


def test_store_rounds_to_storage_dtypes():
    d = np.array([0.1, 65519.0, 65520.0, 1e-8, -2.5e-5, 1 / 3, 2049.0, -70000.0], "float64")
    with np.errstate(over="ignore"):
        out = _run_map(lambda a: cast("float16", a), "float16", d)
        np.testing.assert_array_equal(out, d.astype("float16"))
    x = np.array([1.0, 2.0, 3.0, 4.0, 0.5, 0.25, 1.5, 8.0], "float16")
    np.testing.assert_array_equal(_run_map(lambda a: a * a + 1.0, "float16", x),
                                  (x.astype("float64") ** 2 + 1).astype("float16"))
    u = np.array([200, 100, 0, 255, 1, 2, 3, 4], "uint8")
    # uint8 is a storage type: compute in int32 and store back with wraparound
    out = _run_map(lambda a: cast("uint8", cast("int32", a) * 2), "uint8", u)
    np.testing.assert_array_equal(out, (u.astype("int32") * 2).astype("uint8"))


def test_float32_store_rounds_intermediate_double():
    # 1 + 2^-30 is representable in float64 but rounds to 1 in float32
    x = np.ones(8, "float32")
    out = _run_map(lambda a: a + 2.0 ** -30, "float32", x)
    np.testing.assert_array_equal(out, np.ones(8, "float32"))


def test_float32_constants_are_float32_values():
    B = Buffer("B", (1,), "float64")
    f = PrimFunc("f", (B,), BufferStore(B, cast("float64", const(0.1, "float32")), (0,)))
    b = np.zeros(1, "float64")
    interpret(f, b)
    assert b[0] == float(np.float32(0.1))


def test_int64_and_bool_buffers():
    x = np.array([2**40, -3, 5, 0, 1, -(2**50), 7, 9], "int64")
    np.testing.assert_array_equal(_run_map(lambda a: a * 3 - 1, "int64", x), x * 3 - 1)
    p = x > 0
    np.testing.assert_array_equal(_run_map(lambda a: ~a, "bool", p), ~p)


# --- runtime checks ----------------------------------------------------------------------------
def _gather():
    """B[vi] = A[Idx[vi]]: the index is data, so only a runtime check can catch it."""
    A, Idx, B = Buffer("A", (8,)), Buffer("Idx", (4,), "int32"), Buffer("B", (4,))
    body = _block_map("gather", 4, B, lambda vi: A[Idx[vi]], reads=(A, Idx))
    return PrimFunc("gather", (A, Idx, B), root_block_realize(body))


def test_gather_in_bounds():
    a = np.arange(8, dtype="float32") * 10
    b = np.zeros(4, "float32")
    interpret(_gather(), a, np.array([7, 0, 3, 3], "int32"), b)
    np.testing.assert_array_equal(b, [70, 0, 30, 30])


@pytest.mark.parametrize("bad", [8, -1])
def test_out_of_bounds_index_is_caught_at_runtime(bad):
    a = np.arange(8, dtype="float32")
    with pytest.raises(IndexOutOfBoundsError,
                       match=rf"MLC-T005.*A\[Idx\[vi\]\] in block 'gather'.*is {bad} but .*size 8"):
        interpret(_gather(), a, np.array([1, bad, 2, 3], "int32"), np.zeros(4, "float32"))


def test_binding_outside_domain_is_caught_at_runtime():
    # vi is bound to Idx[i], a value the verifier cannot bound
    A, Idx, B = Buffer("A", (4,)), Buffer("Idx", (4,), "int32"), Buffer("B", (4,))
    body = _block_map("scatter", 4, B, lambda vi: A[vi], reads=(A,), binding=lambda i: Idx[i])
    f = PrimFunc("scatter", (A, Idx, B), root_block_realize(body))
    a = np.arange(4, dtype="float32")
    b = np.zeros(4, "float32")
    interpret(f, a, np.array([3, 2, 1, 0], "int32"), b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3])
    with pytest.raises(BindingMismatchError,
                       match=r"MLC-T002.*'scatter'.*vi.*= 4, outside.*\[0, 4\)"):
        interpret(f, a, np.array([3, 4, 1, 0], "int32"), b)


def test_malformed_program_is_rejected_by_the_verifier():
    A = Buffer("A", (4,))
    f = PrimFunc("f", (A,), For(Var("i"), 4, BufferStore(A, 0.0, (Var("k"),))))
    with pytest.raises(UndefinedVariableError, match="'k'"):
        interpret(f, np.zeros(4, "float32"))


# --- modules and caching -----------------------------------------------------------------------
def test_runs_main_or_single_function_of_a_module():
    a, b = np.ones((2, 2), "float32"), np.ones((2, 2), "float32")
    c = np.zeros((2, 2), "float32")
    interpret(IRModule({"mm": matmul(2, 2, 2)}), a, b, c)
    np.testing.assert_array_equal(c, np.full((2, 2), 2.0))
    c[...] = 0
    interpret(IRModule({"other": matmul(3, 3, 3), "main": matmul(2, 2, 2)}), a, b, c)
    np.testing.assert_array_equal(c, np.full((2, 2), 2.0))
    with pytest.raises(TIRError, match="none is named 'main'"):
        interpret(IRModule({"x": matmul(2, 2, 2), "y": matmul(2, 2, 2)}), a, b, c)



def test_module_whose_main_is_not_a_prim_func():
    with pytest.raises(ArgumentError, match="main function is a str, not a PrimFunc"):
        interpret(IRModule({"main": "a graph function"}), *_mm_args())


# --- argument validation -----------------------------------------------------------------------
def _mm_args():
    return [np.zeros((4, 4), "float32") for _ in range(3)]


def test_wrong_argument_count_lists_the_parameters():
    a, b, _ = _mm_args()
    with pytest.raises(ArgumentError,
                       match=r"MLC-A001.*'matmul' takes 3 arrays \(A: float32\[4, 4\], "
                             r"B: float32\[4, 4\], C: float32\[4, 4\] \(output\)\) but got 2"):
        interpret(matmul(4, 4, 4), a, b)


def test_argument_that_is_not_an_array():
    a, _, c = _mm_args()
    with pytest.raises(ArgumentError, match=r"parameter 'B' \(argument 2.*numpy array, got list"):
        interpret(matmul(4, 4, 4), a, [[0.0] * 4] * 4, c)


def test_wrong_shape_names_expected_and_actual():
    a, _, c = _mm_args()
    with pytest.raises(ArgumentError,
                       match=r"parameter 'B'.*expects shape \(4, 4\) but got .*shape \(4, 5\)"):
        interpret(matmul(4, 4, 4), a, np.zeros((4, 5), "float32"), c)


def test_wrong_dtype_names_the_parameter():
    a, b, _ = _mm_args()
    with pytest.raises(ArgumentError,
                       match=r"parameter 'C'.*expects dtype float32 but got .*float64.*astype"):
        interpret(matmul(4, 4, 4), a, b, np.zeros((4, 4)))


def test_read_only_output():
    a, b, c = _mm_args()
    c.flags.writeable = False
    with pytest.raises(ArgumentError, match=r"output parameter 'C'.*read-only"):
        interpret(matmul(4, 4, 4), a, b, c)


def test_read_only_input_is_fine():
    a, b, c = _mm_args()
    a.flags.writeable = False
    interpret(matmul(4, 4, 4), a, b, c)


def test_output_sharing_memory_with_an_input():
    a, b, _ = _mm_args()
    with pytest.raises(ArgumentError, match=r"output parameter 'C'.*shares memory with .*'A'"):
        interpret(matmul(4, 4, 4), a, b, a)
    with pytest.raises(ArgumentError, match=r"output parameter 'C'.*shares memory with .*'B'"):
        interpret(matmul(4, 4, 4), a, b, b[:, ::-1])


def test_not_a_function():
    with pytest.raises(ArgumentError, match="func_or_module must be a PrimFunc or an IRModule"):
        interpret("matmul", *_mm_args())


# --- differential property tests: random expressions against a numpy evaluator ------------------
def _int_exprs():
    leaves = st.one_of(st.sampled_from(["x", "y"]), st.integers(-5, 5))
    nonzero = st.integers(-5, 5).filter(bool)

    def grow(children):
        binary = st.tuples(st.sampled_from(["+", "-", "*", "min", "max"]), children, children)
        division = st.tuples(st.sampled_from(["//", "%"]), children, nonzero)
        select = st.tuples(st.just("select"), st.sampled_from(["<", "<=", "==", "!="]),
                           children, children, children, children)
        negate = st.tuples(st.just("neg"), children)
        return st.one_of(binary, division, select, negate)
    return st.recursive(leaves, grow, max_leaves=8)


def _build(tree, x, y):
    if tree == "x":
        return x
    if tree == "y":
        return y
    if isinstance(tree, (int, float)):
        return const(tree, x.dtype)
    op = tree[0]
    if op == "neg":
        return -_build(tree[1], x, y)
    if op == "select":
        _, cmp, a, b, t, f = (tree[0], tree[1], *[_build(t, x, y) for t in tree[2:]])
        cond = {"<": a < b, "<=": a <= b, "==": a == b, "!=": a != b}[cmp]
        return mb.tir.select(cond, t, f)
    a, b = _build(tree[1], x, y), _build(tree[2], x, y)
    return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b,
            "%": lambda: a % b, "min": lambda: mb.tir.min(a, b), "max": lambda: mb.tir.max(a, b),
            "/": lambda: a / b}[op]()


def _reference(tree, x, y):
    """The same expression evaluated with numpy on whole arrays."""
    if tree == "x":
        return x
    if tree == "y":
        return y
    if isinstance(tree, (int, float)):
        return np.full_like(x, tree)
    op = tree[0]
    if op == "neg":
        return -_reference(tree[1], x, y)
    if op == "select":
        a, b, t, f = (_reference(t, x, y) for t in tree[2:])
        cond = {"<": a < b, "<=": a <= b, "==": a == b, "!=": a != b}[tree[1]]
        return np.where(cond, t, f)
    a, b = _reference(tree[1], x, y), _reference(tree[2], x, y)
    return {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide,
            "%": np.mod, "min": np.minimum, "max": np.maximum, "/": np.divide}[op](a, b)


@settings(max_examples=60, deadline=None)
@given(tree=_int_exprs())
def test_random_int_expressions_match_numpy(tree):
    x = np.arange(-24, 24, 3, dtype="int32")
    y = np.arange(16, dtype="int32")[::-1] * 3 - 20
    out = _run_map(lambda a, b: _build(tree, a, b), "int32", x, y)
    expected = _reference(tree, x.astype("int64"), y.astype("int64")).astype("int32")
    np.testing.assert_array_equal(out, expected)


def _float_exprs():
    leaves = st.one_of(st.sampled_from(["x", "y"]), st.sampled_from([0.5, -1.25, 3.0]))

    def grow(children):
        binary = st.tuples(st.sampled_from(["+", "-", "*", "/", "min", "max"]), children, children)
        select = st.tuples(st.just("select"), st.sampled_from(["<", "<=", "==", "!="]),
                           children, children, children, children)
        return st.one_of(binary, select, st.tuples(st.just("neg"), children))
    return st.recursive(leaves, grow, max_leaves=8)


@settings(max_examples=60, deadline=None)
@given(tree=_float_exprs())
def test_random_float_expressions_match_numpy_float64_rounded_on_store(tree):
    x = np.linspace(-3, 3, 16)
    y = np.linspace(2, -2.5, 16)
    out = _run_map(lambda a, b: _build(tree, a, b), "float64", x, y)
    with np.errstate(all="ignore"):
        expected = _reference(tree, x, y)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("name", ["0v", "x²", "a b", "for"])
def test_any_ir_name_runs(name):
    # the translation once named a parameter 0v_1 in Python, which does not parse
    A = Buffer(name, (3,), "int32")
    i = Var(name)
    f = PrimFunc("f", (A,), For(i, 3, BufferStore(A, A[i] + i, (i,))))
    a = np.ones(3, "int32")
    interpret(f, a)
    np.testing.assert_array_equal(a, [1, 2, 3])


def _elementwise(fn, in_dtype, out_dtype, n=6):
    """A PrimFunc ``b[i] = fn(a[i])`` built from TE (one block)."""
    a = mb.te.placeholder((n,), in_dtype, name="a")
    b = mb.te.compute((n,), lambda i: fn(a[i]), name="b")
    assert b.dtype == out_dtype
    return mb.te.create_prim_func([a, b])


def test_bitwise_functions_on_signed_and_unsigned_integers():
    from mlcbook.tir.expr import bitwise_and, bitwise_or, bitwise_xor
    for dtype in ("int8", "uint8", "int32", "int64"):
        info = np.iinfo(dtype)
        a = np.array([info.min, -1 if info.min else 7, 0, 1, 77, info.max], dtype)
        for fn, ref in ((bitwise_and, np.bitwise_and), (bitwise_or, np.bitwise_or),
                        (bitwise_xor, np.bitwise_xor)):
            f = _elementwise(lambda v, fn=fn: fn(v, mb.tir.const(-6 if info.min else 250,
                                                                  dtype)), dtype, dtype)
            out = np.zeros(6, dtype)
            interpret(f, a, out)
            assert np.array_equal(out, ref(a, np.array(-6 if info.min else 250, dtype)))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"),
                                     ("float64", "int64"), ("int64", "float64")])
def test_reinterpret_reads_the_bits_as_another_type(src, dst):
    from mlcbook.tir.expr import reinterpret
    a = np.array([1.0, -2.5, 0.0, -0.0, np.inf, 3e-30]).astype(src if src[0] == "f" else dst)
    a = a if src[0] == "f" else a.view(src)
    out = np.zeros(6, dst)
    interpret(_elementwise(lambda v: reinterpret(dst, v), src, dst), a, out)
    assert np.array_equal(out.view("uint8"), a.view("uint8"))
