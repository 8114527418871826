"""ONNX models with the low-bit element types (float8, float4, int4, int2): casts, data
movement on their bytes, QuantizeLinear/DequantizeLinear, checked against onnx's reference
evaluator, through the graph reference evaluator and native code."""
import ml_dtypes  # noqa: F401 - numpy knows the low-bit dtypes by name
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import mlcbook as mb
from mlcbook.errors import InvalidModelError, OpDTypeError
from mlcbook.graph import interpret
from mlcbook.ops import TensorType, get


def _model(nodes, inputs, outputs, opset=23):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _check(model, feed: dict) -> None:
    """mlcbook's graph evaluator and compiled code give onnx's reference evaluator's output."""
    want = ReferenceEvaluator(model).run(None, feed)[0]
    mod = mb.from_onnx(model)
    for got in (interpret(mod, **feed), mb.compile(mod, target="llvm")(**feed)):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8) if got.dtype.itemsize == 1 else got,
                                      want.view(np.uint8) if want.dtype.itemsize == 1 else want)


def test_float8_moves_as_bytes_between_casts():
    # Cast to E4M3FN, Transpose and Reshape the bytes, Cast back to float16
    nodes = [helper.make_node("Cast", ["x"], ["q"], to=TensorProto.FLOAT8E4M3FN),
             helper.make_node("Transpose", ["q"], ["t"], perm=[1, 0]),
             helper.make_node("Reshape", ["t", "shape"], ["r"]),
             helper.make_node("Cast", ["r"], ["y"], to=TensorProto.FLOAT16)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 6])])
    model.graph.initializer.append(helper.make_tensor("shape", TensorProto.INT64, [2], [2, 6]))
    x = np.array([[0.1, -3.3, 500.0, 1e-3], [7.0, -0.0, 17.5, 2.25], [-448, 449, 1e-9, 3]],
                 np.float32)
    _check(model, {"x": x})


def test_int4_quantize_per_axis_then_dequantize():
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], axis=0),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"], axis=0)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])])
    model.graph.initializer.extend([
        helper.make_tensor("s", TensorProto.FLOAT, [3], [0.5, 1.0, 2.0]),
        helper.make_tensor("zp", TensorProto.INT4, [3], [1, -2, 0])])
    x = np.array([[-5.0, -0.25, 0.75, 3.2], [9.0, -9.0, 2.5, 3.5], [-30, 13, 1.0, 3.0]],
                 np.float32)
    _check(model, {"x": x})


def test_a_float8_input_and_output_are_ml_dtypes_arrays():
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT8E5M2, saturate=0)]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [6])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT8E5M2, [6])])
    x = np.array([0.5, -448, 3.0, 0.0137, -0.0, 96], "float8_e4m3fn")
    _check(model, {"x": x})


def test_the_cast_op_sends_low_bit_types_to_the_lowbit_ops():
    with pytest.raises(OpDTypeError, match=r"cast does not convert the low-bit type int4; "
                       r"Instead: use the ops lowbit_decode"):
        get("cast").infer_type([TensorType((4,), "int4")], {"dtype": "float32"})


def test_lowbit_decode_checks_its_format_against_the_input():
    with pytest.raises(OpDTypeError, match=r"the input is uint4 but format='int4'.*Instead"):
        get("lowbit_decode").infer_type([TensorType((4,), "uint4")], {"format": "int4"})


def test_lowbit_encode_refuses_bool_and_low_bit_inputs():
    for dtype in ("bool", "float8_e5m2"):
        with pytest.raises(OpDTypeError, match=rf"converts int and float tensors, got {dtype}"):
            get("lowbit_encode").infer_type([TensorType((4,), dtype)], {"format": "int4"})


def test_arithmetic_on_a_low_bit_type_says_to_decode_first():
    with pytest.raises(OpDTypeError, match=r"add: the input has dtype float8_e5m2, but add "
                       r"takes .*Instead: convert it with lowbit_decode first"):
        get("add").infer_type([TensorType((2,), "float8_e5m2")] * 2, {})


def _float8_dq(zero_point: list[float], op="DequantizeLinear"):
    """A DequantizeLinear (or QuantizeLinear) of E4M3FN whose zero point is an initializer."""
    f8, f32 = TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT
    src, dst = (f8, f32) if op == "DequantizeLinear" else (f32, f8)
    nodes = [helper.make_node(op, ["x", "s", "zp"], ["y"], name="dq", axis=0)]
    model = _model(nodes, [helper.make_tensor_value_info("x", src, [2, 3])],
                   [helper.make_tensor_value_info("y", dst, [2, 3])])
    model.graph.initializer.extend([
        helper.make_tensor("s", TensorProto.FLOAT, [2], [0.5, 2.0]),
        helper.make_tensor("zp", f8, [2], zero_point)])
    return model


@pytest.mark.parametrize("op", ["DequantizeLinear", "QuantizeLinear"])
def test_a_float8_zero_point_that_is_not_0_is_refused(op):
    with pytest.raises(InvalidModelError, match=r"'dq' \(.*\): .*the zero point 'zp' of the "
                       r"float8_e4m3fn tensor holds \[1\.5\], but ONNX requires a float8 zero "
                       r"point to be 0\. Instead: drop the zero point"):
        mb.from_onnx(_float8_dq([0.0, 1.5], op))


def test_a_float8_zero_point_of_0_is_accepted():
    x = np.array([[1, -2, 448], [0.5, 0, -0.25]], "float8_e4m3fn")
    _check(_float8_dq([0.0, -0.0]), {"x": x})


@pytest.mark.parametrize("src,dst,values", [
    ("uint8", "float8_e4m3fn", np.array([1, 2, 0x38, 0xC0, 0x7F, 0xFE], np.uint8)),
    ("float8_e5m2", "int8", np.array([0.5, -3.0, 57344, -0.0, 1e-5, 2.0], "float8_e5m2")),
    ("int4", "uint4", np.array([-8, -1, 0, 3, 7, -2], "int4"))])
def test_bitcast_of_low_bit_types_imports_and_exports(src, dst, values):
    onnx_type = {v: k for k, v in mb.frontend.onnx_context.DTYPES.items()}
    nodes = [helper.make_node("BitCast", ["x"], ["y"], to=onnx_type[dst])]
    model = _model(nodes, [helper.make_tensor_value_info("x", onnx_type[src], [6])],
                   [helper.make_tensor_value_info("y", onnx_type[dst], [6])], opset=26)
    _check(model, {"x": values})
    _check(mb.to_onnx(mb.from_onnx(model)), {"x": values})
