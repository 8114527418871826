"""Default schedules keep the meaning of every kernel (the scheduled kernel, interpreted, against
the reference evaluator)."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph.kernels.default_schedule import default_schedule, schedule_kernels
from mlcbook.ops.layout import blocked, blocked_weight
from mlcbook.ops import TensorType as T
from mlcbook.ops import legalize_call
from mlcbook.tir.analysis import collect_blocks

from ..._reference import run_reference

AVX2, AVX512 = "llvm -mcpu=znver3", "llvm -mcpu=skylake-avx512"


def run(func, args, runner=mb.tir.interpret):
    outs = [np.zeros(p.shape, p.dtype) for p in func.outputs]
    runner(func, *args, *outs)
    return outs[0]


def test_tiled_reduction_accumulates_in_a_local_tile_zeroed_before_the_reduction():
    g = default_schedule(legalize_call("matmul", [T((8, 24)), T((24, 40))]))
    realizes = collect_blocks(g.body)
    names = [r.block.name for r in realizes]
    assert names == ["root", "matmul_init", "matmul", "matmul_local"]
    by_name = {r.block.name: r.block for r in realizes}
    assert by_name["matmul"].init is None
    assert by_name["matmul_init"].writes[0].buffer.scope == "local"
    assert by_name["matmul"].writes[0].buffer.scope == "local"


@pytest.mark.parametrize("cols", [200, 10, 40, 72])
def test_tiled_reduction_tiles_divide_awkward_widths_without_a_predicate(cols):
    f = legalize_call("matmul", [T((8, 24)), T((24, cols))])
    g = default_schedule(f)
    assert "T.where" not in str(g)
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s).astype("float32") for s in ((8, 24), (24, cols))]
    np.testing.assert_allclose(run(g, args), args[0] @ args[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,types,attrs", [
    ("matmul", [T((8, 24)), T((24, 40))], {}),
    ("gemm", [T((8, 24)), T((24, 200)), T((200,))], {}),
    ("gemm", [T((8, 24)), T((200, 24)), T((200,))], {"trans_b": 1}),
    ("conv", [T((1, 3, 10, 12)), T((4, 3, 3, 3)), T((4,))], {"pads": (1, 1, 1, 1)}),
    ("conv", [T((1, 2, 5, 5)), T((8, 2, 3, 3))], {"pads": (1, 1, 1, 1)}),
    ("softmax", [T((3, 20))], {}),
    ("add", [T((5, 70)), T((70,))], {}),
    ("max_pool", [T((1, 2, 8, 8))], {"kernel_shape": (2, 2), "strides": (2, 2)}),
])
def test_scheduled_kernels_compute_the_same(op, types, attrs):
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(t.shape).astype(t.dtype) for t in types]
    f = legalize_call(op, types, attrs)
    g = default_schedule(f)
    mb.tir.verify(g)
    np.testing.assert_allclose(run(g, args), run(f, args, run_reference), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target,lanes,rows", [(AVX2, 8, 4), (AVX512, 16, 8)])
def test_tiled_reduction_vectorizes_and_parallelizes(target, lanes, rows):
    g = default_schedule(legalize_call("matmul", [T((64, 256)), T((256, 512))]), target)
    text = str(g)
    assert "T.parallel" in text and f"T.vectorized({lanes})" in text
    assert f"T.unroll({rows})" in text


def _conv_numpy(x, w, pad, groups=1):
    """NCHW conv of stride 1, by shifted slices (independent of mlcbook)."""
    n, c, h, wd = x.shape
    k, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, k, oh, ow), np.float64)
    for o in range(k):
        g = o // (k // groups)
        for i in range(cg):
            for a in range(kh):
                for b in range(kw):
                    out[:, o] += xp[:, g * cg + i, a:a + oh, b:b + ow] * w[o, i, a, b]
    return out


def _blocked_conv(seed: int, cin: int, cout: int, k: int, size: int, pad: int,
                  stride: int = 1, target: str = AVX2, pad_border_loops: bool = True):
    """A conv_nchwc of random data scheduled for ``target`` (AVX2), and ``check()``, which
    builds and runs it (for this machine) and compares it with numpy."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, cin, size, size)).astype("float32")
    w = rng.standard_normal((cout, cin, k, k)).astype("float32")
    xb, wb = blocked(x, 16), blocked_weight(w, 16, 16)
    g = default_schedule(legalize_call("conv_nchwc", [T(xb.shape), T(wb.shape)],
                                       {"pads": (pad,) * 4, "strides": (stride,) * 2}), target,
                         pad_border_loops)

    def check():
        want = blocked(_conv_numpy(x, w, pad)[:, :, ::stride, ::stride], 16)
        y = np.zeros(want.shape, "float32")
        mb.build(g)(xb, wb, y)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    return g, check


