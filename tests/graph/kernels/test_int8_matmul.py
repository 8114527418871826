"""The int8 matmul and the int8 kernels of quantized models, with their default schedules,
tensorized with the best dot intrinsic; the register-tiled VNNI kernels checked on named
targets (assembly everywhere, results where this CPU can run them)."""

import re

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ScheduleError
from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.graph.kernels.int8_matmul import (dot_lanes, int8_matmul, int8_matmul_tiled, pack_weights,
                                       schedule_int8_matmul)
from mlcbook.rules.blocks import root_realizes
from mlcbook.rules.int8 import (PARALLEL_CHUNKS, dot_chains, int8_register_tile, int8_tile_variant, l2_budget,
                                row_chunk, schedule_int8_kernel)
from mlcbook.ops import get, legalize_call, type_of_array
from mlcbook.ops.int8_kernels import pack_conv_int8, pack_int8
from mlcbook.tir.x86_intrinsics import register_tile, tile_features


def data(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    return a, b, a.astype(np.int32) @ b.astype(np.int32).T


def test_default_schedule_tensorizes_and_matches_numpy():
    lanes = dot_lanes()
    func = schedule_int8_matmul(int8_matmul(32, 64, 128, lanes))
    assert "tensor_intrin" in func.script()
    a, b, want = data(32, 64, 128)
    c = np.zeros_like(want)
    mb.build(func)(a, pack_weights(b, lanes), c)
    np.testing.assert_array_equal(c, want)


def test_interpreter_runs_the_tensorized_matmul():
    func = schedule_int8_matmul(int8_matmul(4, 16, 8, dot_lanes()))
    a, b, want = data(4, 16, 8)
    c = np.zeros_like(want)
    mb.tir.interpret(func, a, pack_weights(b, dot_lanes()), c)
    np.testing.assert_array_equal(c, want)


def test_vnni_target_uses_vpdpbusd():
    target = mb.Target("llvm -mcpu=znver4")
    assert dot_lanes(target) == 16
    func = schedule_int8_matmul(int8_matmul(8, 32, 16, 16), target)
    assert "vpdpbusd" in mb.build(func, target=target).asm()


def test_pack_weights_layout():
    b = np.arange(8 * 8, dtype=np.int8).reshape(8, 8)
    bp = pack_weights(b, 4)
    assert bp.shape == (2, 2, 4, 4) and bp[1, 0, 2, 3] == b[6, 3]


def test_bad_shape_is_an_error():
    with pytest.raises(ScheduleError, match="multiple of lanes=8"):
        int8_matmul(4, 12, 8, 8)


def test_weights_packed_for_other_lanes_is_an_error():
    with pytest.raises(ScheduleError, match="packed for 4 lanes"):
        schedule_int8_matmul(int8_matmul(4, 16, 8, 4))


# --- the int8 kernels of quantized models (int8_dense, int8_conv2d) -------------------------------


def dense_case(m=3, k=10, n=20, seed=0, narrow=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (m, k), dtype=np.uint8)
    w = rng.integers(-64, 65, (n, k), dtype=np.int8) if narrow else \
        rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-3000, 3000, n).astype(np.int32)
    mult = (rng.random(n) * 2e-4).astype(np.float32)
    args = [x, pack_int8(w), bias, mult]
    attrs = dict(units=n, x_zp=5, y_zp=60, relu=1, narrow=narrow)
    return legalize_call("int8_dense", [type_of_array(a) for a in args], attrs), args, \
        get("int8_dense").reference(*args, **attrs)


