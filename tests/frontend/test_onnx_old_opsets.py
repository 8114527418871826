"""Ops whose meaning changed between opsets but which onnx.version_converter carries over
unchanged (mlcbook.frontend.onnx_old_opsets): the imported model computes what
onnxruntime computes on the original old-opset model, or is refused with the reason."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.graph import interpret

ort = pytest.importorskip("onnxruntime")


def _model(node, in_shape, out_shape, opset, inits=()):
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, in_shape)], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, out_shape)], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 6
    return m


def _matches_onnxruntime(model, x, opt_level=None):
    want, = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})
    mod = mb.from_onnx(model)
    got = interpret(mod, x=x) if opt_level is None else mb.compile(mod, opt_level=opt_level)(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("opset", [9, 11, 12])
@pytest.mark.parametrize("axis", [None, 0, 1, 2, 3, -2])
def test_hardmax_before_13_picks_one_winner_per_flattened_row(opset, axis):
    # (2, 3, 4, 5) at axis 1: one winner among 60 values per batch row, not one per (n, h, w)
    x = np.random.default_rng(opset).standard_normal((2, 3, 4, 5)).astype("float32")
    kw = {} if axis is None else {"axis": axis}
    model = _model(helper.make_node("Hardmax", ["x"], ["y"], **kw), [2, 3, 4, 5], [2, 3, 4, 5],
                   opset)
    _matches_onnxruntime(model, x)


def test_hardmax_before_13_compiles_to_the_same_numbers():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype("float32")
    model = _model(helper.make_node("Hardmax", ["x"], ["y"]), [2, 3, 4, 5], [2, 3, 4, 5], 11)
    _matches_onnxruntime(model, x, opt_level=3)


@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_and_log_softmax_keep_the_flattening_rule(opset):
    # the converter rewrites these itself; this pins it down beside Hardmax
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 5)).astype("float32")
    for op in ("Softmax", "LogSoftmax"):
        _matches_onnxruntime(_model(helper.make_node(op, ["x"], ["y"], axis=1), [2, 3, 4, 5],
                                    [2, 3, 4, 5], opset - 2), x)


def _scaled(op, opset, mode, scales, shape=(1, 2, 5, 6)):
    s = numpy_helper.from_array(np.array(scales, "float32"), "s")
    out = [int(d * f) for d, f in zip(shape, scales)]
    return _model(helper.make_node(op, ["x", "s"], ["y"], mode=mode), list(shape), out, opset,
                  [s])


@pytest.mark.parametrize("op,opset", [("Upsample", 9), ("Resize", 10)])
@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("scales", [[1, 1, 2, 2], [1, 1, 3, 1.5], [1, 1, 2.5, 1.7]])
def test_old_upsample_and_resize_use_the_asymmetric_coordinate_rule(op, opset, mode, scales):
    x = np.random.default_rng(3).standard_normal((1, 2, 5, 6)).astype("float32")
    _matches_onnxruntime(_scaled(op, opset, mode, scales), x)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("scales", [[1, 1, 0.5, 0.5], [1, 1, 0.6, 0.75], [1, 1, 1, 0.4]])
def test_resize_10_shrinking_matches_onnxruntime(mode, scales):
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 6)).astype("float32")
    _matches_onnxruntime(_scaled("Resize", 10, mode, scales), x)


def test_upsample_7_with_scales_as_an_attribute_matches_onnxruntime():
    x = np.random.default_rng(5).standard_normal((1, 2, 3, 4)).astype("float32")
    model = _model(helper.make_node("Upsample", ["x"], ["y"], mode="linear",
                                    scales=[1.0, 1.0, 2.0, 3.0]), [1, 2, 3, 4], [1, 2, 6, 12], 7)
    _matches_onnxruntime(model, x, opt_level=2)


@pytest.mark.parametrize("scales", [[1, 1, 2, 0.5], [1, 1, 0.5, 1.5]])
def test_a_nearest_resize_10_that_enlarges_and_shrinks_is_refused(scales):
    with pytest.raises(UnsupportedModelError, match=r"rounds down on the axes it enlarges.*"
                                                    r"Instead: re-export"):
        mb.from_onnx(_scaled("Resize", 10, "nearest", scales))


@pytest.mark.parametrize("opset", [7, 8])
def test_batch_norm_per_activation_is_refused(opset):
    # spatial=0: a mean and variance per (c, h, w), which opset 9 on cannot say
    stats = [numpy_helper.from_array(np.ones((3, 4, 5), "float32"), n) for n in "sbmv"]
    node = helper.make_node("BatchNormalization", ["x", *"sbmv"], ["y"], spatial=0)
    model = _model(node, [2, 3, 4, 5], [2, 3, 4, 5], opset, stats)
    model.graph.input.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, [3, 4, 5])
                             for n in "sbmv")
    with pytest.raises(UnsupportedModelError, match=r"spatial=0 .*Instead: re-export"):
        mb.from_onnx(model)


def test_the_callers_old_model_is_left_as_it_was():
    model = _model(helper.make_node("Hardmax", ["x"], ["y"]), [2, 3], [2, 3], 11)
    before = model.SerializeToString()
    mb.from_onnx(model)
    assert model.SerializeToString() == before
