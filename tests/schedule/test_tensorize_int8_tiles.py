"""The register-tiled int8 kernels (mb.tir.x86_intrinsics.u8i8_tile: AVX2, VNNI), checked
three ways like every intrinsic: interpreted (desc on each tile) equals numpy, native code
equals numpy, and a program that differs from desc is a TensorizeError. Plus the one rule
that makes the fast AVX2 variant safe: vpmaddubsw saturates, so it runs only on weights
pairs_fit_int16 accepts.
"""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import BuildError, TIRError
from mlcbook.graph.kernels.int8_matmul import int8_matmul_tiled
from mlcbook.ops.int8_kernels import pack_int8
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors_data import TensorizeError
from mlcbook.tir.x86_intrinsics import (TileOp, pairs_fit_int16, parse_tile_op, tile_features,
                                        tile_op, u8i8_tile)

from ._util import parse

needs_avx2 = pytest.mark.skipif(not mb.Target().has_feature("avx2"),
                                reason="native AVX2 code needs an AVX2 host")


def tiled(m, n, k, variant, rows, depth, narrow=False):
    """int8_matmul_tiled with its product tensorized by u8i8_tile(variant, rows, depth)."""
    sch = Schedule(int8_matmul_tiled(m, n, k, narrow))
    block = sch.get_block("int8_matmul_w7_int8_acc" if narrow else "int8_matmul_int8_acc")
    i, jo, ji, ko, ki = sch.get_loops(block)
    i0, i1 = sch.split(i, [None, rows])
    k0, k1 = sch.split(ko, [None, depth])
    sch.reorder(i0, jo, k0, i1, ji, k1, ki)
    sch.tensorize(i1, u8i8_tile(variant, rows, depth).name)
    return sch.mod["main"]