def test_default_schedule_tensorizes_int8_dense_and_matches_reference():
    func, args, want = dense_case()
    sched = default_schedule(func)
    assert "tensor_intrin" in sched.script()
    out = np.zeros_like(want)
    mb.build(sched)(*args, out)
    np.testing.assert_array_equal(out, want)
    out[:] = 0
    mb.tir.interpret(sched, *args, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("narrow, kernel", [(0, "x86.avx2.u8i8_pmaddwd_1x16x12"),
                                            (1, "x86.avx2.u8i8_pmaddubsw_3x16x12")])
def test_avx2_kernel_follows_the_narrow_mark(narrow, kernel):
    """AVX2 only (znver3): narrow weights get vpmaddubsw, the others the exact pmaddwd
    kernel (at most 2 rows, so 1 for m=3); 12 terms (k=10 padded to 12) per call."""
    target = mb.Target("llvm -mcpu=znver3")
    func, args, want = dense_case(narrow=narrow)
    sched = default_schedule(func, target)
    assert f'"tensor_intrin": "{kernel}"' in sched.script()
    out = np.zeros_like(want)
    mb.build(sched, target=target)(*args, out)
    np.testing.assert_array_equal(out, want)


def test_int8_conv2d_compiled_matches_reference():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (1, 3, 5, 5), dtype=np.uint8)
    w = rng.integers(-128, 128, (4, 3, 3, 3), dtype=np.int8)
    args = [x, pack_conv_int8(w), rng.integers(-500, 500, 4).astype(np.int32),
            np.full(4, 1e-3, np.float32)]
    attrs = dict(channels=4, kernel_shape=(3, 3), pads=(1, 1, 1, 1), strides=(2, 2), x_zp=9,
                 y_zp=-3, dtype="int8")
    func = legalize_call("int8_conv2d", [type_of_array(a) for a in args], attrs)
    want = get("int8_conv2d").reference(*args, **attrs)
    out = np.zeros_like(want)
    mb.build(default_schedule(func))(*args, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("c, strides, narrow", [(3, (1, 1), 1), (8, (2, 2), 0)])
def test_channels_last_int8_conv2d_compiled_matches_the_nchw_reference(c, strides, narrow):
    """layout="NHWC" (its own copy and epilogue) against the NCHW reference, transposed."""
    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (2, c, 6, 5), dtype=np.uint8)
    w = rng.integers(-64, 64, (20, c, 3, 3), dtype=np.int8)
    args = [x, pack_conv_int8(w), rng.integers(-500, 500, 20).astype(np.int32),
            np.full(20, 2e-3, np.float32)]
    attrs = dict(channels=20, kernel_shape=(3, 3), pads=(1, 0, 1, 1), strides=strides, x_zp=7,
                 y_zp=3, relu=1, narrow=narrow)
    want = get("int8_conv2d").reference(*args, **attrs).transpose(0, 2, 3, 1)
    args[0] = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    attrs["layout"] = "NHWC"
    func = legalize_call("int8_conv2d", [type_of_array(a) for a in args], attrs)
    out = np.zeros(want.shape, want.dtype)
    mb.build(default_schedule(func))(*args, out)
    np.testing.assert_array_equal(out, want)


def _nhwc_conv_case(seed: int, shape, channels: int, wmax: int, narrow: int, **extra):
    """A 3x3 padded int8 conv on NHWC uint8 input of ``shape`` (channels last) to ``channels``,
    weights in [-wmax, wmax) (``extra`` attributes: a pool): its legalized function,
    arguments and reference output."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    w = rng.integers(-wmax, wmax, (channels, shape[-1], 3, 3), dtype=np.int8)
    args = [x, pack_conv_int8(w), rng.integers(-500, 500, channels).astype(np.int32),
            np.full(channels, 2e-3, np.float32)]
    attrs = dict(channels=channels, kernel_shape=(3, 3), pads=(1, 1, 1, 1), x_zp=7, y_zp=3,
                 narrow=narrow, layout="NHWC", **extra)
    func = legalize_call("int8_conv2d", [type_of_array(a) for a in args], attrs)
    return func, args, get("int8_conv2d").reference(*args, **attrs)


@pytest.mark.parametrize("narrow", [0, 1])
def test_a_channels_last_conv_with_many_sums_requantizes_each_tile(narrow):
    """Past epilogue_tile_bytes (0 here) the epilogue runs under the product's row tiles."""
    func, args, want = _nhwc_conv_case(5, (2, 7, 8, 8), 12, 64, narrow)
    target = mb.Target("llvm -mcpu=znver3")
    tiled = schedule_int8_kernel(func, target, epilogue_tile_bytes=0)

    def depth(f):   # of the epilogue: deeper when it sits under the product's loops
        line = next(ln for ln in f.script().splitlines() if 'T.block("int8_conv2d")' in ln)
        return len(line) - len(line.lstrip())

    assert depth(tiled) > depth(schedule_int8_kernel(func, target))
    out = np.zeros_like(want)
    mb.build(tiled, target=target)(*args, out)
    np.testing.assert_array_equal(out, want)


def test_int8_kernel_uses_vpdpbusd_on_a_vnni_target():
    target = mb.Target("llvm -mcpu=znver4")
    func, _, _ = dense_case()
    assert "vpdpbusd" in mb.build(default_schedule(func, target), target=target).asm()


def test_int8_kernel_on_a_target_without_a_dot_instruction_is_an_error():
    func, _, _ = dense_case()
    with pytest.raises(ScheduleError, match=r"needs an int8 dot-product instruction.*AVX2, "
                                            r"AVX-VNNI or AVX-512 VNNI on x86-64.*Instead: "):
        schedule_int8_kernel(func, "llvm -mcpu=x86-64")


