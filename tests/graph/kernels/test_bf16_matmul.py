"""The bf16 matmul register-tiled with AVX-512 BF16's ``vdpbf16ps``: assembly on named
targets everywhere, results where this CPU can run them, a clear error without BF16."""

import ml_dtypes
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import MissingFeatureError, MLCError, ScheduleError
from mlcbook.graph.kernels.bf16_matmul import (bf16_matmul, bf16_register_tile, bf16_variant,
                                       pack_bf16, pad_k, schedule_bf16_matmul)
from mlcbook.tir.x86_intrinsics import parse_tile_op, tile_features, tile_op

from .test_int8_matmul import dot_loops

#: named targets with AVX-512 BF16, so the assembly checks hold on any host
TARGETS = {"znver5": "llvm -mcpu=znver5", "sapphirerapids": "llvm -mcpu=sapphirerapids",
           "cooperlake": "llvm -mcpu=cooperlake"}
NO_BF16 = "llvm -mcpu=x86-64-v3"


def runnable(target):
    """Skip unless this machine has every feature ``target`` enables and AVX-512 BF16."""
    lacks = mb.Target(target).missing_features() + [
        f for f in tile_features("vdpbf16ps512") if not mb.Target().has_feature(f)]
    if lacks:
        pytest.skip(f"the bf16 kernel for {target} cannot run here: no {', '.join(lacks)}")


