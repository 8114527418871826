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
lanes (VNNI) or two tiles of 8 (AVX2).
"""

from __future__ import annotations

import math

import numpy as np

from ..codegen.target import Target
from ..errors import ScheduleError
from ..schedule import Schedule
from ..script import parse
from ..te.ops.int8_kernels import ACC_SUFFIX, PACK_LANES
from ..tir.function import PrimFunc
from ..tir.stmt import BlockRealize, For, SeqStmt
from ..tir.x86_intrinsics import best_dot_u8i8


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


def schedule_int8_kernel(func: PrimFunc, target=None, parallel_work: int = 1 << 20) -> PrimFunc:
    """The default schedule of an ``int8_dense`` / ``int8_conv2d`` kernel: its product stage
    tensorized with the best dot intrinsic of ``target`` (a ``ScheduleError`` if the target
    has none), the other stages (padding, the requantizing epilogue) vectorized
    along their last axis; rows in parallel when a stage has at least ``parallel_work``
    inner iterations (waking the pool's workers costs more than a small stage)."""
    t = Target(target or "llvm")
    intrin = best_dot_u8i8(t)
    if intrin is None:
        raise ScheduleError(f"the int8 kernel {func.name!r} needs a u8 x i8 dot-product "
                            f"instruction, and target {t} has none (AVX2 or AVX-512 VNNI). "
                            "Instead: compile the quantized model with opt_level=0, which "
                            "keeps its float QDQ form, or for an x86-64 target with AVX2")
    lanes = intrin.desc.params[2].shape[0]
    sch = Schedule(func)
    for name in _root_blocks(func):
        block = sch.get_block(name)
        loops = sch.get_loops(block)
        work = math.prod(_extent(sch, lp) for lp in loops)
        if name.endswith(ACC_SUFFIX):
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
           "int8_acc_blocks", "schedule_int8_kernel"]