def test_blocked_conv_of_a_short_map_tiles_rows_and_pixels_and_computes_the_same():
    g, check = _blocked_conv(0, 16, 32, 3, 14, pad=1)
    conv = next(r.block for r in collect_blocks(g.body) if r.block.name == "conv_nchwc")
    assert str(g).count("T.unroll(2)") >= 3    # rows, pixels, the two ymm of 16 channels
    assert conv.writes[0].buffer.scope == "local"
    check()


def _conv_loops(func, name="conv_nchwc"):
    sch = mb.Schedule(func)
    return [(sch.get(lp).loop_var.name, sch.get(lp).kind)
            for lp in sch.get_loops(sch.get_block(name))]


@pytest.mark.parametrize("size,stride", [(7, 1), (13, 2)])
def test_blocked_conv_shares_each_channel_block_among_ragged_pixel_tiles(size, stride):
    # 64 channels in: a tile's weights over the whole reduction (36 KiB) exceed L1, so the
    # channel blocks go above the pixel tiles (4 + 3 of a 7-pixel row, one predicated);
    # one block of output channels, so none to take into the register tile
    g, check = _blocked_conv(0, 64, 16, 3, size, pad=1, stride=stride)
    names = [n for n, _ in _conv_loops(g)]
    assert names.index("rc") < names.index("x_0") < names.index("ry")
    assert ("x_1", "unrolled") in _conv_loops(g) and "T.where" in str(g)
    check()


def test_blocked_conv_of_a_7x7_map_tiles_its_pixels_with_two_channel_blocks():
    # 4 + 3 pixels leave the last tile 6 accumulators; 49 pixels as one axis in tiles of
    # 2 pixels x 2 blocks of 16 output channels have 8 (the last tile predicated), each
    # input-channel block's weights of both blocks (18 KiB) shared by all 25 tiles
    g, check = _blocked_conv(2, 64, 32, 3, 7, pad=1)
    loops = _conv_loops(g)
    assert ("y_x_fused_1", "unrolled") in loops and ("ko_1", "unrolled") in loops
    assert [n for n, _ in loops].index("rc") < [n for n, _ in loops].index("y_x_fused_0")
    assert "y_x_fused_0 * 2 + y_x_fused_1 < 49" in str(g)
    check()


@pytest.mark.parametrize("k,size,stride", [(1, 7, 1), (3, 7, 1), (1, 14, 2)])
def test_avx512_blocked_conv_onto_a_7x7_map_tiles_7_pixels_with_two_channel_blocks(
        k, size, stride):
    # one zmm per 16 channels: a 7-pixel row alone is 7 accumulators, too few for 2 FMAs x 4
    # cycles; 7 pixels x 2 blocks of output channels are 14
    g, check = _blocked_conv(3, 32, 64, k, size, pad=k // 2, stride=stride,
                             target="llvm -mcpu=znver5")
    loops = _conv_loops(g)
    assert ("y_x_fused_1", "unrolled") in loops and ("ko_1", "unrolled") in loops
    assert "T.unroll(7)" in str(g) and "T.where" not in str(g)
    check()