def data(m, n, k, seed=0):
    """A (m, k) and B (k, n) rounded to bfloat16, and their product in float64."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a, b, a64 @ b64, np.abs(a64) @ np.abs(b64)


def built(m, n, k, target):
    """The scheduled kernel for ``target`` with its padded inputs and reference."""
    a, b, want, size = data(m, n, k)
    ap, bp = pad_k(a), pack_bf16(b)
    func = schedule_bf16_matmul(bf16_matmul(m, 16 * bp.shape[0], ap.shape[1]), target)
    return func, ap, bp, want, size


def close(c, want, size, k):
    """Within float32 accumulation of ``k`` exact products (a bf16 x bf16 product is exact
    in float32; only the order and rounding of the sums differ)."""
    err = np.abs(c.astype(np.float64) - want)
    assert np.all(err <= k * 2.0 ** -23 * size + 1e-30), err.max()


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("m, n, k", [(1, 16, 6), (7, 48, 34), (50, 80, 260), (64, 256, 512),
                                     (3, 1024, 9), (50, 64, 33)])
def test_named_target_kernels_match_numpy(name, m, n, k):
    """M = 1, 7, 50 (whole register tiles, then a smaller one), N not a multiple of the
    tile's 64 columns, K odd (padded with a zero term) and not a multiple of the unrolled
    depth."""
    runnable(TARGETS[name])
    func, ap, bp, want, size = built(m, n, k, TARGETS[name])
    c = np.full((m, 16 * bp.shape[0]), np.nan, np.float32)   # the kernel writes every sum
    mb.build(func, target=TARGETS[name])(ap, bp, c)
    close(c[:, :n], want, size, k)


def test_host_default_target_matches_numpy():
    runnable("llvm")
    func, ap, bp, want, size = built(33, 128, 100, None)
    c = np.zeros((33, 128), np.float32)
    mb.build(func)(ap, bp, c)
    close(c, want, size, 100)


def test_the_tile_names_its_shape_and_runs_in_the_interpreter():
    func, ap, bp, want, size = built(7, 48, 12, TARGETS["znver5"])
    assert '"tensor_intrin": "x86.avx512bf16.bf16_vdpbf16ps512_7x48x12_4x48"' in func.script()
    assert 'T.tensor_call("x86.bf16_tile.vdpbf16ps512.7x48x6.4x48"' in \
        mb.lower(func)["bf16_matmul"].script()
    c = np.zeros((7, 48), np.float32)
    mb.tir.interpret(func, ap, bp, c)
    close(c, want, size, 12)


def test_tile_op_names_round_trip():
    op = tile_op("vdpbf16ps512", 50, 512, 4, (4, 4))
    assert op == "x86.bf16_tile.vdpbf16ps512.50x64x512.4x64"
    assert parse_tile_op(op) == ("vdpbf16ps512", 50, 512, 4, 4, 4)
    assert parse_tile_op("x86.bf16_tile.vpdpbusd512.50x64x512.4x64") is None   # not bf16
    assert parse_tile_op("x86.u8i8_tile.vdpbf16ps512.50x64x512.4x64") is None


def test_the_register_tile_follows_the_int8_rule():
    """4 rows x 4 zmm of float32 sums (16 >= vdpbf16ps's chains: 6 x 2 on Zen 5), beside 4
    weight vectors and 4 broadcasts; one column tile: 8 rows; one row: 8 column tiles."""
    assert bf16_register_tile(TARGETS["znver5"]) == (4, 4)
    assert bf16_register_tile(TARGETS["cooperlake"]) == (4, 4)
    assert bf16_register_tile(TARGETS["znver5"], blocks=1) == (8, 1)
    assert bf16_register_tile(TARGETS["znver5"], blocks=64, most_rows=1) == (1, 8)
    assert bf16_register_tile(TARGETS["znver5"], blocks=3) == (4, 3)


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("m", [1024, 50, 1])
def test_avx512_bf16_kernel_keeps_its_sums_in_zmm_without_spills(name, m):
    """The inner loops: vdpbf16ps on zmm into 16 accumulators (4 rows x 4 zmm; 50 rows: 12
    tiles, then one of 2 rows, 8 sums; 1 row: 1 x 8 zmm), no stack access."""
    func, _, _, _, _ = built(m, 1024, 1024, TARGETS[name])
    loops = dot_loops(mb.build(func, target=TARGETS[name]).asm(), "vdpbf16ps")
    acc = [{ln.split()[-1] for ln in loop if "vdpbf16ps" in ln} for loop in loops]
    assert min(map(len, acc)) >= 8 and max(map(len, acc)) == (16 if m > 1 else 8)
    assert all(r.startswith("%zmm") for regs in acc for r in regs)
    assert not [ln for loop in loops for ln in loop if "rsp" in ln]


def test_pack_bf16_layout_and_padding():
    b = np.arange(5 * 20, dtype=np.float32).reshape(5, 20)        # (K, N), exact in bf16
    bp = pack_bf16(b)
    assert bp.shape == (2, 3, 16, 2) and bp.dtype == ml_dtypes.bfloat16
    k, j = np.meshgrid(np.arange(5), np.arange(20), indexing="ij")
    np.testing.assert_array_equal(bp[j // 16, k // 2, j % 16, k % 2].astype(np.float32), b)
    assert not bp[:, 2, :, 1].astype(np.float32).any() and not bp[1, :, 4:].astype(
        np.float32).any()
    assert pad_k(np.ones((2, 5), np.float32)).shape == (2, 6)
    assert pad_k(np.ones((2, 4), np.float32)).shape == (2, 4)


def test_a_target_without_avx512_bf16_is_a_clear_error():
    assert bf16_variant(NO_BF16) is None
    with pytest.raises(MissingFeatureError, match="avx512bf16") as e:
        schedule_bf16_matmul(bf16_matmul(8, 64, 64), NO_BF16)
    assert isinstance(e.value, MLCError) and "Instead" in str(e.value)
    # code scheduled for a BF16 CPU does not build for one without it either
    func = schedule_bf16_matmul(bf16_matmul(8, 64, 64), TARGETS["znver5"])
    with pytest.raises(MissingFeatureError, match="avx512bf16"):
        mb.build(func, target=NO_BF16)


def test_bad_shape_is_an_error():
    with pytest.raises(ScheduleError, match="multiple of 16"):
        bf16_matmul(4, 20, 8)
    with pytest.raises(ScheduleError, match="even"):
        bf16_matmul(4, 16, 7)
