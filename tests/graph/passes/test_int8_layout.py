"""convert_int8_layout: int8 convs on channels-last data, the layout kept through max pools,
transposes cancelled between convs and folded into the dense weights at the end; every
rewrite checked against the interpreter on the graph before it (exact: integers)."""

import numpy as np

import mlcbook as mb
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.graph.passes import convert_int8_layout, optimize
from mlcbook.ops.int8_kernels import pack_conv_int8, pack_int8

from .._models import model


def _ops(f):
    return [c.op for c in f.calls()]


def _conv(x, c_in, c_out, seed, **attrs):
    rng = np.random.default_rng(seed)
    w = rng.integers(-64, 64, (c_out, c_in, 3, 3), dtype=np.int8)
    bias = rng.integers(-2000, 2000, c_out).astype(np.int32)
    mult = np.full(c_out, 1e-3, np.float32)
    return op.int8_conv2d(x, Constant(pack_conv_int8(w), f"w{seed}"), Constant(bias),
                          Constant(mult), channels=c_out, kernel_shape=(3, 3), x_zp=4, y_zp=2,
                          relu=1, **attrs)


def _quantized_cnn(c_in=8):
    """int8 conv -> padded strided max pool -> strided int8 conv -> flatten -> int8 dense."""
    x = Var("x", mb.graph.TensorType((2, c_in, 9, 9), "uint8"))
    h = _conv(x, c_in, 16, 1, pads=(1, 1, 1, 1))
    h = op.max_pool(h, kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))   # (2, 16, 5, 5)
    h = _conv(h, 16, 8, 2, strides=(2, 2), pads=(1, 1, 1, 1))                    # (2, 8, 3, 3)
    rng = np.random.default_rng(3)
    w = pack_int8(rng.integers(-64, 64, (10, 72), dtype=np.int8))
    y = op.int8_dense(op.flatten(h), Constant(w, "fc"), Constant(np.zeros(10, np.int32)),
                      Constant(np.full(10, 1e-3, np.float32)), units=10, y_zp=100)
    return Function([x], y)


def _same(f, g, c_in=8):
    a = np.random.default_rng(0).integers(0, 256, (2, c_in, 9, 9), dtype=np.uint8)
    np.testing.assert_array_equal(mb.graph.interpret(g, a), mb.graph.interpret(f, a))


def test_activations_stay_channels_last_from_the_first_conv_to_the_dense_layer():
    f = _quantized_cnn()
    g = convert_int8_layout(f)
    assert _ops(g) == ["transpose", "int8_conv2d", "reshape", "max_pool", "reshape",
                       "int8_conv2d", "reshape", "int8_dense"]
    assert {c.attrs["layout"] for c in g.calls() if c.op == "int8_conv2d"} == {"NHWC"}
    _same(f, g)


def test_one_input_channel_enters_channels_last_by_a_view():
    f = _quantized_cnn(c_in=1)
    g = convert_int8_layout(f)
    assert "transpose" not in _ops(g)
    _same(f, g, c_in=1)


def test_a_layout_still_needed_in_nchw_is_transposed_back():
    x = Var("x", mb.graph.TensorType((1, 4, 6, 6), "uint8"))
    f = Function([x], op.max_pool(_conv(x, 4, 16, 5, pads=(1, 1, 1, 1)), kernel_shape=(2, 2),
                                  strides=(2, 2)))
    g = convert_int8_layout(f)
    assert _ops(g)[-1] == "transpose" and g.body.type == f.body.type
    a = np.random.default_rng(1).integers(0, 256, (1, 4, 6, 6), dtype=np.uint8)
    np.testing.assert_array_equal(mb.graph.interpret(g, a), mb.graph.interpret(f, a))


def test_float_models_are_left_alone():
    f = optimize(model("cnn"), opt_level=2)
    assert convert_int8_layout(f).script() == f.script()


def test_the_pipeline_runs_it_at_opt_level_3_only():
    names = [p.name for p in mb.graph.passes.PIPELINE]
    assert names.index("convert_int8_layout") > names.index("lower_qdq")
    f = _quantized_cnn()
    assert "transpose" not in _ops(optimize(f, opt_level=2))
    assert "transpose" in _ops(optimize(f, opt_level=3))


def test_the_compiled_channels_last_model_matches_the_interpreter():
    f = _quantized_cnn()
    a = np.random.default_rng(2).integers(0, 256, (2, 8, 9, 9), dtype=np.uint8)
    exe = mb.compile(f, opt_level=3)
    np.testing.assert_array_equal(exe(a), mb.graph.interpret(f, a))


def _few_filters(c_out, width, strides=(1, 1), seed=7):
    x = Var("x", mb.graph.TensorType((2, 1, 5, width), "uint8"))
    return Function([x], _conv(x, 1, c_out, seed, pads=(1, 1, 1, 1), strides=strides))