@pytest.mark.parametrize("target", ["llvm -mcpu=x86-64-v3", AVX2, "llvm -mcpu=znver5"])
@pytest.mark.parametrize("cin,cout,k,size", [(32, 96, 5, 27), (32, 64, 1, 14), (32, 64, 3, 9)])
def test_blocked_conv_tiles_pixels_across_rows_only_under_a_panel(target, cin, cout, k, size):
    # a pixel tile across rows of the map, without a panel above it, left the parallel tile
    # loop writing regions of the accumulators it could not prove apart (MLC-S015; a 5x5
    # conv onto 27x27 for x86-64-v3)
    g, check = _blocked_conv(4, cin, cout, k, size, pad=k // 2, target=target)
    check()


def test_blocked_1x1_conv_of_a_7_pixel_row_tiles_it_4_plus_3_in_registers():
    # a short reduction (16 channels) stays innermost; only the pixel tile is ragged (its
    # weights fit L1, so no channel blocks above the tiles, nor two in a tile)
    g, check = _blocked_conv(1, 16, 32, 1, 7, pad=0)
    loops = _conv_loops(g)
    assert "x_0" in loops[0][0] and loops[1][0] == "rc"   # pixel tiles above the sum
    assert ("x_1", "unrolled") in loops and "T.where" in str(g)
    check()


def test_a_conv_whose_channel_step_is_short_keeps_its_whole_reduction_in_registers():
    # in NCHW one input channel is only 9 taps: accumulators through cache every 9 FMAs
    # ran slower, so the tiles keep the reduction innermost
    g = default_schedule(legalize_call("conv", [T((1, 64, 8, 8)), T((16, 64, 3, 3))],
                                       {"pads": (1,) * 4}), AVX2)
    kinds = [kind for _, kind in _conv_loops(g, "conv")]
    assert kinds[:4] == ["parallel", "serial", "serial", "serial"]   # tiles, rc, taps
    assert "serial" not in kinds[4:]


def test_a_big_pad_keeps_its_column_loop_apart_for_lowering_to_cut_at_the_border():
    g, check = _blocked_conv(0, 16, 16, 3, 56, pad=1)
    assert [kind for _, kind in _conv_loops(g, "conv_nchwc_pad")] == \
        ["parallel", "serial", "vectorized"]        # (n, cb, y) fused; x; the 16 channels
    pad = mb.lower(g).main().body.body.stmts[0]
    selects = []
    mb.tir.post_order_visit(pad, lambda n: selects.append(n)
                            if isinstance(n, mb.tir.Select) else None)
    assert selects and not any("x" in str(s.cond) for s in selects)   # y's tests only
    check()


def test_with_pad_border_loops_off_a_big_pad_is_fused_like_any_spatial_block():
    g, check = _blocked_conv(0, 16, 16, 3, 56, pad=1, pad_border_loops=False)
    assert [kind for _, kind in _conv_loops(g, "conv_nchwc_pad")] == ["parallel", "vectorized"]
    check()


def test_schedule_kernels_gives_each_primfunc_its_default_schedule():
    funcs = {name: legalize_call(name, [T((64, 64))]) for name in ("relu", "exp")}
    mod, tuned = schedule_kernels(mb.tir.IRModule(funcs), AVX2)
    assert tuned == [] and set(mod.functions) == set(funcs)
    for name, f in funcs.items():
        assert mb.tir.structural_equal(mod[name], default_schedule(f, AVX2))


def test_depthwise_conv_pads_each_channel_just_before_its_tiles():
    # each output channel reads only its own padded plane: padded under the channel loop,
    # no plane computed twice, none written out whole
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 16, 10, 10)).astype("float32")
    w = rng.standard_normal((16, 1, 3, 3)).astype("float32")
    g = default_schedule(legalize_call("conv", [T(x.shape), T(w.shape)],
                                       {"pads": (1,) * 4, "group": 16}))
    root = g.body.block.body
    assert not isinstance(root, mb.tir.SeqStmt), "the padding is a loop nest of its own"
    kernel = mb.build(g)
    y = np.zeros((1, 16, 10, 10), "float32")
    kernel(x, w, y)
    np.testing.assert_allclose(y, _conv_numpy(x, w, 1, groups=16), rtol=1e-5, atol=1e-5)
    assert "gather" not in kernel.llvm_ir(), "the padded rows are read as masked vectors"


@pytest.mark.parametrize("op,types,attrs", [
    # every tile reads all channels: padding under the tiles would compute it again per tile
    ("conv_nchwc", [T((1, 2, 6, 6, 16)), T((2, 2, 3, 3, 16, 16))],
     {"pads": (1,) * 4, "strides": (1, 1)}),
    # a plane per channel, but 8 channels are too few iterations left to run in parallel
    ("conv", [T((1, 8, 10, 10)), T((8, 1, 3, 3))], {"pads": (1,) * 4, "group": 8}),
])
def test_a_conv_pads_once_at_the_root_when_its_tiles_cannot_part_the_padding(op, types, attrs):
    g = default_schedule(legalize_call(op, types, attrs))
    assert isinstance(g.body.block.body, mb.tir.SeqStmt)
    assert len(g.body.block.body.stmts) == 2


@pytest.mark.skipif(not mb.Target("llvm").is_host or mb.Target("llvm").vector_bits != 256,
                    reason="reads x86 AVX2 assembly")
