"""The int8 matrix product and its default schedule, which tensorizes with the best u8 x i8
dot-product intrinsic the target has (VNNI's ``vpdpbusd``, else AVX2's widening multiply-add).

``C[i, j] = sum_k int32(A[i, k]) * int32(B[j, k])`` with ``A`` uint8 (activations), ``B``
int8 (weights) and ``C`` int32. The sum is exact in int32 for ``K < 2**31 / (255 * 128)``,
about 65000 terms; beyond that it wraps, as numpy's int32 matmul does. The weights are
packed once, offline, as ``Bp[j // L, k // 4, j % L, k % 4]`` (``L`` the intrinsic's lanes),
so that each instruction reads one contiguous ``L x 4`` tile::

    func = int8_matmul(64, 128, 256, lanes=8)
    bp = pack_weights(b, lanes=8)                   # b: (N, K) int8
    kernel = mb.build(schedule_int8_matmul(func))
    kernel(a, bp, c)                                # c == a.astype(int32) @ b.astype(int32).T

:func:`schedule_int8_kernel` is the default schedule of the kernels that quantized models
compile to (``int8_dense``, ``int8_conv2d``: :mod:`mlcbook.te.ops.int8_kernels`), whose
weights are packed in tiles of 16 lanes: it tensorizes their ``*_int8_acc`` stage with 16
lanes (VNNI), or, with AVX2 only, with a register-tiled kernel of
:func:`~mlcbook.tir.x86_intrinsics.u8i8_tile` (up to 4 rows x 16 columns of int32 sums kept
in ymm registers over up to 64 terms). Which AVX2 kernel is a documented rule: a stage named
``*_w7_int8_acc`` (``narrow=True``: the compiler proved the constant weights fit
``vpmaddubsw``'s int16 pair sums) gets ``pmaddubsw``, every other stage the always-exact
``pmaddwd``; the lowered program names the kernel in the block's ``tensor_intrin``.
"""

from __future__ import annotations

import math

import numpy as np

from ..codegen.target import Target
from ..errors import ScheduleError
from ..schedule import Schedule
from ..script import parse
from ..te import create_prim_func, placeholder
from ..te.ops.int8_kernels import ACC_SUFFIX, NARROW_ACC_SUFFIX, PACK_LANES, int8_product
from ..tir.arith import affine
from ..tir.expr import BufferLoad
from ..tir.function import PrimFunc
from ..tir.functor import post_order_visit
from ..tir.stmt import BlockRealize, For, SeqStmt
from ..tir.x86_intrinsics import DOT_VNNI, TILE_VARIANTS, best_dot_u8i8, u8i8_tile

#: the most groups of 4 terms one register-tiled call sums (its code is unrolled)
MAX_TILE_DEPTH = 16
#: bytes of int32 sums beyond which a channels-last conv requantizes each tile of them at
#: once (half of a Zen 3 L2): a conv with 8 channels over 8 x 28 x 28 pixels (400 KiB of
#: sums, padded to 16 columns) ran 20% faster so, one with 100 KiB of sums 10% slower
EPILOGUE_TILE_BYTES = 256 * 1024
#: packed weight tiles (16 columns each) whose sums one row tile visits before the next
#: row tile: 16 x 16 columns of a 1024-term product are 256 KiB, half of a Zen 3 L2
COLUMN_BLOCK = 16


def int8_matmul(m: int, n: int, k: int, lanes: int) -> PrimFunc:
    """The PrimFunc ``(A (m, k) uint8, Bp packed int8, C (m, n) int32)``; ``n`` must be a
    multiple of ``lanes`` and ``k`` of 4."""
    if n % lanes or k % 4:
        raise ScheduleError(f"int8_matmul: n={n} must be a multiple of lanes={lanes} and "
                            f"k={k} of 4. Instead: pad the matrices (np.pad) first")
    nb, kb = n // lanes, k // 4
    return parse(f"""
@T.prim_func
def int8_matmul(A: T.Buffer(({m}, {k}), "uint8"), Bp: T.Buffer(({nb}, {kb}, {lanes}, 4), "int8"),
                C: T.Buffer(({m}, {n}), "int32")):
    for i, jo, ko, ji, ki in T.grid({m}, {nb}, {kb}, {lanes}, 4):
        with T.block("C"):
            vi, vjo, vko, vji, vki = T.axis.remap("SSRSR", [i, jo, ko, ji, ki])
            with T.init():
                C[vi, vjo * {lanes} + vji] = T.int32(0)
            C[vi, vjo * {lanes} + vji] = C[vi, vjo * {lanes} + vji] + T.Cast(
                "int32", A[vi, vko * 4 + vki]) * T.Cast("int32", Bp[vjo, vko, vji, vki])
""")


