"""Det beyond onnx's two 2 x 2 node cases (3 x 3 and 4 x 4 batches against numpy's LU
determinant, and the refusal of larger matrices), and ConvTranspose to an output_shape
beyond its full output, against onnxruntime."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError


def _det_model(shape):
    node = helper.make_node("Det", ["x"], ["y"])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.DOUBLE,
                                                                      list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE,
                                                         list(shape[:-2]))])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])


@pytest.mark.parametrize("shape", [(2, 3, 3), (4, 4), (2, 1, 1)])
def test_det_matches_numpy(shape):
    x = np.random.default_rng(1).standard_normal(shape)
    got = mb.compile(mb.from_onnx(_det_model(shape)))(x)
    np.testing.assert_allclose(got, np.linalg.det(x), rtol=1e-10, atol=1e-12)


def test_det_of_a_5x5_matrix_is_refused_by_name():
    with pytest.raises(UnsupportedModelError, match=r"Det of 5 x 5 matrices: mlcbook expands "
                       r"determinants of square matrices up to 4 x 4"):
        mb.from_onnx(_det_model((5, 5)))


def test_conv_transpose_to_an_output_shape_beyond_the_full_output_adds_bias_everywhere():
    # the full output is 7 x 9; output_shape asks 8 x 11: rows and columns no input reaches
    # (onnx's reference evaluator fails on this case; onnxruntime is the reference)
    ort = pytest.importorskip("onnxruntime")
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 3],
                            output_shape=[8, 11])
    vi = helper.make_tensor_value_info
    g = helper.make_graph([node], "g", [vi("x", TensorProto.FLOAT, [1, 2, 3, 3]),
                                        vi("w", TensorProto.FLOAT, [2, 3, 3, 3]),
                                        vi("b", TensorProto.FLOAT, [3])],
                          [vi("y", TensorProto.FLOAT, [1, 3, 8, 11])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 22)])
    rng = np.random.default_rng(2)
    feed = {"x": rng.standard_normal((1, 2, 3, 3)).astype("float32"),
            "w": rng.standard_normal((2, 3, 3, 3)).astype("float32"),
            "b": np.array([1.0, -2.0, 0.5], np.float32)}
    want, = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, feed)
    got = mb.compile(mb.from_onnx(model)).run(feed)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