def test_matmul_tile_keeps_its_accumulators_in_registers():
    kernel = mb.build(default_schedule(legalize_call("matmul", [T((8, 64)), T((64, 512))])))
    spills = [line for line in kernel.asm().splitlines()
              if "ymm" in line and "(%rsp)" in line]
    assert not spills, spills


def test_conv_with_a_short_output_row_is_tiled_and_a_short_sum_is_not():
    conv = default_schedule(legalize_call("conv", [T((1, 4, 5, 5)), T((8, 4, 3, 3))],
                                          {"pads": (1, 1, 1, 1)}))
    assert "conv_local" in [r.block.name for r in collect_blocks(conv.body)]
    total = default_schedule(legalize_call("sum", [T((3, 5, 64))],
                                           {"axes": (2,), "keepdims": 0}))
    assert all(r.block.name != "sum_local" for r in collect_blocks(total.body))


def test_gemm_bias_is_added_in_the_tile_write_back():
    f = legalize_call("gemm", [T((8, 24)), T((24, 64)), T((64,))])
    g = default_schedule(f)
    names = [r.block.name for r in collect_blocks(g.body)]
    assert names == ["root", "gemm_acc_init", "gemm_acc", "gemm_acc_local"]
    (write_back,) = [r.block for r in collect_blocks(g.body) if r.block.name == "gemm_acc_local"]
    assert write_back.writes[0].buffer is g.params[-1]
    assert not g.body.block.alloc_buffers or all(
        b.scope == "local" for b in g.body.block.alloc_buffers)


def test_epilogue_reading_the_tile_at_two_places_keeps_its_own_loops():
    f = mb.te.create_prim_func(list(_matmul_then_mirror()))
    g = default_schedule(f)
    names = [r.block.name for r in collect_blocks(g.body)]
    assert "T" in names
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(p.shape).astype("float32") for p in f.params[:2]]
    c = args[0] @ args[1]
    np.testing.assert_allclose(run(g, args), c + c[:, ::-1], rtol=1e-5, atol=1e-5)


