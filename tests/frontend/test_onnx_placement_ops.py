"""What the converters of CenterCropPad, Col2Im, MaxUnpool, ReverseSequence, TensorScatter,
Compress (and Dropout in training) refuse, by name; their values are checked by onnx's node
cases (tests/frontend/test_conformance.py)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _model(nodes, inputs, outputs, inits=(), opset=24):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _ints(name, values):
    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def test_col2im_names_an_input_that_does_not_hold_the_blocks():
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    model = _model([node], [_vi("x", TensorProto.FLOAT, [1, 4, 7])],
                   [_vi("y", TensorProto.FLOAT, [1, 1, 3, 3])],
                   [_ints("image", [3, 3]), _ints("block", [2, 2])], opset=18)
    with pytest.raises(UnsupportedModelError, match=r"Col2Im: an input of shape \(1, 4, 7\) "
                       r"does not hold 4-element blocks .* it needs C \* 4 rows and 4 columns"):
        mb.from_onnx(model)


def test_tensor_scatter_refuses_an_unknown_mode():
    node = helper.make_node("TensorScatter", ["c", "u"], ["y"], mode="ring")
    model = _model([node], [_vi("c", TensorProto.FLOAT, [2, 4, 3]),
                            _vi("u", TensorProto.FLOAT, [2, 1, 3])],
                   [_vi("y", TensorProto.FLOAT, [2, 4, 3])])
    with pytest.raises(UnsupportedModelError, match="mode='ring' is not 'linear' or 'circular'"):
        mb.from_onnx(model)


def test_tensor_scatter_without_write_indices_writes_at_the_start():
    node = helper.make_node("TensorScatter", ["c", "u"], ["y"], axis=1)
    model = _model([node], [_vi("c", TensorProto.FLOAT, [2, 4, 3]),
                            _vi("u", TensorProto.FLOAT, [2, 2, 3])],
                   [_vi("y", TensorProto.FLOAT, [2, 4, 3])])
    c, u = np.zeros((2, 4, 3), np.float32), np.ones((2, 2, 3), np.float32)
    got = mb.compile(mb.from_onnx(model))(c, u)
    assert got[:, :2].tolist() == u.tolist() and not got[:, 2:].any()


def test_dropout_in_training_is_refused_unless_it_drops_nothing():
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"])
    train = helper.make_tensor("t", TensorProto.BOOL, [], [True])
    for ratio, ok in ((0.0, True), (0.5, False)):
        r = helper.make_tensor("r", TensorProto.FLOAT, [], [ratio])
        model = _model([node], [_vi("x", TensorProto.FLOAT, [3])],
                       [_vi("y", TensorProto.FLOAT, [3])], [r, train], opset=13)
        if ok:
            x = np.array([1.0, -2.0, 3.0], np.float32)
            assert mb.compile(mb.from_onnx(model))(x).tolist() == x.tolist()
        else:
            with pytest.raises(UnsupportedModelError, match="training_mode=True with "
                               "ratio=0.5 is not supported"):
                mb.from_onnx(model)


def _compress_model():
    node = helper.make_node("Compress", ["x", "c"], ["y"], axis=1)
    return _model([node], [_vi("x", TensorProto.FLOAT, [2, 4]), _vi("c", TensorProto.BOOL, [3])],
                  [_vi("y", TensorProto.FLOAT, [2, "k"])], opset=13)


def test_compress_needs_its_condition_at_import():
    # the output's shape depends on the condition: a graph input cannot give it
    with pytest.raises(UnsupportedModelError, match=r"condition \('c'\) must be known at "
                       r"import.*constants=\{'c': value\}"):
        mb.from_onnx(_compress_model())
    mod = mb.from_onnx(_compress_model(), constants={"c": np.array([True, False, True])})
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert mb.compile(mod)(x).tolist() == [[0, 2], [4, 6]]
