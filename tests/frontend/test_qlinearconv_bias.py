"""QLinearConv with a bias matches onnxruntime at opt_level 0 (and 3), in 1-D, 2-D and 3-D,
with zero and nonzero weight zero points."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb


def _model(rng, dims, w_zero):
    ci = co = 4
    k = [3] * dims
    values = {"xs": np.array(0.05, "float32"), "xz": np.array(128, "uint8"),
              "w": rng.integers(-20, 20, [co, ci] + k).astype("int8"),
              "ws": np.array(0.02, "float32"), "wz": np.array(w_zero, "int8"),
              "ys": np.array(0.1, "float32"), "yz": np.array(100, "uint8"),
              "b": rng.integers(-500, 500, co).astype("int32")}
    node = helper.make_node("QLinearConv", ["x", *values], ["y"], pads=[1] * (2 * dims))
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, ci] + [6] * dims)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in values.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("dims,w_zero", [(1, 0), (2, 0), (2, 3), (3, 0)])
def test_qlinearconv_with_a_bias_matches_onnxruntime(dims, w_zero, opt_level):
    rng = np.random.default_rng(dims * 10 + w_zero)
    model = _model(rng, dims, w_zero)
    x = rng.integers(0, 256, [1, 4] + [6] * dims).astype("uint8")
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = mb.compile(mb.from_onnx(model), opt_level=opt_level)(x)
    np.testing.assert_array_equal(got, want)
