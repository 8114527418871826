import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Constant, Function, TensorType, Var, op
from mlcbook.graph.passes import (convert_layout, eliminate_common_subexpressions,
                                  fold_batch_norm)
from mlcbook.ops.layout import blocked, blocked_weight, unblocked

from .._models import MODELS, inputs, model

#: named targets: the layout's block follows the target, not the host
AVX2, AVX512 = "llvm -mcpu=x86-64-v3", "llvm -mcpu=znver5"


def _ops(f):
    return [c.op for c in f.calls()]


def _same(f, g, rtol=1e-5):
    x = inputs(f)
    np.testing.assert_allclose(mb.graph.interpret(g, *x), mb.graph.interpret(f, *x), rtol=rtol,
                               atol=1e-5)


def test_blocking_is_a_permutation_and_its_inverse():
    x = np.arange(2 * 32 * 3 * 3, dtype="float32").reshape(2, 32, 3, 3)
    b = blocked(x, 16)
    assert b.shape == (2, 2, 3, 3, 16) and b[1, 1, 2, 0, 5] == x[1, 21, 2, 0]
    np.testing.assert_array_equal(unblocked(b), x)
    w = np.arange(32 * 16 * 3 * 3, dtype="float32").reshape(32, 16, 3, 3)
    wb = blocked_weight(w, 8, 16)
    assert wb.shape == (2, 2, 3, 3, 8, 16) and wb[1, 1, 2, 0, 3, 4] == w[20, 11, 2, 0]


def test_the_residual_block_stays_blocked_from_the_first_conv_to_the_pooling():
    f = fold_batch_norm(model("residual"))
    g = eliminate_common_subexpressions(convert_layout(f))  # one to_blocked of the input
    assert _ops(g) == ["to_blocked", "conv_nchwc", "add", "relu", "conv_nchwc", "add", "add",
                       "relu", "mean", "reshape"]   # (1, C/16, 1, 1, 16) is NCHW already
    _same(f, g)


def test_pooling_and_flatten_see_the_layout_only_where_it_matters():
    f = model("cnn")
    g = convert_layout(f)
    ops = _ops(g)
    # the input's 1 channel is a block of 1: a reshape (a view), not a to_blocked copy
    assert ops[0] == "reshape" and "to_blocked" not in ops and ops.count("from_blocked") == 1
    assert ops.index("from_blocked") == ops.index("flatten") - 1
    _same(f, g)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_convert_layout_keeps_every_model_the_same(name):
    f = fold_batch_norm(model(name))
    _same(f, convert_layout(f))


@pytest.mark.parametrize("shape, block, identity", [
    ((2, 1, 5, 5), 1, True),     # one channel: NCHW1c is NCHW
    ((2, 32, 1, 1), 16, True),   # no pixels: NCHW16c is NCHW
    ((1, 16, 3, 3), 16, False),  # one block, but 9 pixels: channels go innermost
    ((2, 32, 2, 1), 16, False),
])
def test_a_layout_conversion_that_moves_no_element_is_a_view(shape, block, identity):
    x = Var("x", mb.graph.TensorType(shape))
    f = Function([x], op.relu(op.from_blocked(op.relu(op.to_blocked(x, block=block)))))
    g = convert_layout(f)
    assert ("reshape" in _ops(g)) == identity
    assert ("to_blocked" in _ops(g)) != identity and ("from_blocked" in _ops(g)) != identity
    a = np.random.default_rng(0).standard_normal(shape).astype("float32")
    np.testing.assert_array_equal(mb.graph.interpret(g, a), np.maximum(a, 0))
    exe = mb.compile(f, opt_level=3)
    assert any("blocked" in k for k in exe.kernels) != identity
    np.testing.assert_array_equal(exe(a), np.maximum(a, 0))


def test_a_grouped_conv_or_odd_channels_stay_in_nchw():
    x = Var("x", mb.graph.TensorType((1, 6, 5, 5)))
    rng = np.random.default_rng(0)
    w = Constant(rng.standard_normal((6, 3, 3, 3)).astype("float32"), "w")
    w2 = Constant(rng.standard_normal((5, 6, 1, 1)).astype("float32"), "w2")
    f = Function([x], op.conv(op.conv(x, w, group=2), w2))
    assert "conv_nchwc" not in _ops(convert_layout(f))


def test_the_blocked_conv_matches_conv_through_native_code():
    rng = np.random.default_rng(3)
    x = Var("x", mb.graph.TensorType((2, 32, 9, 9)))
    w = Constant(rng.standard_normal((48, 32, 3, 3)).astype("float32"), "w")
    b = Constant(rng.standard_normal(48).astype("float32"), "b")
    f = Function([x], op.relu(op.conv(x, w, b, pads=(1, 0, 1, 2), strides=(2, 1))))
    a = rng.standard_normal((2, 32, 9, 9)).astype("float32")
    exe = mb.compile(f, opt_level=3)
    assert any("conv_nchwc" in k for k in exe.kernels)
    np.testing.assert_allclose(exe(a), mb.graph.interpret(f, a), rtol=1e-4, atol=1e-4)


