"""Subgraphs computing shapes and constants (Shape, Size, ConstantOfShape, Range and the
arithmetic on them) are folded at import by the graph's constant folding."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.graph import interpret

from .test_onnx_import import make, vi


def _i64(name, values):
    return numpy_helper.from_array(np.asarray(values, np.int64), name)


def test_shape_arithmetic_feeding_reshape_and_slice_is_folded():
    # y = reshape(x, concat(shape(x)[0:1], [-1]))[:, :size(x) // 8] + fill(ones)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Concat", ["n", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["r"]),
             helper.make_node("Size", ["x"], ["size"]),
             helper.make_node("Div", ["size", "eight"], ["end"]),
             helper.make_node("Unsqueeze", ["end", "zero"], ["end1"]),
             helper.make_node("Slice", ["r", "zero", "end1", "one"], ["sl"]),
             helper.make_node("Shape", ["sl"], ["sl_shape"]),
             helper.make_node("ConstantOfShape", ["sl_shape"], ["ones"],
                              value=numpy_helper.from_array(np.array([1.0], np.float32))),
             helper.make_node("Add", ["sl", "ones"], ["y"])]
    inits = [_i64("zero", [0]), _i64("one", [1]), _i64("minus1", [-1]), _i64("eight", 8)]
    model = make(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 3])], inits)
    mod = mb.from_onnx(model)
    assert [c.op for c in mod["main"].calls()] == ["reshape", "slice", "add"]
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(interpret(mod, x=x), x.reshape(2, 12)[:, :3] + 1)


def test_range_and_constant_of_shape_become_constants():
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"])]
    inits = [_i64("start", 5), _i64("limit", 1), _i64("delta", -2)]
    model = make(nodes, [vi("x", [2])], [vi("y", [2])], inits)
    mod = mb.from_onnx(model)
    assert [c.op for c in mod["main"].calls()] == ["add"]
    np.testing.assert_array_equal(interpret(mod, x=np.zeros(2, np.float32)), [5.0, 3.0])


def test_dropout_passes_its_input_and_an_all_true_mask():
    nodes = [helper.make_node("Dropout", ["x", "ratio"], ["y", "mask"])]
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "ratio")]
    model = make(nodes, [vi("x", [2, 3])], [vi("y", [2, 3]), vi("mask", [2, 3], TensorProto.BOOL)],
                 inits)
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    y, mask = interpret(mb.from_onnx(model), x=x)
    np.testing.assert_array_equal(y, x)
    assert mask.dtype == bool and mask.all()


def test_dropout_in_training_mode_is_reported():
    nodes = [helper.make_node("Dropout", ["x", "ratio", "train"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.5, np.float32), "ratio"),
             numpy_helper.from_array(np.array(True), "train")]
    model = make(nodes, [vi("x", [2])], [vi("y", [2])], inits)
    with pytest.raises(UnsupportedModelError, match="Dropout.*training_mode=True"):
        mb.from_onnx(model)
