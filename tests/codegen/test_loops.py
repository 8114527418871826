"""Parallel loops are outlined and run by the runtime; unrolled loops unroll; allocations."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import UnrollError
from mlcbook.runtime import get_num_threads, set_num_threads
from mlcbook.tir import Allocate, Buffer, BufferStore, For, PrimFunc, Var, seq

RNG = np.random.default_rng(2)

PARALLEL_MM = '''
@T.prim_func
def mm(A: T.Buffer((64, 32), "float32"), B: T.Buffer((32, 48), "float32"), C: T.Buffer((64, 48), "float32")):
    for i in T.parallel(64):
        for j, k in T.grid(48, 32):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
'''


@pytest.fixture
def threads():
    old = get_num_threads()
    yield set_num_threads
    set_num_threads(old)


def test_parallel_loop_is_outlined_and_called_through_the_launcher():
    k = mb.build(mb.script.parse(PARALLEL_MM))
    ir = k.llvm_ir()
    assert re.search(r'define internal void @"mlcb_mm_parallel_0"\(i64 %".*", i64 %".*", ptr', ir)
    assert re.search(r'call void %"launcher"\(.*@"mlcb_mm_parallel_0", i64 64, ptr', ir)


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_parallel_loop_gives_the_same_result_with_any_thread_count(threads, n):
    threads(n)
    k = mb.build(mb.script.parse(PARALLEL_MM))
    a = RNG.standard_normal((64, 32)).astype("float32")
    b = RNG.standard_normal((32, 48)).astype("float32")
    np.testing.assert_allclose(k(a, b), a @ b, rtol=1e-5, atol=1e-5)


def test_parallel_loop_captures_outer_loop_variables_and_allocations(threads):
    # for r: (alloc tmp; for p in parallel: tmp[p] = A[r, p] * r; for q: B[r, q] = tmp[q])
    threads(2)
    A, B = Buffer("A", (3, 40)), Buffer("B", (3, 40))
    tmp = Buffer("tmp", (40,))
    r, p, q = Var("r"), Var("p"), Var("q")
    body = For(r, 3, Allocate(tmp, seq(
        For(p, 40, BufferStore(tmp, A[r, p] * mb.tir.cast("float32", r), (p,)), "parallel"),
        For(q, 40, BufferStore(B, tmp[q], (r, q))))))
    k = mb.build(PrimFunc("cap", (A, B), body))
    a = RNG.standard_normal((3, 40)).astype("float32")
    np.testing.assert_allclose(k(a), a * np.arange(3, dtype="float32")[:, None], rtol=1e-6)


def test_nested_parallel_loop_runs_serially_inside_its_thread(threads):
    threads(2)
    A, B = Buffer("A", (6, 10)), Buffer("B", (6, 10))
    i, j = Var("i"), Var("j")
    f = PrimFunc("nest", (A, B), For(i, 6, For(j, 10, BufferStore(B, A[i, j] + 1.0, (i, j)),
                                                "parallel"), "parallel"))
    k = mb.build(f)
    assert k.llvm_ir().count('call void %"launcher"') == 1
    a = RNG.standard_normal((6, 10)).astype("float32")
    np.testing.assert_allclose(k(a), a + 1, rtol=1e-6)


POOL_2X2 = '''
@T.prim_func(root=False)
def pool(A: T.Buffer((4704,), "float32"), B: T.Buffer((1176,), "float32")):
    for f in T.parallel(588):
        for c in T.vectorized(2):
            B[f * 2 + c] = T.max(A[f // 14 * 112 + f % 14 * 4 + c], A[f // 14 * 112 + f % 14 * 4 + 56 + c])
'''


def test_a_chunk_divides_its_loop_variable_unsigned_like_the_serial_loop():
    # the chunk's bounds are assumed inside [0, extent): without that LLVM kept signed
    # divisions of the loop variable, and the chunk ran 2.5x slower than the serial loop
    k = mb.build(mb.script.parse(POOL_2X2))
    body = re.search(r"define internal void @mlcb_pool_parallel_0\(.*?\n}", k.llvm_ir(True), re.S)
    assert body and "udiv" in body.group(0)
    assert "sdiv" not in body.group(0) and "srem" not in body.group(0)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_a_chunk_with_divided_indices_gives_the_serial_answer(threads, n):
    threads(n)
    a = RNG.standard_normal(4704).astype("float32")
    f, c = np.arange(588)[:, None], np.arange(2)[None, :]
    i = f // 14 * 112 + f % 14 * 4 + c
    np.testing.assert_array_equal(mb.build(mb.script.parse(POOL_2X2))(a),
                                  np.maximum(a[i], a[i + 56]).reshape(-1))


def test_set_num_threads_rejects_bad_values():
    with pytest.raises(mb.errors.ArgumentError, match="positive int"):
        set_num_threads(0)


def test_unrolled_loop_has_no_loop_left():
    A, B = Buffer("A", (4,)), Buffer("B", (4,))
    u = Var("u")
    k = mb.build(PrimFunc("unr", (A, B), For(u, 4, BufferStore(B, A[u] * 2.0, (u,)), "unrolled")))
    ir = k.llvm_ir()
    assert "u.header" not in ir and ir.count("fmul") == 4
    a = RNG.standard_normal(4).astype("float32")
    np.testing.assert_allclose(k(a), a * 2, rtol=1e-6)


def test_huge_unroll_is_an_error():
    A = Buffer("A", (5000,))
    u = Var("u")
    f = PrimFunc("big", (A,), For(u, 5000, BufferStore(A, mb.tir.const(0.0, "float32"), (u,)),
                                  "unrolled"))
    with pytest.raises(UnrollError, match="unrolled but has 5000 iterations.*split"):
        mb.build(f)


def test_small_allocation_is_on_the_stack_and_large_on_the_heap():
    def func(n):
        A, B, T = Buffer("A", (n,)), Buffer("B", (n,)), Buffer("T", (n,))
        i, j = Var("i"), Var("j")
        return PrimFunc(f"alloc{n}", (A, B), Allocate(T, seq(
            For(i, n, BufferStore(T, A[i] + 1.0, (i,))),
            For(j, n, BufferStore(B, T[j] * 2.0, (j,))))))
    small, large = mb.build(func(100)), mb.build(func(200_000))
    assert "alloca [100 x float], align 64" in small.llvm_ir()
    assert "aligned_alloc" in large.llvm_ir() and '@"free"' in large.llvm_ir()
    a = RNG.standard_normal(200_000).astype("float32")
    np.testing.assert_allclose(large(a), (a + 1) * 2, rtol=1e-6)
    np.testing.assert_allclose(small(a[:100]), (a[:100] + 1) * 2, rtol=1e-6)


def test_buffer_arguments_are_noalias_and_dereferenceable():
    A, B = Buffer("A", (8, 4)), Buffer("B", (8, 4))
    i = Var("i")
    ir = mb.build(PrimFunc("cp", (A, B), For(i, 8, BufferStore(B, A[i, 0], (i, 0))))).llvm_ir()
    assert 'ptr noalias align 4 dereferenceable(128) %"A"' in ir


def test_num_threads_context_restores_the_setting():
    old = get_num_threads()
    with mb.runtime.num_threads(1):
        assert get_num_threads() == 1
    assert get_num_threads() == old


def test_a_select_on_an_unrolled_position_emits_only_the_arm_it_takes():
    A, B = Buffer("A", (4,)), Buffer("B", (4,))
    u = Var("u")
    value = mb.tir.select(u % 2 == 0, A[u] * 3.0, A[u] - 1.0)
    k = mb.build(PrimFunc("arms", (A, B), For(u, 4, BufferStore(B, value, (u,)), "unrolled")))
    ir = k.llvm_ir()
    assert "sel.then" not in ir and ir.count("fmul") == 2 and ir.count("fsub") == 2
    a = RNG.standard_normal(4).astype("float32")
    np.testing.assert_allclose(k(a), np.where(np.arange(4) % 2 == 0, a * 3, a - 1), rtol=1e-6)