def test_tensorizing_the_int8_stage_with_a_float_intrinsic_is_an_error():
    func, _, _ = dense_case()
    sch = mb.Schedule(func)
    i, jo, ji, ko, ki = sch.get_loops(sch.get_block("int8_dense_int8_acc"))
    sch.reorder(i, jo, ko, ji, ki)
    with pytest.raises(ScheduleError, match="does not match"):
        sch.tensorize(ji, "x86.avx2.fma_f32_4x16")


# --- register-tiled VNNI kernels: sized from the target, any shape -----------------------------

#: named targets, so the assembly checks hold on any host (each runs only where it can)
TARGETS = {"znver5": "llvm -mcpu=znver5", "cascadelake": "llvm -mcpu=cascadelake",
           "avxvnni": "llvm -mcpu=x86-64-v3 -mattr=+avx,+avx2,+fma,+avxvnni",
           "avx2": "llvm -mcpu=x86-64-v3"}


def runnable(target):
    """Skip unless this machine has every feature the target's int8 kernel uses."""
    t = mb.Target(target)
    variant = int8_tile_variant(t)
    lacks = t.missing_features() + [f for f in tile_features(variant)
                                    if not mb.Target().has_feature(f)]
    if lacks:
        pytest.skip(f"{target}'s int8 kernel cannot run here: no {', '.join(lacks)}")


def tiled_matmul(m, n, k, target, seed=0):
    """int8_matmul_tiled under the default schedule for ``target``, built; with its data."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    func = schedule_int8_kernel(int8_matmul_tiled(m, n, k), target)
    return func, a, w, a.astype(np.int32) @ w.T.astype(np.int32)


def dot_loops(asm: str, mnemonic: str = "vpdpbusd") -> list[list[str]]:
    """The lines of each innermost loop of ``asm`` (from a label to a later jump back to it,
    holding no other loop) that runs ``mnemonic``."""
    lines = asm.splitlines()
    labels = {ln.strip()[:-1]: i for i, ln in enumerate(lines) if re.match(r"\.LBB\w+:$",
                                                                            ln.strip())}
    loops = [(labels[m.group(1)], j) for j, ln in enumerate(lines)
             for m in [re.search(r"\bj\w+\s+(\.LBB\w+)", ln)]
             if m and labels.get(m.group(1), j) < j]
    inner = [(i, j) for i, j in loops if not any(i <= a and b <= j and (a, b) != (i, j)
                                                 for a, b in loops)]
    found = [lines[i:j + 1] for i, j in inner if any(mnemonic in ln for ln in lines[i:j])]
    assert found, f"no loop runs {mnemonic}"
    return found


def accumulators(loop: list[str]) -> set[str]:
    """The registers the loop's vpdpbusd add into (AT&T: the last operand)."""
    return {ln.split()[-1] for ln in loop if "vpdpbusd" in ln}


def test_the_register_tile_is_sized_from_the_target():
    """4 rows x 4 zmm (16 sums, beside 4 weight vectors and 4 broadcasts in 32 registers);
    AVX-VNNI's 16 ymm: 4 rows x 2 ymm; fewer columns or rows: the other side grows."""
    assert int8_register_tile(TARGETS["znver5"]) == (4, 4)
    assert int8_register_tile(TARGETS["cascadelake"]) == (4, 4)
    assert int8_register_tile(TARGETS["avxvnni"]) == (4, 1)
    assert int8_register_tile(TARGETS["znver5"], blocks=1) == (8, 1)
    assert int8_register_tile(TARGETS["znver5"], blocks=64, most_rows=1) == (1, 8)
    assert int8_register_tile(TARGETS["znver5"], blocks=3) == (4, 3)   # divides the columns
    for regs, lanes in ((32, 16), (16, 8)):
        for blocks in (1, 2, 3, 5, 7, 64):
            r, b = register_tile(regs, lanes, 8, blocks)
            per = 16 // lanes
            assert blocks % b == 0 and r * b * per + b * per + r <= regs
    assert [int8_tile_variant(TARGETS[t]) for t in TARGETS] == [
        "vpdpbusd512", "vpdpbusd512", "vpdpbusd256", "pmaddwd"]


def test_row_chunk_covers_rows_the_tile_does_not_divide():
    assert [row_chunk(m, 4) for m in (1024, 1, 7, 50, 1023, 1031)] == [4, 1, 7, 50, 33, 1031]


@pytest.mark.parametrize("name", sorted(TARGETS))
@pytest.mark.parametrize("m, n, k", [(1, 16, 12), (7, 48, 68), (50, 80, 260), (64, 128, 256),
                                     (3, 1024, 8)])
