"""Search spaces: every point is legal (it builds and computes what the program computes)
or is rejected by a ScheduleError; decisions replay."""

import random

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ScheduleError
from mlcbook.frontend import examples
from mlcbook.tune.space import Space
from mlcbook.tune.tasks import extract_tasks
from mlcbook.tune.measure import random_inputs

from ._util import matmul

#: named targets, so that a test of a space's shape holds on any host
AVX2, AVX512 = "llvm -mcpu=x86-64-v3", "llvm -mcpu=skylake-avx512"


def _check(func, point):
    args = random_inputs(func, 0)
    want = [a.copy() for a in args]
    mb.tir.interpret(func, *want)
    mb.build(point.func)(*args)
    n = func.num_outputs
    for got, ref in zip(args[-n:], want[-n:]):
        np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("seed", range(6))
def test_matmul_points_are_legal_or_rejected(seed):
    f = matmul(32, 48, 24)
    try:
        p = Space(f).sample(seed)
    except ScheduleError:
        return
    _check(f, p)


def test_fused_kernels_of_a_cnn_get_spaces():
    tasks = extract_tasks(mb.from_onnx(examples.cnn(batch=1)))
    rng = random.Random(0)
    for t in tasks:
        p = Space(t.func).sample(rng.randrange(100))
        _check(t.func, p)


def test_decisions_replay_to_the_same_program():
    f = matmul(32)
    space = Space(f)
    p = space.sample(3)
    q = space.point(p.decisions, seed=99)
    assert mb.tir.structural_equal(p.func, q.func)
    assert mb.tir.structural_equal(mb.Trace.from_json(p.trace.as_json()).apply(f).func, p.func)


def test_mutation_changes_one_knob():
    space = Space(matmul(32))
    p = space.sample(1)
    q = space.mutate(p, random.Random(5))
    assert set(q.decisions) == set(p.decisions)
    assert sum(q.decisions[k] != p.decisions[k] for k in p.decisions) == 1


def _conv(c=16, hw=14):
    from mlcbook.ops import TensorType as T
    from mlcbook.ops import legalize_call
    return legalize_call("conv", [T((1, c, hw, hw)), T((c, c, 3, 3))], {"pads": (1, 1, 1, 1)})


def test_conv_points_vectorize_along_width_or_output_channels():
    f = _conv()
    space = Space(f, AVX2)
    along_width = space.point({"conv.vector_axis": 0}, hinted=True)
    along_channels = space.point({"conv.vector_axis": 1, "conv.rows": [2, 7],
                                  "conv.cols": [1, 2]}, seed=1)
    assert "b_packed" not in along_width.func.script()
    assert "b_packed" in along_channels.func.script()  # the weight in blocked layout
    _check(f, along_width)
    _check(f, along_channels)


def test_a_channel_tile_larger_than_twice_the_registers_is_rejected():
    space = Space(_conv(32, 28), AVX2)
    space.point({"conv.vector_axis": 1, "conv.cols": [1, 4], "conv.rows": [14, 2]})
    with pytest.raises(ScheduleError):  # 4 x 14 vectors > 32 accumulators
        space.point({"conv.vector_axis": 1, "conv.cols": [1, 4], "conv.rows": [2, 14]})


def test_a_decision_that_does_not_fit_is_a_schedule_error():
    space = Space(matmul(32))
    p = space.sample(1)
    with pytest.raises(ScheduleError):
        space.point({**p.decisions, "C.rows": 99})


def test_a_block_no_rule_covers_is_a_clear_error():
    from mlcbook.errors import SpaceError
    with pytest.raises(SpaceError, match="Instead: pass rules"):
        Space(_spatial(), classify=lambda realize, loops: "mystery").sample(0)


def _spatial():
    return mb.script.parse('''
@T.prim_func
def add(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + T.float32(1)
''')


def test_space_adapts_to_the_target_vector_width():
    avx512 = Space(matmul(32), target="llvm -mcpu=skylake-avx512 -mattr=+avx512f,+avx2,+avx")
    avx2 = Space(matmul(32), target="llvm -mcpu=znver3 -mattr=+avx2,+avx")
    assert (avx512.lanes, avx512.registers) == (16, 32)
    assert (avx2.lanes, avx2.registers) == (8, 16)


def _decide(space, values: dict) -> dict:
    """Decisions (indices) for knob values, read from the default point's candidates."""
    p = space.default_point()
    return {k: p.options[k].index(v) if k in p.options else v for k, v in values.items()}


def test_the_space_holds_the_hand_best_matmul_structure():
    # bench/_programs.py's matmul_best: 4 rows x 64 columns (8 vectors: 32 accumulators, twice
    # the registers), the whole reduction per tile, B repacked into 64-wide panels
    f = matmul(16, 64, 16)
    space = Space(f, AVX2)
    p = space.point(_decide(space, {"C.rows": 4, "C.cols": 64, "C.order": 0, "C.unroll": 1,
                                    "C.parallel": 0, "C.repack": 1}))
    assert (p.value("C.rows"), p.value("C.cols"), p.value("C.repack")) == (4, 64, 1)
    assert "B_packed" in p.func.script()
    _check(f, p)


def _bmm(b=2, m=32):
    from mlcbook.ops import TensorType as T
    from mlcbook.ops import legalize_call
    return legalize_call("matmul", [T((b, m, m)), T((b, m, m))])