def _matmul_then_mirror():
    te = mb.te
    a, b = te.placeholder((8, 24), name="A"), te.placeholder((24, 32), name="B")
    k = te.reduce_axis(24, name="k")
    c = te.compute((8, 32), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    t = te.compute((8, 32), lambda i, j: c[i, j] + c[i, 31 - j], name="T")
    return a, b, t


@pytest.mark.parametrize("batch", [1, 2])
def test_conv_epilogue_is_in_the_write_back_even_for_a_batch_of_one(batch):
    # an elementwise op on a batch of 1 once read its input at x[0, c, ...] (a broadcast
    # index) and so could not be folded into the conv tile's write-back: a full extra pass
    from mlcbook.graph import Constant, Function, TensorType, Var, fuse_ops, op
    from mlcbook.graph.fused_kernels import legalize_group
    rng = np.random.default_rng(0)
    x = Var("x", TensorType((batch, 8, 8, 8)))
    w = Constant(rng.standard_normal((16, 8, 3, 3)).astype("float32"), "w")
    b = Constant(rng.standard_normal((16, 1, 1)).astype("float32"), "b")
    y = op.relu(op.add(op.conv(x, w, pads=(1, 1, 1, 1), name="conv"), b, name="bias"),
                name="relu")
    (group,) = fuse_ops(Function([x], y)).groups
    f = legalize_group(group)
    g = default_schedule(f)
    names = [r.block.name for r in collect_blocks(g.body)]
    assert "relu" not in names and "bias" not in names, names
    assert all(buf.scope == "local" or buf.shape != (batch, 16, 8, 8)
               for buf in g.body.block.alloc_buffers)
    args = [rng.standard_normal(p.shape).astype("float32") for p in f.params[:-1]]
    np.testing.assert_allclose(run(g, args), run(f, args, run_reference), rtol=1e-4, atol=1e-4)


def test_a_long_sum_is_computed_in_two_levels_close_to_float64():
    # one running float32 total over 2**20 terms drifts ~1e-5 from the exact mean; block
    # sums of ~sqrt(n) terms then a sum of the blocks stay within float32's own rounding
    from mlcbook.graph import Function, TensorType, Var, op
    from mlcbook.ops.legalize import legalize_call
    n = 1 << 20
    scheduled = default_schedule(legalize_call("mean", [TensorType((1, n))],
                                               {"axes": (1,), "keepdims": 0}))
    assert "mean_sum_rf" in str(scheduled)
    x = Var("x", TensorType((1, n)))
    exe = mb.compile(Function([x], op.mean(x, axes=(1,), keepdims=0)))
    a = (np.random.default_rng(0).random((1, n)) + 1).astype("float32")
    exact = a.astype(np.float64).mean(axis=1)
    assert abs(exe(a)[0] - exact[0]) / exact[0] < 1e-6      # one level: ~1e-5


def test_short_and_integer_sums_stay_one_level():
    from mlcbook.ops.legalize import legalize_call
    from mlcbook.ops.types import TensorType
    short = default_schedule(legalize_call("sum", [TensorType((4, 4096))], {"axes": (1,)}))
    ints = default_schedule(legalize_call("sum", [TensorType((1, 1 << 16), "int32")],
                                          {"axes": (1,)}))
    assert "_rf" not in str(short) and "_rf" not in str(ints)


def test_a_long_sum_down_columns_is_computed_in_two_levels_close_to_float64():
    # a mean over the rows of a (2**17, 16) matrix is a tiled reduction (its output row is
    # the vector); its partial sums are tiled the same way, the block axis outermost
    from mlcbook.graph import Function, TensorType, Var, op
    from mlcbook.ops.legalize import legalize_call
    n = 1 << 17
    scheduled = default_schedule(legalize_call("mean", [TensorType((n, 16))],
                                               {"axes": (0,), "keepdims": 0}))
    assert "mean_sum_rf" in str(scheduled)
    x = Var("x", TensorType((n, 16)))
    exe = mb.compile(Function([x], op.mean(x, axes=(0,), keepdims=0)))
    a = (np.random.default_rng(0).random((n, 16)) + 1).astype("float32")
    exact = a.astype(np.float64).mean(axis=0)
    assert np.max(np.abs(exe(a) - exact) / exact) < 1e-6       # one level: 1.3e-5


def test_a_long_contraction_stays_one_level():
    # matmul and conv accumulate one level (as onnxruntime's GEMM does): partial sums of a
    # contraction would cost a buffer of blocks x outputs
    from mlcbook.ops.legalize import legalize_call
    from mlcbook.ops.types import TensorType
    mm = default_schedule(legalize_call("matmul", [TensorType((4, 1 << 14)),
                                                   TensorType((1 << 14, 16))]))
    assert "_rf" not in str(mm)


def _twice_read(producer_terms: int):
    """y = x + x + ... (``producer_terms`` terms), then z = y * y: y is read twice."""
    te = mb.te
    x = te.placeholder((8,), "float32", name="x")

    def big(i):
        v = x[i]
        for _ in range(producer_terms - 1):
            v = v + x[i]
        return v
    y = te.compute((8,), big, name="y")
    z = te.compute((8,), lambda i: y[i] * y[i], name="z")
    return te.create_prim_func([x, z])


def test_a_big_block_read_twice_stays_a_block_and_a_small_one_is_inlined():
    # inlining copies the producer per read: the loop IR shares no subexpressions
    big = default_schedule(_twice_read(20))
    assert [r.block.name for r in collect_blocks(big.body)] == ["root", "y", "z"]
    small = default_schedule(_twice_read(2))
    assert [r.block.name for r in collect_blocks(small.body)] == ["root", "z"]
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(run(big, [x]), (20 * x) ** 2)


def test_a_block_marked_keep_materialized_stays_a_block_however_small():
    # the te op knows the value is reused (a recurrent state): no size rule is needed
    te = mb.te
    x = te.placeholder((8,), "float32", name="x")
    y = te.compute((8,), lambda i: x[i] + 1.0, name="y",
                   attrs={mb.tir.KEEP_MATERIALIZED: True})
    z = te.compute((8,), lambda i: y[i] * y[i], name="z")
    func = default_schedule(te.create_prim_func([x, z]))
    assert [r.block.name for r in collect_blocks(func.body)] == ["root", "y", "z"]
    x_ = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(run(func, [x_]), (x_ + 1) ** 2)


def test_recurrent_states_and_low_bit_stages_are_marked_keep_materialized():
    func = legalize_call("lstm", [T((3, 2, 4)), T((1, 32, 4)), T((1, 32, 8)), T((1, 64)),
                                  T((1, 2, 8)), T((1, 2, 8)), T((1, 24))])
    kept = {r.block.name for r in collect_blocks(func.body)
            if dict(r.block.annotations).get(mb.tir.KEEP_MATERIALIZED)}
    assert kept == {f"lstm_{s}_0_{t}" for s in "ch" for t in range(3)}
    enc = legalize_call("lowbit_encode", [T((4,))], {"format": "float8_e5m2"})
    kept = [r.block.name for r in collect_blocks(enc.body)
            if dict(r.block.annotations).get(mb.tir.KEEP_MATERIALIZED)]
    assert kept == ["lowbit_encode_exponent", "lowbit_encode_magnitude"]


def test_grid_sample_computes_each_points_coordinates_and_weights_once():
    # inlined, every channel and each of the 16 cubic taps recomputed them (twice the code)
    func = default_schedule(legalize_call("grid_sample", [T((1, 2, 5, 5)), T((1, 3, 3, 2))],
                                          {"mode": "cubic"}))
    assert [r.block.name for r in collect_blocks(func.body)][1:] == [
        "grid_sample_coord0", "grid_sample_coord1", "grid_sample_coord0_weight",
        "grid_sample_coord1_weight", "grid_sample"]


def test_a_loop_too_short_for_a_vector_is_unrolled_outside_the_parallel_loop():
    # an RGB image into 3-channel blocks: fused, each element paid a // and a % by 3
    f = legalize_call("to_blocked", [T((1, 3, 112, 112))], {"block": 3})
    g = default_schedule(f)
    mb.tir.verify(g)
    text = str(g)
    assert "T.unroll(3)" in text and "% 3" not in text and "T.parallel" in text
    x = np.random.default_rng(0).standard_normal((1, 3, 112, 112)).astype("float32")
    y = np.zeros((1, 1, 112, 112, 3), "float32")
    mb.build(g)(x, y)
    np.testing.assert_array_equal(y, x.transpose(0, 2, 3, 1)[:, None])


def test_the_padding_of_a_1_channel_blocked_image_is_vectorized_along_its_rows():
    # NCHW1c: the innermost loop (the block's 1 channel) is fused into the row, which is
    # the vector; it was one scalar loop over the whole tensor with a // and % per element
    f = legalize_call("conv_nchwc", [T((2, 1, 9, 9, 1)), T((1, 1, 3, 3, 1, 8))],
                      {"pads": (1,) * 4, "strides": (1, 1)})
    g = default_schedule(f)
    mb.tir.verify(g)
    assert "T.vectorized(11)" in str(g)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 1, 9, 9)).astype("float32")
    w = rng.standard_normal((8, 1, 3, 3)).astype("float32")
    y = np.zeros((2, 1, 9, 9, 8), "float32")
    mb.build(g)(x[..., None], blocked_weight(w, 1, 8), y)
    xp = np.pad(x[:, 0], ((0, 0), (1, 1), (1, 1)))
    want = sum(xp[:, None, i:i + 9, j:j + 9] * w[None, :, 0, i, j, None, None]
               for i in range(3) for j in range(3))
    np.testing.assert_allclose(y, blocked(want, 8), rtol=1e-5, atol=1e-5)