def test_to_blocked_refuses_groups_that_do_not_divide_the_channels():
    x = Var("x", mb.graph.TensorType((1, 6, 2, 2)))
    with pytest.raises(mb.MLCError, match=r"to_blocked: 4 groups do not divide the 6 channels "
                                          r"of the data \(1, 6, 2, 2\)"):
        op.to_blocked(x, block=4, groups=4)


def test_a_block_that_does_not_divide_a_group_pads_it_with_zeros():
    # 2 groups of 5 channels in blocks of 4: each group takes 2 blocks, 3 lanes of zeros
    x = np.arange(2 * 10 * 3, dtype="float32").reshape(2, 10, 3, 1)
    b = blocked(x, 4, groups=2)
    assert b.shape == (2, 4, 3, 1, 4)
    assert b[1, 2, 0, 0, 0] == x[1, 5, 0, 0] and b[1, 1, 0, 0, 0] == x[1, 4, 0, 0]
    assert not b[:, 1, :, :, 1:].any() and not b[:, 3, :, :, 1:].any()
    np.testing.assert_array_equal(unblocked(b, 10, groups=2), x)
    xv = Var("x", mb.graph.TensorType(x.shape))
    f = Function([xv], op.from_blocked(op.to_blocked(xv, block=4, groups=2), channels=10,
                                       groups=2))
    exe = mb.compile(f, opt_level=0)
    np.testing.assert_array_equal(exe(x), x)


