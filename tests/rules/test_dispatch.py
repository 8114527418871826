"""The rules as one walk over a function's blocks: the default schedule is the rules with every
knob at its hint, and that is the tuning space's default point, on every target."""

import pytest

import mlcbook as mb
from mlcbook.errors import SpaceError
from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.ops import TensorType as T
from mlcbook.ops import legalize_call
from mlcbook.rules import RULES, Rules
from mlcbook.tune import Space

#: named targets, so that the test holds on any host
TARGETS = ["llvm -mcpu=x86-64-v3", "llvm -mcpu=znver3", "llvm -mcpu=znver5",
           "llvm -mcpu=skylake-avx512"]

KERNELS = {
    "matmul": lambda: legalize_call("matmul", [T((64, 96)), T((96, 128))]),
    "batched_matmul": lambda: legalize_call("matmul", [T((2, 32, 32)), T((2, 32, 32))]),
    "conv_nchw": lambda: legalize_call("conv", [T((1, 16, 14, 14)), T((16, 16, 3, 3))],
                                       {"pads": (1, 1, 1, 1)}),
    "conv_blocked_7x7": lambda: legalize_call(
        "conv_nchwc", [T((1, 8, 7, 7, 16)), T((4, 8, 3, 3, 16, 16))],
        {"pads": (1,) * 4, "strides": (1, 1)}),
    "conv_blocked_56": lambda: legalize_call(
        "conv_nchwc", [T((1, 4, 56, 56, 16)), T((4, 4, 3, 3, 16, 16))],
        {"pads": (1,) * 4, "strides": (1, 1)}),
    "depthwise_blocked": lambda: legalize_call(
        "depthwise_nchwc", [T((1, 2, 28, 28, 16)), T((2, 3, 3, 16))],
        {"pads": (1,) * 4, "strides": (2, 2)}),
    "softmax": lambda: legalize_call("softmax", [T((32, 1000))], {"axis": -1}),
    "long_sum": lambda: legalize_call("sum", [T((16384, 8))], {"axes": (0,)}),
    "max_pool": lambda: legalize_call("max_pool", [T((1, 64, 56, 56))],
                                      {"kernel_shape": (3, 3), "strides": (2, 2),
                                       "pads": (1,) * 4}),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_the_default_schedule_is_the_spaces_default_point(kernel, target):
    f = KERNELS[kernel]()
    default = default_schedule(f, target)
    point = Space(f, target).default_point()
    assert mb.tir.structural_equal(point.func, default)
    assert point.decisions    # the default's decisions are knobs of the space


def test_the_default_point_replays_from_its_decisions():
    f = KERNELS["conv_blocked_7x7"]()
    space = Space(f, "llvm -mcpu=znver5")
    p = space.default_point()
    assert mb.tir.structural_equal(space.point(p.decisions).func, p.func)


def test_a_block_no_rule_covers_is_a_clear_error():
    f = KERNELS["softmax"]()
    with pytest.raises(SpaceError, match="of kind 'mystery'.*Instead: pass rules"):
        Rules(classify=lambda realize, loops: "mystery").schedule(f)


def test_a_rule_can_be_replaced_by_kind():
    seen = []

    def rule(knobs, name, rules):
        seen.append((name, rules.lanes))

    Rules("llvm -mcpu=znver5", {"row_reduction": rule}).schedule(KERNELS["softmax"]())
    assert seen and all(lanes == 16 for _, lanes in seen)
    assert RULES["row_reduction"] is not rule    # the defaults are not changed


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_a_blocked_depthwise_conv_tiles_pixels_that_share_each_weight_vector(strides):
    import numpy as np
    from mlcbook.ops import get
    f = legalize_call("depthwise_nchwc", [T((1, 2, 14, 14, 16)), T((2, 3, 3, 16))],
                      {"pads": (1,) * 4, "strides": strides})
    p = Space(f, "llvm -mcpu=znver5").default_point()
    assert p.value("depthwise_nchwc.rows") > 1      # a row tile of pixels, not one chain
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 14, 14, 16)).astype("float32")
    w = rng.standard_normal((2, 3, 3, 16)).astype("float32")
    want = get("depthwise_nchwc").reference(x, w, strides=strides, pads=(1,) * 4)
    y = np.zeros(want.shape, "float32")
    mb.build(default_schedule(f))(x, w, y)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, shape, attrs, tiled", [
    ("from_blocked", (1, 4, 20, 20, 16), {}, True),
    ("to_blocked", (1, 64, 9, 9), {"block": 16, "groups": 4}, True),
    ("from_blocked", (1, 5, 8, 8, 16), {"channels": 68}, False),   # channels not whole tiles
])
def test_a_transposing_copy_is_tiled_so_its_gathers_reuse_l1(op, shape, attrs, tiled):
    import numpy as np
    from mlcbook.ops import get
    f = legalize_call(op, [T(shape)], attrs)
    p = Space(f, "llvm -mcpu=znver5").default_point()
    assert (f"{op}.transpose" in p.decisions) == tiled
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    want = get(op).reference(x, **attrs)
    y = np.zeros(want.shape, "float32")
    mb.build(default_schedule(f))(x, y)
    np.testing.assert_array_equal(y, want)
