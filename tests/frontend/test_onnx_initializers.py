"""An initializer or Constant whose data holds more elements than its shape says is an
InvalidModelError naming it (the ONNX checker catches only data that is too short)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import InvalidModelError


def _tensor(name, data_elements, shape=(2, 3)):
    t = numpy_helper.from_array(np.zeros(shape, "float32"), name)
    t.raw_data = np.arange(data_elements, dtype="float32").tobytes()
    return t


def _model(w=None, constant=None):
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])]
    if constant is not None:
        nodes.insert(0, helper.make_node("Constant", [], ["w"], value=constant))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              initializer=[w] if w is not None else [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("elements", [7, 10, 600])
def test_an_initializer_with_more_data_than_its_shape_is_refused(elements):
    with pytest.raises(InvalidModelError, match=r"\[MLC-G007\] initializer 'w' has shape "
                                                r"\[2, 3\] but its data holds a different "
                                                r"number of elements.*Instead: re-export"):
        mb.from_onnx(_model(w=_tensor("w", elements)))


def test_a_constant_node_with_more_data_than_its_shape_is_refused():
    with pytest.raises(InvalidModelError, match="the value of a Constant node has shape"):
        mb.from_onnx(_model(constant=_tensor("value", 9)))


def test_an_initializer_whose_data_fits_imports():
    exe = mb.compile(mb.from_onnx(_model(w=_tensor("w", 6))), opt_level=0)
    x = np.ones((2, 3), "float32")
    np.testing.assert_array_equal(exe(x), x + np.arange(6, dtype="float32").reshape(2, 3))