def test_batched_matmul_points_can_repack_each_batch_into_panels():
    # b[batch, k, j] as panels b_packed[batch, j // 16, k, j % 16]
    f = _bmm(2, 16)
    space = Space(f, AVX2)
    p = space.point(_decide(space, {"matmul.cols": 16, "matmul.repack": 1}), seed=3)
    assert "T.alloc_buffer((2, 1, 16, 16)" in p.func.script()
    _check(f, p)
    unpacked = space.point({**p.decisions, "matmul.repack": 0}, checks=False)
    assert "b_packed" not in unpacked.func.script()


@pytest.mark.parametrize("target", [AVX2, AVX512])
def test_the_default_point_takes_the_machine_models_register_tile(target):
    from mlcbook.rules.tile_size import row_tile
    f = _bmm()
    space = Space(f, target)
    p = space.default_point()
    (rows,), width = row_tile((32,), 32, space.target)
    assert (p.value("matmul.rows"), p.value("matmul.cols")) == (rows, width)
    assert (p.value("matmul.order"), p.value("matmul.unroll"), p.value("matmul.repack")) \
        == (0, 1, 0)
    assert mb.tir.structural_equal(space.default_point().func, p.func)  # no random draw
    _check(f, p)


def test_neighbours_of_the_default_point_change_one_categorical_knob():
    f = _bmm()
    space = Space(f)
    p = space.default_point()
    near = space.neighbours(p)
    changed = [{k for k in p.decisions if q.decisions.get(k) != p.decisions[k]} for q in near]
    categorical = set(p.categories)
    assert all(len(c & categorical) == 1 for c in changed)
    assert {"matmul.repack"} in changed and {"matmul.order"} in changed
    repacked = near[changed.index({"matmul.repack"})]
    assert "b_packed" in repacked.func.script()
    _check(f, repacked)


def test_a_categorical_decision_out_of_range_is_rejected():
    with pytest.raises(ScheduleError, match=r"the decision 2 of sample_categorical must be "
                       r"an index in \[0, 2\)"):
        Space(_bmm()).point({"matmul.repack": 2})


def _blocked_conv(cin_blocks: int, cout_blocks: int, size: int):
    from mlcbook.ops import TensorType as T
    from mlcbook.ops import legalize_call
    return legalize_call("conv_nchwc", [T((1, cin_blocks, size, size, 16)),
                                        T((cout_blocks, cin_blocks, 3, 3, 16, 16))],
                         {"pads": (1,) * 4, "strides": (1, 1)})


def _loop_names(point, block):
    sch = mb.Schedule(point.func)
    return [sch.get(lp).loop_var.name for lp in sch.get_loops(sch.get_block(block))]


def test_a_conv_whose_tile_weights_overflow_l1_takes_the_channel_panel_by_default():
    # 64 channels in: a tile's weights over the whole reduction (36 KiB) exceed a 32 KiB L1,
    # so the default point takes the input-channel blocks above the row of tiles, as the
    # default schedule does; the other value of the knob keeps them below, and both compute
    # right. With Zen 5's 48 KiB L1 they fit: no panel
    f = _blocked_conv(4, 1, 4)
    assert Space(f, "llvm -mcpu=znver5").default_point().decisions["conv_nchwc.panel"] == 0
    space = Space(f, AVX2)
    p = space.default_point()
    assert p.decisions["conv_nchwc.panel"] == 1
    names = _loop_names(p, "conv_nchwc")
    assert names.index("rc") < names.index("x_0") < names.index("ry")
    q = space.point({**p.decisions, "conv_nchwc.panel": 0}, lenient=True, hinted=True)
    assert "x_0" in _loop_names(q, "conv_nchwc")[0]     # fused into the tile loops
    _check(f, p)
    _check(f, q)


def test_a_conv_whose_weights_fit_l1_keeps_the_panel_knob_off_by_default():
    p = Space(_blocked_conv(1, 1, 8), AVX2).default_point()
    assert p.decisions["conv_nchwc.panel"] == 0


def test_a_prime_width_row_of_a_conv_tiles_raggedly_by_default():
    # a 7-pixel row has no divisor from 2 to 6: the default point tiles it 4 + 3 (the
    # last tile predicated), as the machine model says for AVX2; other sizes are points too
    f = _blocked_conv(1, 1, 7)
    space = Space(f, AVX2)
    p = space.default_point()
    assert "T.where" in p.func.script()
    assert p.value("conv_nchwc.rows") == 4 and p.options["conv_nchwc.rows"][:6] == [1, 2, 3, 4, 5, 6]
    for rows in (1, 5):
        q = space.point(_decide(space, {**{k: p.value(k) for k in p.decisions},
                                        "conv_nchwc.rows": rows}), lenient=True)
        assert q.value("conv_nchwc.rows") == rows
        _check(f, q)


def test_winograd_kernels_get_spaces_whose_default_point_unrolls_the_tile():
    model = mb.from_onnx(examples.resnet(batch=1, size=32, widths=(16,), blocks=(1,)))
    tasks = extract_tasks(model, options={"winograd_min_flops": 0})
    kinds = {t.func.name.split("_")[-1] for t in tasks if "winograd" in t.func.name}
    assert {"input", "product", "relu"} <= kinds
    rng = random.Random(0)
    for t in tasks:
        if "winograd" in t.func.name:
            space = Space(t.func)
            for p in (space.default_point(), space.sample(rng.randrange(100))):
                _check(t.func, p)
            assert "unroll" in str(space.default_point().func) or "product" in t.func.name