def pack_weights(b: np.ndarray, lanes: int) -> np.ndarray:
    """``b`` (n, k) int8 -> ``(n // lanes, k // 4, lanes, 4)``, the layout of ``Bp``."""
    n, k = b.shape
    return np.ascontiguousarray(b.reshape(n // lanes, lanes, k // 4, 4).transpose(0, 2, 1, 3))


def dot_lanes(target=None) -> int:
    """Lanes of the dot-product intrinsic the target would use (16 with VNNI, else 8)."""
    intrin = best_dot_u8i8(Target(target or "llvm"))
    if intrin is None:
        return 8
    return intrin.desc.params[2].shape[0]


def schedule_int8_matmul(func: PrimFunc, target=None) -> PrimFunc:
    """Tensorize the ``(ji, ki)`` tile with the best dot intrinsic of ``target`` (default:
    this machine) and run rows in parallel. Without any such intrinsic (not x86 with AVX2)
    the function comes back unscheduled, which still computes the same."""
    intrin = best_dot_u8i8(Target(target or "llvm"))
    sch = Schedule(func)
    i, jo, ko, ji, ki = sch.get_loops(sch.get_block("C"))
    if intrin is not None:
        lanes = intrin.desc.params[2].shape[0]
        if func.params[1].shape[2] != lanes:
            raise ScheduleError(f"the weights are packed for {func.params[1].shape[2]} lanes "
                                f"but {intrin.name} computes {lanes}. Instead: build "
                                f"int8_matmul(..., lanes=dot_lanes(target))")
        sch.tensorize(ji, intrin.name)
    sch.parallel(i)
    return sch.func


def int8_matmul_tiled(m: int, n: int, k: int, narrow: bool = False) -> PrimFunc:
    """The PrimFunc ``(A (m, k) uint8, Wp (n // 16, k // 4, 16, 4) int8, C (m, n // 16, 16)
    int32)`` of :func:`~mlcbook.te.ops.int8_kernels.int8_product`, weights packed by
    ``pack_int8``, C the (m, n) product in memory; :func:`schedule_int8_kernel` schedules
    it like a quantized model's dense layer. ``narrow=True`` promises weights that pass
    :func:`~mlcbook.tir.x86_intrinsics.pairs_fit_int16` (check them with it)::

        func = int8_matmul_tiled(64, 128, 256, narrow=pairs_fit_int16(pack_int8(b)))
        mb.build(schedule_int8_kernel(func))(a, pack_int8(b), c.reshape(64, 8, 16))
    """
    if n % PACK_LANES or k % 4:
        raise ScheduleError(f"int8_matmul_tiled: n={n} must be a multiple of {PACK_LANES} "
                            f"and k={k} of 4. Instead: pad the matrices (np.pad) first")
    a = placeholder((m, k), "uint8", "A")
    wp = placeholder((n // PACK_LANES, k // 4, PACK_LANES, 4), "int8", "Wp")
    return create_prim_func([a, wp, int8_product(a, wp, "int8_matmul", narrow)])


def int8_acc_blocks(func: PrimFunc) -> list[str]:
    """Names of the root blocks of ``func`` that are an int8 kernel's packed product."""
    return [name for name in _root_blocks(func) if name.endswith(ACC_SUFFIX)]


def _root_blocks(func: PrimFunc) -> list[str]:
    body = func.body.block.body
    names = []
    for stmt in (body.stmts if isinstance(body, SeqStmt) else [body]):
        while isinstance(stmt, For):
            stmt = stmt.body
        if isinstance(stmt, BlockRealize):
            names.append(stmt.block.name)
    return names


def schedule_int8_kernel(func: PrimFunc, target=None, parallel_work: int = 1 << 20,
                         epilogue_tile_bytes: int = EPILOGUE_TILE_BYTES) -> PrimFunc:
    """The default schedule of an ``int8_dense`` / ``int8_conv2d`` kernel: its product stage
    tensorized with the best dot intrinsic of ``target`` (a ``ScheduleError`` if the target
    has none), the other stages (padding, the requantizing epilogue) vectorized
    along their last axis; rows in parallel when a stage has at least ``parallel_work``
    inner iterations (waking the pool's workers costs more than a small stage). With AVX2,
    a channels-last conv whose int32 sums take more than ``epilogue_tile_bytes``
    requantizes each register tile of sums right after the product has summed it."""
    t = Target(target or "llvm")
    intrin = best_dot_u8i8(t)
    if intrin is None:
        raise ScheduleError(f"the int8 kernel {func.name!r} needs a u8 x i8 dot-product "
                            f"instruction, and target {t} has none (AVX2 or AVX-512 VNNI). "
                            "Instead: compile the quantized model with opt_level=0, which "
                            "keeps its float QDQ form, or for an x86-64 target with AVX2")
    lanes = intrin.desc.params[2].shape[0]
    sch = Schedule(func)
    names = _root_blocks(func)
    placed = set()
    for k, name in enumerate(names):
        if name in placed:
            continue
        block = sch.get_block(name)
        loops = sch.get_loops(block)
        work = math.prod(_extent(sch, lp) for lp in loops)
        if name.endswith(ACC_SUFFIX) and intrin is not DOT_VNNI:
            variant = "pmaddubsw" if name.endswith(NARROW_ACC_SUFFIX) else "pmaddwd"
            after = names[k + 1] if k + 1 < len(names) else None
            if after is not None and not _tile_epilogue(sch.get(block), sch.get(sch.get_block(
                    after)), epilogue_tile_bytes):
                after = None
            _tile_product(sch, block, variant, work >= parallel_work,
                          sch.get_block(after) if after else None)
            placed.update([after] if after else [])
        elif name.endswith(ACC_SUFFIX):
            _tensorize_product(sch, block, intrin.name, lanes, work >= parallel_work)
        else:
            _vectorize_rows(sch, loops, work >= parallel_work)
    return sch.func


def _tensorize_product(sch: Schedule, block, intrin: str, lanes: int, parallel: bool) -> None:
    """Loops ``(*rows, jo, ji, *reduce, ki)`` -> ``(*rows, jo, [ja,] *reduce, ji, ki)`` with
    ``(ji, ki)`` one instruction's tile."""
    n_reduce = sum(iv.kind == "reduce" for iv in sch.get(block).iter_vars)
    loops = sch.get_loops(block)
    n_spatial = len(loops) - n_reduce
    rows, (jo, ji), reduce_ = loops[:n_spatial - 2], loops[n_spatial - 2:n_spatial], \
        loops[n_spatial:]
    split = [] if lanes >= PACK_LANES else list(sch.split(ji, [None, lanes]))
    ja, ji = (split[0], split[1]) if split else (None, ji)
    sch.reorder(*rows, jo, *([ja] if ja is not None else []), *reduce_[:-1], ji, reduce_[-1])
    sch.tensorize(ji, intrin)
    if parallel and rows:
        sch.parallel(sch.fuse(*rows) if len(rows) > 1 else rows[0])


def _tile_epilogue(acc, epilogue, most_bytes: int) -> bool:
    """Whether ``epilogue`` (the block after the product ``acc``) should requantize each
    tile of sums as soon as it is done: a channels-last conv's (its output (N, OH, OW, F)
    indexed like the sums (N, OH, OW, F16 // 16, 16)) whose sums take more than
    ``most_bytes``, so would not stay in cache; smaller ones run faster as one pass over
    all the sums."""
    sums, out = acc.writes[0].buffer, epilogue.writes[0].buffer
    return len(sums.shape) == 5 and len(out.shape) == 4 and \
        tuple(out.shape[:3]) == tuple(sums.shape[:3]) and \
        out.shape[3] <= sums.shape[3] * sums.shape[4] and \
        math.prod(sums.shape) * 4 > most_bytes


def _tile_product(sch: Schedule, block, variant: str, parallel: bool, epilogue=None) -> None:
    """Loops ``(*outer, row, jo, ji, *window, ko, ki)`` ->
    ``(*outer, jo_o, row_o, jo_i, *window, ko_o, [row_i, ji, ko_i, ki])``, the bracket one
    :func:`~mlcbook.tir.x86_intrinsics.u8i8_tile` call: as many rows as divide the row
    loop (at most the variant's register budget; 1 when neighbouring rows' activations are
    not one row apart, which the tile cannot read) and the deepest ``ko`` tile up to
    ``MAX_TILE_DEPTH`` that divides it. An ``epilogue`` block goes under ``row_o``, its
    channels vectorized: it requantizes each tile of sums while they are in cache."""
    n_reduce = sum(iv.kind == "reduce" for iv in sch.get(block).iter_vars)
    loops = sch.get_loops(block)
    n_spatial = len(loops) - n_reduce
    outer, row = loops[:n_spatial - 3], loops[n_spatial - 3]
    jo, ji = loops[n_spatial - 2:n_spatial]
    window, ko, ki = loops[n_spatial:-2], loops[-2], loops[-1]
    most = TILE_VARIANTS[variant] if _unit_row_step(sch.get(block), n_spatial - 3) else 1
    rows = max(r for r in range(1, most + 1) if _extent(sch, row) % r == 0)
    depth = max(d for d in range(1, MAX_TILE_DEPTH + 1) if _extent(sch, ko) % d == 0)
    cols = max(c for c in range(1, COLUMN_BLOCK + 1) if _extent(sch, jo) % c == 0)
    row_o, row_i = sch.split(row, [None, rows])
    ko_o, ko_i = sch.split(ko, [None, depth])
    jo_o, jo_i = sch.split(jo, [None, cols])
    sch.reorder(*outer, jo_o, row_o, jo_i, *window, ko_o, row_i, ji, ko_i, ki)
    sch.tensorize(row_i, u8i8_tile(variant, rows, depth).name)
    if epilogue is not None:
        sch.reverse_compute_at(epilogue, row_o)
        sch.vectorize(sch.get_loops(epilogue)[-1])
    if parallel:
        sch.parallel(sch.fuse(*outer, jo_o, row_o))


def _unit_row_step(block, k: int) -> bool:
    """Whether the uint8 activations the block reads move by one row per step of its
    ``k``-th iteration variable (a strided conv's move by the stride)."""
    var = block.iter_vars[k].var
    steps = []
    post_order_visit(block.body, lambda n: steps.append(affine(n.indices[-2])) if isinstance(
        n, BufferLoad) and n.buffer.dtype == "uint8" else None)
    return all(a is not None and a.coeffs.get(var, 0) == 1 for a in steps)


def _vectorize_rows(sch: Schedule, loops, parallel: bool) -> None:
    """Vectorize the last loop by 16 or 8 lanes when it splits evenly (an odd vector width
    makes slow code), fuse the others and run them in parallel if ``parallel``."""
    last = loops[-1]
    lanes = next((w for w in (16, 8) if _extent(sch, last) % w == 0), None)
    if lanes is not None and len(loops) > 1:
        if _extent(sch, last) > lanes:
            _, last = sch.split(last, [None, lanes])
        sch.vectorize(last)
    if parallel and len(loops) > 1:
        sch.parallel(sch.fuse(*loops[:-1]) if len(loops) > 2 else loops[0])


def _extent(sch: Schedule, loop) -> int:
    return sch.get(loop).extent.value


__all__ = ["int8_matmul", "pack_weights", "schedule_int8_matmul", "dot_lanes",
           "int8_acc_blocks", "schedule_int8_kernel", "int8_matmul_tiled", "MAX_TILE_DEPTH",
           "COLUMN_BLOCK", "EPILOGUE_TILE_BYTES"]