def data(m, n, k, lo=-128, hi=128, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    w = rng.integers(lo, hi, (n, k), dtype=np.int8)
    return a, w, a.astype(np.int32) @ w.T.astype(np.int32)


def run(func, a, w, native=True):
    c = np.zeros((a.shape[0], w.shape[0] // 16, 16), np.int32)
    if native:
        mb.build(func)(a, pack_int8(w), c)
    else:
        mb.tir.interpret(func, a, pack_int8(w), c)
    return c.reshape(a.shape[0], w.shape[0])


@pytest.mark.parametrize("variant, rows", [("pmaddubsw", 4), ("pmaddwd", 2)])
def test_interpreter_runs_desc_and_matches_numpy(variant, rows):
    a, w, want = data(4, 16, 16, -64, 65)
    np.testing.assert_array_equal(run(tiled(4, 16, 16, variant, rows, 2, True), a, w, False),
                                  want)


@needs_avx2
@pytest.mark.parametrize("variant, rows, depth", [("pmaddubsw", 4, 3), ("pmaddubsw", 1, 1),
                                                  ("pmaddwd", 2, 3), ("pmaddwd", 1, 1)])
def test_native_matches_numpy(variant, rows, depth):
    a, w, want = data(4, 32, 24, -64, 65)
    np.testing.assert_array_equal(run(tiled(4, 32, 24, variant, rows, depth), a, w), want)


@needs_avx2
def test_pmaddwd_is_exact_at_the_extremes():
    a, w, _ = data(4, 16, 64)
    a[:] = 255
    w[:, 0::2], w[:, 1::2] = 127, -128
    w[:8] = -128            # 255 * -128 * 64: far past int16 in every partial sum
    want = a.astype(np.int32) @ w.T.astype(np.int32)
    np.testing.assert_array_equal(run(tiled(4, 16, 64, "pmaddwd", 2, 16), a, w), want)


@needs_avx2
def test_pmaddubsw_saturates_where_pairs_do_not_fit_int16():
    """Why the rule exists: on 127/-128 weights vpmaddubsw's int16 pair sums saturate."""
    a, w, _ = data(4, 16, 16)
    a[:] = 255
    w[:] = 127              # 255 * 127 * 2 = 64770 > 32767
    assert not pairs_fit_int16(pack_int8(w))
    got = run(tiled(4, 16, 16, "pmaddubsw", 4, 4), a, w)
    assert (got != a.astype(np.int32) @ w.T.astype(np.int32)).all()


@needs_avx2
def test_pmaddubsw_is_exact_at_the_edge_of_the_rule():
    a, w, _ = data(4, 16, 16)
    a[:] = 255
    w[:] = 64
    w[:8] = -64             # |w0| + |w1| = 128: pair sums of +-32640 fit int16
    assert pairs_fit_int16(pack_int8(w))
    want = a.astype(np.int32) @ w.T.astype(np.int32)
    np.testing.assert_array_equal(run(tiled(4, 16, 16, "pmaddubsw", 4, 4), a, w), want)


def test_pairs_fit_int16_checks_each_pair():
    assert pairs_fit_int16(np.array([[[[100, 28, -128, 0]]]], np.int8))
    assert not pairs_fit_int16(np.array([[[[100, 29, 0, 0]]]], np.int8))
    assert not pairs_fit_int16(np.array([[[[0, 0, -1, -128]]]], np.int8))


def test_pairs_fit_int16_wants_packed_weights():
    with pytest.raises(TIRError, match=r"packed weights \(\.\.\., 4\).*pack_int8"):
        pairs_fit_int16(np.zeros((3, 5), np.int8))


def test_the_kernel_name_is_in_the_lowered_program():
    text = mb.lower(tiled(4, 16, 16, "pmaddwd", 2, 4))["main"].script()
    assert 'T.tensor_call("x86.u8i8_tile.pmaddwd.2x16x4"' in text


# --- mismatches ---------------------------------------------------------------------------------
def test_wrong_row_count_is_an_error():
    with pytest.raises(TensorizeError, match=r"iteration domain.*extent 2 but desc's loop 0 "
                                             r"has extent 4"):
        sch = Schedule(int8_matmul_tiled(4, 16, 16))
        i, jo, ji, ko, ki = sch.get_loops(sch.get_block("int8_matmul_int8_acc"))
        i0, i1 = sch.split(i, [None, 2])
        sch.reorder(i0, jo, i1, ji, ko, ki)
        sch.tensorize(i1, u8i8_tile("pmaddubsw", 4, 4).name)


def two_rows(a="uint8", w_shape=(1, 4, 16, 4), w_index="vjo, vko, vji, vki"):
    """A 2 x 16 product over 16 terms with the row loop ready to tensorize: ``(sch, i)``."""
    sch = Schedule(parse(f"""
    @T.prim_func
    def mm(A: T.Buffer((2, 16), "{a}"), W: T.Buffer({w_shape}, "int8"),
           C: T.Buffer((2, 1, 16), "int32")):
        for i, jo, ji, ko, ki in T.grid(2, 1, 16, 4, 4):
            with T.block("C"):
                vi, vjo, vji, vko, vki = T.axis.remap("SSSRR", [i, jo, ji, ko, ki])
                C[vi, vjo, vji] = C[vi, vjo, vji] + T.Cast("int32", A[vi, vko * 4 + vki]) \\
                    * T.Cast("int32", W[{w_index}])
    """))
    i, jo, ji, ko, ki = sch.get_loops(sch.get_block("C"))
    sch.reorder(jo, i, ji, ko, ki)
    return sch, i


def test_wrong_index_pattern_is_an_error():
    """Columns and terms swapped: the block reads W[.., k, j] where desc reads B[d, j, k]."""
    sch, i = two_rows(w_shape=(1, 4, 4, 16), w_index="vjo, vko, vki, vji")
    with pytest.raises(TensorizeError, match=r"index pattern.*W"):
        sch.tensorize(i, u8i8_tile("pmaddwd", 2, 4).name)


def test_wrong_dtype_is_an_error():
    sch, i = two_rows(a="int8")
    with pytest.raises(TensorizeError, match=r"dtype.*A is int8 but desc's A is uint8"):
        sch.tensorize(i, u8i8_tile("pmaddwd", 2, 4).name)


def test_a_weight_tile_that_is_not_contiguous_is_a_build_error():
    """W's groups of 4 terms lie 8 apart: desc matches, but the instructions read 16 x 4
    contiguous bytes, so code generation refuses."""
    sch, i = two_rows(w_shape=(1, 4, 16, 8))
    sch.tensorize(i, u8i8_tile("pmaddwd", 2, 4).name)
    with pytest.raises(BuildError, match="packed 16 x 4 tiles.*Instead: pack the weights"):
        mb.build(sch.mod["main"])


@pytest.mark.parametrize("variant, rows, depth, why", [
    ("pmaddxx", 1, 1, "no int8 tile variant 'pmaddxx'"),
    ("pmaddubsw", 5, 1, "holds 1 to 4 rows"),
    ("pmaddwd", 3, 1, "holds 1 to 2 rows"),
    ("pmaddwd", 1, 0, "depth=0")])
def test_bad_tile_is_an_error(variant, rows, depth, why):
    with pytest.raises(TIRError, match=why):
        u8i8_tile(variant, rows, depth)


# --- the VNNI variants: rows x column tiles, any row count, sums over the whole depth --------
def vnni_tiled(m, n, k, variant, rows, tile, blocks=None):
    """int8_matmul_tiled with calls of ``rows`` rows x ``blocks`` (default ``tile[1]``)
    column tiles over all of k, each covered by register tiles of ``tile``."""
    blocks = blocks or tile[1]
    sch = Schedule(int8_matmul_tiled(m, n, k))
    i, jo, ji, ko, ki = sch.get_loops(sch.get_block("int8_matmul_int8_acc"))
    i0, i1 = sch.split(i, [None, rows])
    j0, j1 = sch.split(jo, [None, blocks])
    sch.reorder(j0, i0, i1, j1, ji, ko, ki)
    sch.tensorize(i1, u8i8_tile(variant, rows, k // 4, blocks, tile).name)
    return sch.mod["main"]


def runs_here(variant):
    lacks = [f for f in tile_features(variant) if not mb.Target().has_feature(f)]
    if lacks:
        pytest.skip(f"the {variant} kernel needs {', '.join(lacks)}, which this CPU lacks")


def test_vnni_tile_desc_interpreted_matches_numpy():
    a, w, want = data(7, 48, 12)
    np.testing.assert_array_equal(run(vnni_tiled(7, 48, 12, "vpdpbusd512", 7, (4, 3)), a, w,
                                      False), want)


@pytest.mark.parametrize("variant", ["vpdpbusd512", "vpdpbusd256"])
@pytest.mark.parametrize("m, n, k, rows, tile, blocks", [
    (8, 64, 64, 4, (4, 4), 4),   # whole register tiles
    (7, 64, 12, 7, (4, 2), 2),   # one tile of 4 rows, then one of 3
    (9, 32, 40, 9, (2, 2), 2),   # a loop of 4 tiles of 2 rows, then one of 1; depth 10 looped
    (3, 48, 4, 3, (8, 3), 3),    # fewer rows than the register tile
    (5, 80, 8, 5, (4, 2), 5)])   # column tiles 2, 2, then 1 (the schedule avoids such tails)
def test_vnni_tile_native_matches_numpy(variant, m, n, k, rows, tile, blocks):
    runs_here(variant)
    a, w, want = data(m, n, k)
    np.testing.assert_array_equal(run(vnni_tiled(m, n, k, variant, rows, tile, blocks), a, w),
                                  want)


def test_vnni_tile_is_exact_at_the_extremes():
    """vpdpbusd adds 4 exact products per lane: no int16 pair sums to saturate."""
    runs_here("vpdpbusd512")
    a, w, _ = data(6, 32, 256)
    a[:] = 255
    w[:] = -128
    w[:, 1::2] = 127
    want = a.astype(np.int32) @ w.T.astype(np.int32)
    np.testing.assert_array_equal(run(vnni_tiled(6, 32, 256, "vpdpbusd512", 6, (4, 2)), a, w),
                                  want)


def test_vnni_tile_op_names_round_trip():
    op = tile_op("vpdpbusd256", 50, 17, 4, (4, 1))
    assert op == "x86.u8i8_tile.vpdpbusd256.50x64x17.4x16"
    assert parse_tile_op(op) == TileOp("vpdpbusd256", 50, 17, 4, 4, 1)
    assert parse_tile_op("x86.u8i8_tile.pmaddwd.2x16x4") == TileOp("pmaddwd", 2, 4)
    for bad in ("x86.u8i8_tile.pmaddwd.2x32x4", "x86.u8i8_tile.vpdpbusd512.2x32x4",
                "x86.u8i8_tile.vpdpbusd512.2x24x4.2x16", "x86.u8i8_tile.nope.2x16x4"):
        assert parse_tile_op(bad) is None
    assert tile_features("vpdpbusd256") == ("avxvnni",)


def test_vnni_tile_with_other_column_tiles_is_an_error():
    sch = Schedule(int8_matmul_tiled(4, 64, 16))
    i, jo, ji, ko, ki = sch.get_loops(sch.get_block("int8_matmul_int8_acc"))
    j0, j1 = sch.split(jo, [None, 2])
    sch.reorder(j0, i, j1, ji, ko, ki)
    with pytest.raises(TensorizeError, match=r"iteration domain.*extent 2 but desc's loop 1 "
                                             r"has extent 4"):
        sch.tensorize(i, u8i8_tile("vpdpbusd512", 4, 4, 4, (4, 4)).name)


def test_bad_vnni_tile_is_an_error():
    with pytest.raises(TIRError, match=r"at least 1 row.*rows=0.*register_tile"):
        u8i8_tile("vpdpbusd512", 0, 4, 4, (4, 4))
    with pytest.raises(TIRError, match="one column tile"):
        u8i8_tile("pmaddwd", 2, 4, blocks=2)