def _conv_model(c, k, group, hw=6, bias=True):
    rng = np.random.default_rng(0)
    x = Var("x", mb.graph.TensorType((1, c, hw, hw)))
    w = Constant(rng.standard_normal((k, c // group, 3, 3)).astype("float32"), "w")
    b = Constant(rng.standard_normal(k).astype("float32"), "b") if bias else None
    y = op.relu(op.conv(x, w, b, pads=(1, 1, 1, 1), group=group))
    return Function([x], op.relu(op.conv(y, Constant(rng.standard_normal(
        (k, k // group, 1, 1)).astype("float32"), "w2"), group=group)))


@pytest.mark.parametrize("c, k, group, target", [
    (32, 24, 1, AVX512),     # 24 output channels: 2 blocks of 16, 8 lanes of zeros
    (32, 24, 1, AVX2),
    (96, 256, 2, AVX512),    # AlexNet's grouped conv: 48 in, 128 out per group
    (24, 240, 3, AVX512),    # 80 channels per group, in 5 blocks of 16
])
def test_grouped_and_padded_convs_run_blocked_and_stay_blocked_between(c, k, group, target):
    f = _conv_model(c, k, group)
    g = convert_layout(f, target)
    ops = _ops(g)
    assert ops.count("conv_nchwc") == 2 and "conv" not in ops
    assert ops.count("from_blocked") == 1      # the two convs share one layout between them
    _same(f, g, rtol=1e-4)
    x, = inputs(f)
    exe = mb.compile(f, opt_level=3)
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-3)


def _grouped_pointwise(c, k, group, hw=7):
    """A grouped 1x1 conv (bias, ReLU) of ``c`` -> ``k`` channels, a 1x1 conv again back to
    ``c``, plus the input (a residual), ReLU."""
    rng = np.random.default_rng(3)
    x = Var("x", mb.graph.TensorType((1, c, hw, hw)))
    w1 = Constant(rng.standard_normal((k, c // group, 1, 1)).astype("float32"), "w1")
    b1 = Constant(rng.standard_normal(k).astype("float32"), "b1")
    w2 = Constant(rng.standard_normal((c, k // group, 1, 1)).astype("float32"), "w2")
    y = op.relu(op.conv(x, w1, b1, group=group))
    return Function([x], op.relu(op.add(op.conv(y, w2, group=group), x)))


@pytest.mark.parametrize("c, k, group, target", [
    (272, 136, 4, AVX512),   # shufflenet: 68 and 34 channels per group (80 and 48 in blocks)
    (96, 40, 4, AVX2),       # 24 and 10 per group (in blocks of 8: 24 and 16)
])
def test_a_grouped_pointwise_conv_that_would_pad_its_blocks_is_a_matmul_in_nchw(c, k, group,
                                                                              target):
    f = _grouped_pointwise(c, k, group)
    g = convert_layout(f, target)
    ops = _ops(g)
    assert ops.count("matmul") == 2
    assert not {"conv", "conv_nchwc", "to_blocked", "from_blocked"} & set(ops)
    _same(f, g, rtol=1e-4)
    x, = inputs(f)
    exe = mb.compile(f, opt_level=3)    # the host: both cases pad in blocks of 8 or 16
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-3)
    # bias, ReLU and the residual are computed on the matmul's rows, so each fuses into it
    assert exe.stats["calls"] == 2


def test_a_grouped_pointwise_conv_whose_groups_fill_blocks_stays_blocked():
    f = _grouped_pointwise(128, 64, 2)
    assert "matmul" not in _ops(convert_layout(f, AVX512))


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_a_depthwise_conv_on_nchw_data_stays_in_nchw(strides):
    f = _depthwise_after(32, strides)
    assert _ops(convert_layout(f, AVX512)) == _ops(f)


def _depthwise_after(c, strides, first=None, multiplier=1, hw=9):
    """A depthwise 3x3 conv (bias, ReLU) of ``c`` channels, after a 1x1 conv of ``first``
    channels in (none: on the input)."""
    rng = np.random.default_rng(2)
    x = Var("x", mb.graph.TensorType((2, first or c, hw, hw)))
    y = x
    if first:
        y = op.relu(op.conv(x, Constant(rng.standard_normal((c, first, 1, 1)).astype(
            "float32"), "w1")))
    w = Constant(rng.standard_normal((c * multiplier, 1, 3, 3)).astype("float32"), "w")
    b = Constant(rng.standard_normal(c * multiplier).astype("float32"), "b")
    return Function([x], op.relu(op.conv(y, w, b, pads=(1, 1, 1, 1), strides=strides,
                                         group=c)))


@pytest.mark.parametrize("c, strides, first, target", [
    (32, (1, 1), 16, AVX512),       # its input is a blocked conv's output
    (48, (2, 2), 32, AVX512),
    (16, (2, 1), 8, AVX2),
])
def test_a_depthwise_conv_whose_input_is_blocked_runs_in_blocks(c, strides, first, target):
    f = _depthwise_after(c, strides, first)
    g = convert_layout(f, target)
    ops = _ops(g)
    assert ops.count("depthwise_nchwc") == 1 and "conv" not in ops
    assert ops.count("from_blocked") == 1 and ops.count("to_blocked") == 1   # at the edges
    _same(f, g, rtol=1e-4)
    x, = inputs(f)
    exe = mb.compile(f, opt_level=3, target=AVX2 if target == AVX2 else "llvm")  # runs here
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c, multiplier", [(24, 1), (32, 2)])
def test_a_depthwise_conv_of_part_blocks_or_with_a_multiplier_stays_in_nchw(c, multiplier):
    f = _depthwise_after(c, (2, 2), first=16, multiplier=multiplier)
    assert "depthwise_nchwc" not in _ops(convert_layout(f, AVX512))


def test_a_padded_layout_does_not_flow_through_an_op_that_could_turn_zeros_into_nan():
    rng = np.random.default_rng(1)
    x = Var("x", mb.graph.TensorType((1, 8, 4, 4)))
    w = Constant(rng.standard_normal((24, 8, 1, 1)).astype("float32"), "w")
    y = op.conv(x, w)
    f = Function([x], op.div(op.relu(y), op.add(y, y)))  # 0 / 0 in the padding
    g = convert_layout(f, AVX512)
    assert _ops(g)[:3] == ["to_blocked", "conv_nchwc", "relu"]
    assert _ops(g).index("from_blocked") < _ops(g).index("div")


def _padded_convs(pads_wide):
    """x (1, 16, 6, 6) -> conv 3x3 pad 1 -> relu -> conv 3x3 with ``pads_wide`` -> relu ->
    conv 1x1: only the middle conv pads wider than its kernel."""
    rng = np.random.default_rng(0)
    x = Var("x", mb.graph.TensorType((1, 16, 6, 6)))

    def conv(v, k, pads):
        w = Constant((rng.standard_normal((16, 16, k, k)) * 0.2).astype("float32"))
        b = Constant(rng.standard_normal(16).astype("float32"))
        return op.relu(op.conv(v, w, b, pads=pads))

    return Function([x], conv(conv(conv(x, 3, (1, 1, 1, 1)), 3, pads_wide), 1, (0, 0, 0, 0)))


@pytest.mark.parametrize("pads", [(4, 4, 4, 4), (5, 0, 1, 0), (0, 4, 0, 6)])
def test_a_conv_padded_wider_than_its_kernel_stays_in_nchw_and_the_others_block(pads):
    f = _padded_convs(pads)
    ops = _ops(convert_layout(f, AVX512))
    assert ops.count("conv_nchwc") == 2 and ops.count("conv") == 1
    x, = inputs(f)
    exe = mb.compile(f, opt_level=3)
    np.testing.assert_allclose(exe(x), mb.graph.interpret(f, x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("pads", [(2, 2, 2, 2), (0, 0, 3, 3)])
def test_a_conv_padded_at_most_as_wide_as_its_kernel_is_blocked(pads):
    # the bottom and right pads may be of any width in NCHWc; top and left up to the kernel
    assert _ops(convert_layout(_padded_convs(pads), AVX512)).count("conv_nchwc") == 3


def test_a_weight_two_convs_share_is_blocked_once():
    rng = np.random.default_rng(3)
    x = Var("x", TensorType((1, 16, 14, 14)))
    w = Constant(rng.standard_normal((16, 16, 3, 3)).astype("float32"), name="w")
    f = Function([x], op.conv(op.relu(op.conv(x, w, pads=(1, 1, 1, 1))), w, pads=(1, 1, 1, 1)))
    exe = mb.compile(f)
    assert [s.kind for s in exe.plan.slots].count("const") == 1
    a = rng.standard_normal((1, 16, 14, 14)).astype("float32")
    np.testing.assert_allclose(exe(a), mb.graph.interpret(f, a), rtol=1e-4, atol=1e-4)
