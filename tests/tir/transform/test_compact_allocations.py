"""compact_allocations: allocations move into loops whose iterations use disjoint parts, and
shrink to one iteration's part; the meaning is kept (interpreter) and never broken."""

from __future__ import annotations

import numpy as np

import mlcbook as mb
from mlcbook.tir import Allocate, For, post_order_visit
from mlcbook.tir.transform import compact_allocations, convert_blocks

RNG = np.random.default_rng(8)

# C cached in a "local" buffer per (4 x 8) tile, as cache_write + reverse_compute_at leave it
TILED = '''
@T.prim_func
def mm(A: T.Buffer((8, 6), "float32"), B: T.Buffer((6, 16), "float32"), C: T.Buffer((8, 16), "float32")):
    CL = T.alloc_buffer((8, 16), "float32", scope="local")
    for jo in T.parallel(2):
        for io in range(2):
            for ii, ji in T.grid(4, 8):
                with T.block("init"):
                    vi = T.axis.spatial(8, io * 4 + ii)
                    vj = T.axis.spatial(16, jo * 8 + ji)
                    CL[vi, vj] = T.float32(0)
            for k, ii, ji in T.grid(6, 4, 8):
                with T.block("update"):
                    vi = T.axis.spatial(8, io * 4 + ii)
                    vj = T.axis.spatial(16, jo * 8 + ji)
                    vk = T.axis.reduce(6, k)
                    CL[vi, vj] = CL[vi, vj] + A[vi, vk] * B[vk, vj]
            for ii, ji in T.grid(4, 8):
                with T.block("store"):
                    vi = T.axis.spatial(8, io * 4 + ii)
                    vj = T.axis.spatial(16, jo * 8 + ji)
                    C[vi, vj] = CL[vi, vj]
'''

# a running value carried from one iteration of i to the next through S: must stay put
CARRIED = '''
@T.prim_func
def prefix(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    S = T.alloc_buffer((1,), "float32")
    with T.block("zero"):
        S[0] = T.float32(0)
    for i in range(8):
        with T.block("acc"):
            vi = T.axis.spatial(8, i)
            S[0] = S[0] + A[vi]
            B[vi] = S[0]
'''

# each iteration of i uses its own row of T, read back by the next statement
ROWS = '''
@T.prim_func
def rows(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4, 16), "float32")):
    T_ = T.alloc_buffer((4, 16), "float32")
    for i in range(4):
        for j in T.vectorized(16):
            with T.block("t"):
                vi, vj = T.axis.remap("SS", [i, j])
                T_[vi, vj] = A[vi, vj] * T.float32(2)
        for j in T.vectorized(16):
            with T.block("b"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = T_[vi, vj] + T.float32(1)
'''


# TILED with its two tile loops fused into one parallel loop f: jo = f // 2, io = f % 2
FUSED = '''
@T.prim_func
def mm(A: T.Buffer((8, 6), "float32"), B: T.Buffer((6, 16), "float32"), C: T.Buffer((8, 16), "float32")):
    CL = T.alloc_buffer((8, 16), "float32", scope="local")
    for f in T.parallel(4):
        for ii, ji in T.grid(4, 8):
            with T.block("init"):
                vi = T.axis.spatial(8, f % 2 * 4 + ii)
                vj = T.axis.spatial(16, f // 2 * 8 + ji)
                CL[vi, vj] = T.float32(0)
        for k, ii, ji in T.grid(6, 4, 8):
            with T.block("update"):
                vi = T.axis.spatial(8, f % 2 * 4 + ii)
                vj = T.axis.spatial(16, f // 2 * 8 + ji)
                vk = T.axis.reduce(6, k)
                CL[vi, vj] = CL[vi, vj] + A[vi, vk] * B[vk, vj]
        for ii, ji in T.grid(4, 8):
            with T.block("store"):
                vi = T.axis.spatial(8, f % 2 * 4 + ii)
                vj = T.axis.spatial(16, f // 2 * 8 + ji)
                C[vi, vj] = CL[vi, vj]
'''

# like FUSED, but the tile rows are f // 2 + ii: neighbouring iterations share rows of CL.
# The loop is serial: run in parallel, iterations sharing rows would race on C.
OVERLAPPING = (FUSED.replace("f % 2 * 4 + ii", "f // 2 + ii").replace("f // 2 * 8", "f % 2 * 8")
               .replace("T.parallel(4)", "T.serial(4)"))


def allocations(func):
    out = []

    def visit(n):
        if isinstance(n, Allocate):
            out.append(n)
    post_order_visit(func.body, visit)
    return out


def loop_around(func, alloc):
    """Name of the innermost loop whose body holds ``alloc`` (None at the top)."""
    found = []

    def visit(n):
        if isinstance(n, For) and n.body is alloc:
            found.append(n.loop_var.name)
    post_order_visit(func.body, visit)
    return found[0] if found else None


def same_meaning(src):
    func = mb.script.parse(src)
    lowered = mb.lower(func).main()
    args = [RNG.standard_normal(p.shape).astype(p.dtype) for p in func.params]
    want = [a.copy() for a in args]
    mb.tir.interpret(func, *want)
    got = [a.copy().reshape(-1) for a in args]
    mb.tir.interpret(lowered, *got)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g.reshape(w.shape), w, rtol=1e-6)
    kernel_out = [a.copy() for a in args]
    mb.build(func)(*kernel_out)
    for w, g in zip(want, kernel_out):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return lowered


def test_cached_tile_moves_into_the_tile_loops_and_shrinks():
    lowered = same_meaning(TILED)
    (alloc,) = allocations(lowered)
    assert alloc.buffer.shape == (32,)          # 4 x 8, flattened
    assert loop_around(lowered, alloc) == "io"


def test_compaction_rewrites_indices_to_the_tile():
    func = mb.script.parse(TILED)
    body = compact_allocations(convert_blocks(func.body))
    (alloc,) = allocations(func.with_body(body))
    assert alloc.buffer.shape == (4, 8)
    assert "CL[ii, ji]" in str(func.with_body(body))


def test_value_carried_across_iterations_keeps_its_allocation():
    lowered = same_meaning(CARRIED)
    (alloc,) = allocations(lowered)
    assert loop_around(lowered, alloc) is None and alloc.buffer.shape == (1,)


def test_row_buffer_moves_into_its_loop_but_not_into_a_vectorized_one():
    lowered = same_meaning(ROWS)
    (alloc,) = allocations(lowered)
    assert loop_around(lowered, alloc) == "i" and alloc.buffer.shape == (16,)


def test_tile_moves_into_a_fused_loop_whose_div_and_mod_tell_iterations_apart():
    lowered = same_meaning(FUSED)
    (alloc,) = allocations(lowered)
    assert alloc.buffer.shape == (32,)
    assert loop_around(lowered, alloc) == "f"


def test_tile_stays_out_of_a_fused_loop_whose_iterations_share_elements():
    lowered = same_meaning(OVERLAPPING)
    (alloc,) = allocations(lowered)
    assert loop_around(lowered, alloc) is None