def test_a_conv_of_8_output_channels_leaves_a_register_spare():
    # 1 ymm of channels: 14 pixels + 1 weight + 1 broadcast were all 16 registers (it spilled)
    f = legalize_call("conv_nchwc", [T((1, 1, 2, 14, 1)), T((1, 1, 3, 3, 1, 8))],
                      {"pads": (1,) * 4, "strides": (1, 1)})
    text = str(default_schedule(f, AVX2))
    assert "T.unroll(7)" in text and "T.unroll(14)" not in text
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 1, 2, 14, 1)).astype("float32")
    w = rng.standard_normal((1, 1, 3, 3, 1, 8)).astype("float32")
    g = default_schedule(f, AVX2)
    np.testing.assert_allclose(run(g, [x, w]), run(f, [x, w]), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op,tiled", [("max_pool", True), ("avg_pool", False)])
def test_a_max_pool_keeps_a_row_of_running_maxima_in_registers(op, tiled):
    # no load serves two outputs of a pool, but several outputs along the row are independent
    # chains of vmaxps instead of one through its latency; average pools keep one chain
    f = legalize_call(op, [T((1, 2, 13, 13, 16))],
                      {"kernel_shape": (3, 3, 1), "strides": (2, 2, 1)})
    g = default_schedule(f, AVX512)
    assert ("T.unroll(" in g.script()) == tiled
    x = np.random.default_rng(7).standard_normal((1, 2, 13, 13, 16)).astype("float32")
    np.testing.assert_allclose(run(g, [x]), run(f, [x], run_reference), rtol=1e-6)