def _grouped(g):
    (conv,) = [c for c in g.calls() if c.op == "int8_conv2d"]
    return conv.attrs["channels"], conv.attrs["kernel_shape"], conv.attrs["strides"]


def _same_compiled(f, g, width):
    a = np.random.default_rng(4).integers(0, 256, (2, 1, 5, width), dtype=np.uint8)
    want = mb.graph.interpret(f, a)
    np.testing.assert_array_equal(mb.graph.interpret(g, a), want)
    np.testing.assert_array_equal(mb.compile(f, opt_level=3)(a), want)


def test_eight_filters_over_one_channel_compute_two_pixels_at_once():
    f = _few_filters(8, width=8)
    g = convert_int8_layout(f)
    # 16 filters over a window one stride wider, at twice the stride
    assert _grouped(g) == (16, (3, 4), (1, 2))
    assert g.body.type == f.body.type
    _same_compiled(f, g, width=8)


def test_four_filters_compute_as_many_pixels_as_divide_the_width():
    assert _grouped(convert_int8_layout(_few_filters(4, width=8)))[0] == 16
    f = _few_filters(4, width=10)    # 4 and 3 pixels do not divide 10 outputs: 2 do
    g = convert_int8_layout(f)
    assert _grouped(g) == (8, (3, 4), (1, 2))
    _same_compiled(f, g, width=10)


def test_pixels_stay_apart_when_grouping_would_not_save_terms_or_lanes():
    # stride 2: two pixels' window rows (5 taps) sum 8 terms, as many as one by one
    assert _grouped(convert_int8_layout(_few_filters(8, 8, strides=(2, 2)))) == \
        (8, (3, 3), (2, 2))
    assert _grouped(convert_int8_layout(_few_filters(16, 8)))[0] == 16   # lanes already full
    assert _grouped(convert_int8_layout(_few_filters(8, 7)))[0] == 8     # odd width


def _conv_pool(c_in=4, c_out=16, mult=1e-3, pool=None, also=False):
    x = Var("x", mb.graph.TensorType((2, c_in, 8, 8), "uint8"))
    conv = _conv(x, c_in, c_out, 6, pads=(1, 1, 1, 1))
    if mult != 1e-3:
        a = conv.args
        conv = op.int8_conv2d(a[0], a[1], a[2], Constant(np.full(c_out, mult, np.float32)),
                              **conv.attrs)
    y = op.max_pool(conv, **(pool or dict(kernel_shape=(2, 2), strides=(2, 2))))
    return Function([x], mb.graph.Tuple([y, conv]) if also else y)   # also: conv read twice


def _folded(g):
    (conv,) = [c for c in g.calls() if c.op == "int8_conv2d"]
    return "max_pool" not in _ops(g), tuple(conv.attrs["pool"]), conv.attrs["pixels"]


def _same_on(f, g, c_in):
    a = np.random.default_rng(5).integers(0, 256, (2, c_in, 8, 8), dtype=np.uint8)
    want = mb.graph.interpret(f, a)
    for got in (mb.graph.interpret(g, a), mb.compile(f, opt_level=3)(a)):
        for u, v in zip(*((t,) if isinstance(t, np.ndarray) else t for t in (got, want))):
            np.testing.assert_array_equal(u, v)


def test_a_max_pool_of_side_by_side_windows_folds_into_the_conv():
    f = _conv_pool()
    g = convert_int8_layout(f)
    assert _folded(g) == (True, (2, 2), 1)
    _same_on(f, g, 4)


def test_a_pool_after_grouped_pixels_takes_the_max_across_the_groups():
    f = _conv_pool(c_in=1, c_out=8)
    g = convert_int8_layout(f)
    assert _folded(g) == (True, (2, 2), 2)
    _same_on(f, g, 1)


def test_pools_stay_apart_when_the_max_would_not_commute_or_the_sums_are_read_elsewhere():
    overlapping = dict(kernel_shape=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    for f in (_conv_pool(mult=-1e-3), _conv_pool(also=True), _conv_pool(pool=overlapping)):
        g = convert_int8_layout(f)
        assert _folded(g) == (False, (1, 1), 1)
        _same_on(f, g, 4)


def test_a_pool_over_another_view_of_the_sums_stays_apart():
    # the conv's (2, 8, 8, 16) sums viewed as (2, 1, 16, 8, 8): not its pixels, no fold
    x = Var("x", mb.graph.TensorType((2, 8, 8, 4), "uint8"))
    conv = _conv(x, 4, 16, 8, pads=(1, 1, 1, 1), layout="NHWC")
    view = op.reshape(conv, shape=(2, 1, 16, 8, 8))
    f = Function([x], op.max_pool(view, kernel_shape=(2, 2, 1), strides=(2, 2, 1)))
    g = convert_int8_layout(f)
    assert "max_pool" in _ops(g)
    a = np.random.default_rng(6).integers(0, 256, (2, 8, 8, 4), dtype=np.uint8)
    np.testing.assert_array_equal(mb.graph.interpret(g, a), mb.graph.interpret(f, a))
