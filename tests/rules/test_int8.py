"""The int8 rule's knobs: its default point is the int8 kernel's default schedule, and every
register tile it offers computes the exact int32 product (checked on named targets where this
CPU cannot run them: the assembly)."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.graph.kernels.int8_matmul import int8_matmul_tiled
from mlcbook.ops.int8_kernels import pack_int8
from mlcbook.errors import ScheduleError
from mlcbook.rules.int8 import int8_register_tile, int8_tile_variant, schedule_int8_kernel
from mlcbook.rules.spatial import PARALLEL_WORK
from mlcbook.tune import Space

ARM = "llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1"
TARGETS = ["llvm -mcpu=znver5", "llvm -mcpu=cascadelake", "llvm -mcpu=x86-64-v3",
           "llvm -mcpu=x86-64-v3 -mattr=+avx2,+avxvnni", ARM]


@pytest.mark.parametrize("target", TARGETS)
def test_the_int8_kernels_default_point_is_its_default_schedule(target):
    f = int8_matmul_tiled(50, 128, 256)
    point = Space(f, target).default_point()
    assert mb.tir.structural_equal(point.func, default_schedule(f, target))
    assert mb.tir.structural_equal(point.func, schedule_int8_kernel(f, target, PARALLEL_WORK))


def test_the_vnni_tile_is_a_knob_hinted_by_the_register_file():
    f = int8_matmul_tiled(64, 256, 256)
    p = Space(f, "llvm -mcpu=znver5").default_point()
    name = next(k for k in p.decisions if k.endswith(".tile"))
    assert p.value(name) == int8_register_tile("llvm -mcpu=znver5", 16, 64) == (4, 4)
    assert (1, 8) in p.options[name] and (8, 1) in p.options[name]


def _can_run_vnni() -> bool:
    return mb.Target("llvm").machine.dot_product("u8i8") is not None \
        and mb.Target("llvm").has_feature("avx512vnni")


@pytest.mark.parametrize("tile", [(1, 8), (8, 1), (2, 2)])
def test_every_vnni_tile_of_the_space_computes_the_exact_product(tile):
    target = "llvm -mcpu=znver5"
    m, n, k = 20, 128, 64
    f = int8_matmul_tiled(m, n, k)
    space = Space(f, target)
    p = space.default_point()
    name = next(k for k in p.decisions if k.endswith(".tile"))
    q = space.point({**p.decisions, name: p.options[name].index(tile)})
    assert q.value(name) == tile
    intrin = [v for v in q.func.script().split('"') if "vpdpbusd512" in v]
    assert intrin and intrin[0].endswith(f"_{tile[0]}x{16 * tile[1]}")
    if not _can_run_vnni():
        pytest.skip("this CPU has no AVX-512 VNNI: the tile was checked as a program only")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    c = np.zeros((m, n // 16, 16), np.int32)
    mb.build(q.func, target=target)(a, pack_int8(b), c)
    np.testing.assert_array_equal(c.reshape(m, n), a.astype(np.int32) @ b.astype(np.int32).T)


@pytest.mark.parametrize("target", [ARM, "llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod"])
def test_arm_with_dotprod_gets_the_sdot_tile(target):
    assert int8_tile_variant(target) == "sdot"
    # 32 registers of 4 int32 lanes: 4 rows x 4 registers of sums, 4 of column sums, 4
    # weight vectors, 4 broadcasts and 2 constants
    assert int8_register_tile(target) == (4, 1)
    f = schedule_int8_kernel(int8_matmul_tiled(8, 64, 256), target)
    assert "aarch64.dotprod.u8i8_sdot_4x16x256_4x16" in f.script()


def test_arm_without_dotprod_says_which_instruction_the_int8_kernel_needs():
    with pytest.raises(ScheduleError, match=r"sdot, of the dotprod feature.*Instead: .*"
                                            r"opt_level=0.*-mattr=\+dotprod"):
        schedule_int8_kernel(int8_matmul_tiled(8, 64, 256), "llvm -mtriple=aarch64-linux-gnu")