def test_named_target_kernels_match_numpy_on_any_shape(name, m, n, k):
    """M not a multiple of the tile's rows (1, 7, 50, 3), N of its columns (48, 80), K of
    its unrolled depth: a smaller tile takes the rows left over, nothing is refused."""
    runnable(TARGETS[name])
    func, a, w, want = tiled_matmul(m, n, k, TARGETS[name])
    c = np.zeros((m, n // 16, 16), np.int32)
    mb.build(func, target=TARGETS[name])(a, pack_int8(w), c)
    np.testing.assert_array_equal(c.reshape(m, n), want)


def test_the_vnni_tile_names_its_shape_and_runs_in_the_interpreter():
    func, a, w, want = tiled_matmul(7, 48, 12, TARGETS["znver5"])
    assert '"tensor_intrin": "x86.avx512vnni.u8i8_vpdpbusd512_7x48x12_4x48"' in func.script()
    assert 'T.tensor_call("x86.u8i8_tile.vpdpbusd512.7x48x3.4x48"' in \
        mb.lower(func)["main"].script()
    c = np.zeros((7, 3, 16), np.int32)
    mb.tir.interpret(func, a, pack_int8(w), c)
    np.testing.assert_array_equal(c.reshape(7, 48), want)


@pytest.mark.parametrize("name", ["znver5", "cascadelake"])
@pytest.mark.parametrize("m", [1024, 50])
def test_avx512_kernel_keeps_16_zmm_sums_without_spills(name, m):
    """The inner loops: vpdpbusd on zmm into 16 accumulators (>= 8 independent chains cover
    its latency x throughput; 50 rows: 12 tiles of 4 rows, then one of 2 rows, 8 sums), no
    stack access."""
    func, _, _, _ = tiled_matmul(m, 1024, 1024, TARGETS[name])
    loops = dot_loops(mb.build(func, target=TARGETS[name]).asm())
    acc = [accumulators(loop) for loop in loops]
    assert max(map(len, acc)) == 16 and min(map(len, acc)) >= 8
    assert all(r.startswith("%zmm") for regs in acc for r in regs)
    assert not [ln for loop in loops for ln in loop if "rsp" in ln]


def test_avx_vnni_kernel_uses_the_vex_form_on_ymm():
    func, _, _, _ = tiled_matmul(64, 256, 256, TARGETS["avxvnni"])
    asm = mb.build(func, target=TARGETS["avxvnni"]).asm()
    assert "{vex} vpdpbusd" in " ".join(asm.split()) and "zmm" not in asm
    (loop,) = dot_loops(asm)
    acc = accumulators(loop)
    assert len(acc) == 8 and all(r.startswith("%ymm") for r in acc)
    assert not [ln for ln in loop if "rsp" in ln]


def test_avx2_target_keeps_its_pmadd_kernels():
    func, _, _, _ = tiled_matmul(64, 256, 256, TARGETS["avx2"])
    asm = mb.build(func, target=TARGETS["avx2"]).asm()
    assert "vpmaddwd" in asm and "vpdpbusd" not in asm and "zmm" not in asm


@pytest.mark.parametrize("narrow", [0, 1])
def test_vnni_channels_last_conv_requantizes_each_tile(narrow):
    """The VNNI product with the epilogue under its row tiles (epilogue_tile_bytes=0), on
    an output 7 columns wide (not a multiple of the tile's 4 rows) and 20 channels."""
    target = TARGETS["znver5"]
    runnable(target)
    func, args, want = _nhwc_conv_case(6, (2, 5, 7, 8), 20, 128, narrow)
    sched = schedule_int8_kernel(func, target, epilogue_tile_bytes=0)
    assert "vpdpbusd512_7x32x" in sched.script()
    out = np.zeros_like(want)
    mb.build(sched, target=target)(*args, out)
    np.testing.assert_array_equal(out, want)


def _one_pass_epilogue(func) -> bool:
    """Whether the requantizing epilogue is a loop nest of its own, not under the product's."""
    return "int8_conv2d" in [r.block.name for r in root_realizes(func)]


@pytest.mark.parametrize("channels_in, short", [(1, True), (8, True), (16, False)])
def test_vnni_conv_with_short_sums_requantizes_each_tile(channels_in, short):
    """With VNNI, sums of fewer than SHORT_SUM_TERMS terms (3x3 over 1 or 8 channels: 12
    and 72) are requantized under the product's row tiles even when they fit the cache; 144
    terms are not; the AVX2 kernel keeps one pass; both compute the reference."""
    func, args, want = _nhwc_conv_case(8, (2, 6, 9, channels_in), 16, 64, 1)
    vnni = schedule_int8_kernel(func, TARGETS["znver5"])
    avx2 = schedule_int8_kernel(func, TARGETS["avx2"])
    assert _one_pass_epilogue(vnni) != short and _one_pass_epilogue(avx2)
    for sched, target in ((vnni, TARGETS["znver5"]), (avx2, TARGETS["avx2"])):
        runnable(target)
        out = np.zeros_like(want)
        mb.build(sched, target=target)(*args, out)
        np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("target, tile_bytes", [("znver5", None), ("avx2", 0)])
def test_a_pooling_epilogue_runs_under_the_rows_of_sums_it_reads(target, tile_bytes):
    """A conv pooled 2x2 in its epilogue (6 rows of sums, 3 of output): the epilogue sits
    under each pair of rows of the product."""
    func, args, want = _nhwc_conv_case(9, (2, 6, 8, 1), 16, 64, 1, pool=(2, 2))
    sched = schedule_int8_kernel(func, TARGETS[target], epilogue_tile_bytes=tile_bytes)
    assert not _one_pass_epilogue(sched)
    assert "for n, y_0 in T.grid(2, 3):\n        for y_1, " in sched.script()
    runnable(TARGETS[target])
    out = np.zeros_like(want)
    mb.build(sched, target=TARGETS[target])(*args, out)
    np.testing.assert_array_equal(out, want)


def test_a_parallel_copy_runs_its_outer_loops_in_parallel_and_nests_the_rest():
    """The copy of a 14x14 conv over 8 channels (8 x 16 x 14 pixels): batch and rows fused
    make PARALLEL_CHUNKS or more parallel iterations; its columns stay an inner loop."""
    func, args, want = _nhwc_conv_case(9, (8, 14, 14, 8), 16, 64, 1)
    sched = schedule_int8_kernel(func, TARGETS["znver5"], parallel_work=1)
    pad = next(ln for ln in sched.script().splitlines() if "T.parallel(" in ln)
    assert "T.parallel(128)" in pad and 128 >= PARALLEL_CHUNKS > 8
    runnable(TARGETS["znver5"])
    out = np.zeros_like(want)
    mb.build(sched, target=TARGETS["znver5"])(*args, out)
    np.testing.assert_array_equal(out, want)


def test_matmul_integer_model_compiles_to_the_exact_product():
    """ONNX MatMulInteger (7 x 68 by 68 x 40, constant weights) through mb.compile: the
    int8 kernel of this machine, exactly numpy's int32 matmul."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, (7, 68), dtype=np.uint8)
    b = rng.integers(-128, 128, (68, 40), dtype=np.int8)
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["Y"])], "m",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [7, 68])],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, [7, 40])],
        [numpy_helper.from_array(b, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    got = mb.compile(mb.from_onnx(model))(a)
    np.testing.assert_array_equal(got, a.astype(np.int32) @ b.astype(np.int32))


def test_cache_budget_comes_from_the_targets_l2():
    assert l2_budget("llvm -mcpu=znver3") == 256 * 1024       # half of Zen 3's 512 KiB
    assert l2_budget("llvm -mcpu=cascadelake") == 512 * 1024
    assert dot_chains("llvm -mcpu=znver5") == 8 and dot_chains("llvm -mcpu=znver3") == 1


@pytest.mark.parametrize("target", ["llvm -mcpu=haswell", "llvm -mcpu=znver5"])
def test_an_epilogue_under_row_tiles_sees_every_column(target):
    """240 channels of 576 terms: more weight columns than haswell's L2 budget holds in
    one AVX2 panel, and more column groups than one VNNI tile; the requantizing epilogue
    under the row tiles still needs all of a row's channels, so they all go inside it."""
    rng = np.random.default_rng(8)
    x = rng.integers(0, 256, (1, 4, 4, 64), dtype=np.uint8)
    w = rng.integers(-128, 128, (240, 64, 3, 3), dtype=np.int8)
    args = [x, pack_conv_int8(w), rng.integers(-500, 500, 240).astype(np.int32),
            np.full(240, 2e-4, np.float32)]
    attrs = dict(channels=240, kernel_shape=(3, 3), pads=(1, 1, 1, 1), x_zp=7, y_zp=3,
                 layout="NHWC")
    func = legalize_call("int8_conv2d", [type_of_array(a) for a in args], attrs)
    sched = schedule_int8_kernel(func, target, epilogue_tile_bytes=0)
    runnable(target)
    want = get("int8_conv2d").reference(*args, **attrs)
    out = np.zeros_like(want)
    mb.build(sched, target=target)(*args, out)
    np.testing.assert_array_equal(out, want)
