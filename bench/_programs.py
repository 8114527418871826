"""The programs the benchmarks compile: loop IR, scheduled with ``mb.Schedule`` or (where a
primitive is still missing) written out by hand as the loop nest a schedule would produce.

* ``matmul_naive``  — the abstraction: i, j, k loops around one block with an init.
* ``matmul_ch4``    — chapter 4's schedule: split i by 32 and j by 64, reorder to
  (io, jo, k, ii, ji), vectorize ji, parallelize io. The init stays in the block, guarded
  by ``k == 0``; every update goes through memory.
* ``matmul_best``   — ``mb.Schedule`` steps: B repacked into column panels as wide as the
  register tile (``transform_layout``, the repack parallel over panels), then for each
  panel (in parallel) A swept a tile of rows at a time, accumulating a register tile of C
  (``cache_write`` + ``reverse_compute_at``) over all of k. The tile is the default
  schedule's for this machine (``register_tile``): 4 x 16 with AVX2's 16 ymm registers,
  8 x 32 with AVX-512's 32 zmm.
* ``fused_relu``    — ``y = max(x * a + b, 0)`` in one pass, 64-wide vectors, parallel chunks.
* ``conv2d_best``   — by hand: 3x3 conv (NCHW, padding 1): pad into a scratch buffer, repack the
  weights with output channels innermost (``Wp[c, ky, kx, f]``), and accumulate a register
  tile of 4 output pixels x 64 channels over (c, ky, kx) — the matmul micro-kernel again;
  output rows in parallel.
"""

from __future__ import annotations

import mlcbook as mb
from mlcbook.rules.tile_size import register_tile


def matmul_naive(n: int, in_dtype: str = "float32"):
    """C = A @ B, n x n, accumulated in float32; A and B may be another float type
    (``in_dtype="bfloat16"``), widened to float32 as they are loaded."""
    a, b = "A[vi, vk]", "B[vk, vj]"
    if in_dtype != "float32":
        a, b = f'T.Cast("float32", {a})', f'T.Cast("float32", {b})'
    return mb.script.parse(f'''
@T.prim_func
def matmul(A: T.Buffer(({n}, {n}), "{in_dtype}"), B: T.Buffer(({n}, {n}), "{in_dtype}"), C: T.Buffer(({n}, {n}), "float32")):
    for i, j, k in T.grid({n}, {n}, {n}):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + {a} * {b}
''')


def matmul_ch4(n: int):
    return mb.script.parse(f'''
@T.prim_func
def matmul(A: T.Buffer(({n}, {n}), "float32"), B: T.Buffer(({n}, {n}), "float32"), C: T.Buffer(({n}, {n}), "float32")):
    for io in T.parallel({n // 32}):
        for jo, k, ii in T.grid({n // 64}, {n}, 32):
            for ji in T.vectorized(64):
                with T.block("C"):
                    vi = T.axis.spatial({n}, io * 32 + ii)
                    vj = T.axis.spatial({n}, jo * 64 + ji)
                    vk = T.axis.reduce({n}, k)
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
''')


def matmul_best(n: int, mr: int | None = None, nr: int | None = None,
                in_dtype: str = "float32"):
    """The hand schedule: B packed in panels of ``nr`` columns, ``mr x nr`` register tiles
    (default: the tile the default schedule picks for this machine's registers)."""
    if mr is None or nr is None:
        mr, nr = register_tile(n, n)
    lanes = mb.Target("llvm").vector_lanes()
    sch = mb.Schedule(matmul_naive(n, in_dtype))
    block = sch.get_block("C")
    sch.transform_layout(block, "B", lambda k, j: (j // nr, k, j % nr))
    write_back = sch.cache_write(block, 0, "local")
    i, j, k = sch.get_loops(block)
    io, ii = sch.split(i, [None, mr])
    jo, ji = sch.split(j, [None, nr])
    sch.reorder(jo, io, k, ii, ji)
    registers, lanes_loop = sch.split(ji, [None, lanes])
    sch.unroll(ii)
    sch.unroll(registers)
    sch.vectorize(lanes_loop)
    sch.reverse_compute_at(write_back, io)
    registers, lanes_loop = sch.split(sch.get_loops(write_back)[-1], [None, lanes])
    sch.unroll(registers)
    sch.vectorize(lanes_loop)
    sch.decompose_reduction(block, k)
    sch.parallel(jo)
    # the repack, one panel of B per parallel iteration
    rows, cols = sch.get_loops(sch.get_block("B_packed"))
    panel, col = sch.split(cols, [None, nr])
    sch.reorder(panel, rows, col)
    sch.vectorize(col)
    sch.parallel(panel)
    return sch.func


def fused_relu(n: int, chunk: int = 65536, lanes: int = 64):
    return mb.script.parse(f'''
@T.prim_func(root=False)
def fused(X: T.Buffer(({n},), "float32"), a: T.Buffer((1,), "float32"), b: T.Buffer((1,), "float32"), Y: T.Buffer(({n},), "float32")):
    for io in T.parallel({n // chunk}):
        for im in range({chunk // lanes}):
            for ii in T.vectorized({lanes}):
                Y[io * {chunk} + im * {lanes} + ii] = T.max(X[io * {chunk} + im * {lanes} + ii] * a[0] + b[0], T.float32(0))
''')


def conv2d_best(c: int = 64, f: int = 64, h: int = 56, w: int = 56, xr: int = 4):
    hp, wp = h + 2, w + 2
    return mb.script.parse(f'''
@T.prim_func(root=False)
def conv2d(X: T.Buffer((1, {c}, {h}, {w}), "float32"), W: T.Buffer(({f}, {c}, 3, 3), "float32"), O: T.Buffer((1, {f}, {h}, {w}), "float32")):
    with T.allocate(({c}, {hp}, {wp}), "float32") as Xp:
        with T.allocate(({c}, 3, 3, {f}), "float32") as Wp:
            for ci in T.parallel({c}):
                for y in range({hp}):
                    for x in T.vectorized({wp}):
                        Xp[ci, y, x] = T.if_then_else(1 <= y and y <= {h} and 1 <= x and x <= {w}, X[0, ci, y - 1, x - 1], T.float32(0))
            for ci, ky, kx in T.grid({c}, 3, 3):
                for fo in T.vectorized({f}):
                    Wp[ci, ky, kx, fo] = W[fo, ci, ky, kx]
            for y in T.parallel({h}):
                for xo in range({w // xr}):
                    with T.allocate(({xr}, {f}), "float32", "local") as Ol:
                        for xi in T.unroll({xr}):
                            for fo in T.vectorized({f}):
                                Ol[xi, fo] = T.float32(0)
                        for ci, ky, kx in T.grid({c}, 3, 3):
                            for xi in T.unroll({xr}):
                                for fo in T.vectorized({f}):
                                    Ol[xi, fo] = Ol[xi, fo] + Xp[ci, y + ky, xo * {xr} + xi + kx] * Wp[ci, ky, kx, fo]
                        for xi in T.unroll({xr}):
                            for fo in T.vectorized({f}):
                                O[0, fo, y, xo * {xr} + xi] = Ol[xi, fo]
''')
