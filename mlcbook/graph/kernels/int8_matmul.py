"""The int8 matrix product as a program, and chapter 8's schedule of it, which tensorizes
with the best u8 x i8 dot-product intrinsic the target has (VNNI's ``vpdpbusd``, else AVX2's
widening multiply-add).

``C[i, j] = sum_k int32(A[i, k]) * int32(B[j, k])`` with ``A`` uint8 (activations), ``B``
int8 (weights) and ``C`` int32. The sum is exact in int32 for ``K < 2**31 / (255 * 128)``,
about 65000 terms; beyond that it wraps, as numpy's int32 matmul does. The weights are
packed once, offline, as ``Bp[j // L, k // 4, j % L, k % 4]`` (``L`` the intrinsic's lanes),
so that each instruction reads one contiguous ``L x 4`` tile::

    func = int8_matmul(64, 128, 256, lanes=8)
    bp = pack_weights(b, lanes=8)                   # b: (N, K) int8
    kernel = mb.build(schedule_int8_matmul(func))
    kernel(a, bp, c)                                # c == a.astype(int32) @ b.astype(int32).T

:func:`int8_matmul_tiled` is the kernel that a quantized model's dense layer compiles to
(``int8_dense``: :mod:`mlcbook.te.ops.int8_kernels`), weights packed in tiles of 16 lanes;
its schedule is the int8 rule's (:mod:`mlcbook.rules.int8`: register-tiled VNNI or AVX2
kernels sized from the target's machine model)::

    schedule_int8_kernel(int8_matmul_tiled(50, 1024, 1024), "llvm -mcpu=znver5")
"""

from __future__ import annotations

import numpy as np

from ...codegen.target import Target
from ...errors import ScheduleError
from ...schedule import Schedule
from ...script import parse
from ...te import create_prim_func, placeholder
from ...te.ops.int8_kernels import PACK_LANES, int8_product
from ...tir.function import PrimFunc
from ...tir.x86_intrinsics import best_dot_u8i8


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
    ``pack_int8``, C the (m, n) product in memory;
    :func:`~mlcbook.rules.int8.schedule_int8_kernel` schedules it like a quantized model's
    dense layer. ``narrow=True`` promises weights that pass
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


__all__ = ["int8_matmul", "pack_weights", "schedule_int8_matmul", "dot_lanes",
           "int8_matmul_tiled"]
