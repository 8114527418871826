"""ONNX's quantization ops through their declarations (mlcbook.ops.quant): exported under
their ONNX names, run in onnxruntime with mlcbook's integer results, and imported back."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.ops.types import TensorType

ort = pytest.importorskip("onnxruntime")


def _run_ort(model, x):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})


def _quantized_model():
    """float input -> QuantizeLinear -> ConvInteger, QLinearConv (per-channel weight scales) ->
    QLinearMatMul, MatMulInteger -> DequantizeLinear: the outputs of every op."""
    rng = np.random.default_rng(3)

    def c(v, dtype):
        return Constant(np.asarray(v, dtype))

    x = Var("x", TensorType((1, 2, 5, 5)))
    xs, xz = c(0.05, "float32"), c(128, "uint8")
    q = op.quantize_linear(x, xs, xz)
    w = c(rng.integers(-20, 20, (3, 2, 3, 3)), "int8")
    acc = op.conv_integer(q, w, xz, c(1, "int8"), pads=(1, 1, 1, 1), strides=(2, 2))
    y = op.qlinear_conv(q, xs, xz, w, c([0.01, 0.02, 0.03], "float32"), c([0, 0, 0], "int8"),
                        c(0.1, "float32"), c(100, "uint8"), c([5, -9, 300], "int32"),
                        pads=(1, 0, 1, 2))
    rows = op.reshape(y, shape=(3, -1))                         # (3, 25)
    b = c(rng.integers(-30, 30, (25, 4)), "int8")
    z = op.qlinear_matmul(rows, c(0.1, "float32"), c(100, "uint8"), b, c(0.02, "float32"),
                          c(0, "int8"), c(0.2, "float32"), c(7, "uint8"))
    m = op.matmul_integer(rows, b, c(100, "uint8"), c(3, "int8"))
    d = op.dequantize_linear(z, c([0.2, 0.3, 0.4, 0.5], "float32"), c([7, 0, 1, 2], "uint8"),
                             axis=1)
    return Function([x], mb.graph.Tuple([acc, y, z, m, d]))


def test_quantization_ops_export_under_their_onnx_names_and_run_in_onnxruntime():
    f = _quantized_model()
    model = mb.to_onnx(f)
    assert [n.op_type for n in model.graph.node if n.op_type != "Reshape"] == [
        "QuantizeLinear", "ConvInteger", "QLinearConv", "QLinearMatMul", "MatMulInteger",
        "DequantizeLinear"]
    x = np.random.default_rng(4).standard_normal((1, 2, 5, 5)).astype(np.float32) * 4
    want = mb.compile(f, opt_level=0)(x)
    for got, expected in zip(_run_ort(model, x), want):
        np.testing.assert_array_equal(got, expected)
    for got, expected in zip(mb.compile(mb.from_onnx(model))(x), want):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op_type", ["ConvInteger", "QLinearConv"])
def test_a_quantized_conv_reads_auto_pad_as_conv_does(op_type):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)
    w = rng.integers(-20, 20, (3, 2, 2, 3)).astype(np.int8)
    if op_type == "ConvInteger":
        inits = {"w": w, "xz": np.array(120, np.uint8)}
        order, out = ["x", "w", "xz"], TensorProto.INT32
    else:
        inits = {"xs": np.array(0.05, np.float32), "xz": np.array(120, np.uint8), "w": w,
                 "ws": np.array(0.02, np.float32), "wz": np.array(0, np.int8),
                 "ys": np.array(0.1, np.float32), "yz": np.array(100, np.uint8)}
        order, out = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], TensorProto.UINT8
    node = helper.make_node(op_type, order, ["y"], auto_pad="SAME_UPPER", strides=[2, 2])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 2, 7, 6])],
        [helper.make_tensor_value_info("y", out, [1, 3, 4, 3])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    x = rng.integers(0, 256, (1, 2, 7, 6)).astype(np.uint8)
    (want,) = _run_ort(model, x)
    assert want.shape == (1, 3, 4, 3)
    for opt_level in (0, 3):
        np.testing.assert_array_equal(mb.compile(mb.from_onnx(model), opt_level=opt_level)(x),
                                      want)
