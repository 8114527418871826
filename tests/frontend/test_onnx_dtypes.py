"""ONNX models in int16, uint16, uint32, uint64 and bfloat16: imported, compiled, and
compared with numpy (ml_dtypes for bfloat16) and the graph interpreter."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.graph import interpret

BF16 = ml_dtypes.bfloat16
ONNX_TYPE = {"int16": TensorProto.INT16, "uint16": TensorProto.UINT16,
             "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64,
             "bfloat16": TensorProto.BFLOAT16, "float32": TensorProto.FLOAT}


def model(nodes, ins, outs):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, ONNX_TYPE[t], s)
                                       for n, t, s in ins],
                          [helper.make_tensor_value_info(n, ONNX_TYPE[t], s)
                           for n, t, s in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    return m


def run_both(m, *xs):
    mod = mb.from_onnx(m)
    compiled = mb.compile(mod)(*xs)
    reference = interpret(mod, *xs)
    return compiled, reference


@pytest.mark.parametrize("dtype", ["int16", "uint16", "uint32", "uint64"])
def test_integer_arithmetic_division_and_compare(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(1)
    a = rng.integers(info.min, info.max, (3, 8), dtype=dtype, endpoint=True)
    b = rng.integers(1, 200, (3, 8), dtype=dtype)
    a[0, :3] = [info.max, info.min, info.max - 1]      # above 2**31 / 2**63 for uint32/64
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Div", ["s", "b"], ["q"]),
             helper.make_node("Mod", ["a", "b"], ["r"]),
             helper.make_node("Less", ["a", "q"], ["lt"])]
    m = model(nodes, [("a", dtype, [3, 8]), ("b", dtype, [3, 8])],
              [("q", dtype, [3, 8]), ("r", dtype, [3, 8])])
    m.graph.output.append(helper.make_tensor_value_info("lt", TensorProto.BOOL, [3, 8]))
    with np.errstate(over="ignore"):
        s = a + b
    q = s // b + ((s < 0) & (s % b != 0))  # ONNX Div on integers truncates toward zero
    want = [q.astype(dtype), a % b, a < q]
    for got in run_both(m, a, b):
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_cast_uint64_to_float_and_back():
    x = np.array([[0, 1, 2**63, 2**64 - 2**20]], "uint64")
    nodes = [helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["f"], ["y"], to=TensorProto.UINT32)]
    m = model(nodes, [("x", "uint64", [1, 4])], [("f", "float32", [1, 4])])
    m.graph.output.append(helper.make_tensor_value_info("y", TensorProto.UINT32, [1, 4]))
    for f, y in run_both(m, x):
        np.testing.assert_array_equal(f, x.astype(np.float32))
        np.testing.assert_array_equal(y[0, :2], [0, 1])


def test_bfloat16_elementwise_rounds_like_ml_dtypes():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((4, 16)).astype(BF16)
    b = rng.standard_normal((4, 16)).astype(BF16)
    nodes = [helper.make_node("Mul", ["a", "b"], ["p"]), helper.make_node("Add", ["p", "a"], ["y"]),
             helper.make_node("Cast", ["y"], ["z"], to=TensorProto.FLOAT)]
    m = model(nodes, [("a", "bfloat16", [4, 16]), ("b", "bfloat16", [4, 16])],
              [("z", "float32", [4, 16])])
    want = ((a * b) + a).astype(np.float32)  # ml_dtypes rounds each result to bfloat16
    for got in run_both(m, a, b):
        np.testing.assert_array_equal(got, want)


def test_bfloat16_input_and_output_keep_their_dtype():
    x = np.array([[1.0, -2.5, 3.0e38, 0.1]], BF16)
    m = model([helper.make_node("Relu", ["x"], ["y"])], [("x", "bfloat16", [1, 4])],
              [("y", "bfloat16", [1, 4])])
    for got in run_both(m, x):
        assert got.dtype == BF16
        np.testing.assert_array_equal(got.astype(np.float32),
                                      np.maximum(x.astype(np.float32), 0))


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64", "int16"])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_sign_of_every_integer_dtype_is_numpys(dtype, opt_level):
    # an unsigned sign has no -1 to spell: it is 1 above zero, else 0
    info = np.iinfo(dtype)
    x = np.array([0, 1, 7, info.max, info.min, info.max // 2], dtype)
    m = model([helper.make_node("Sign", ["x"], ["y"])], [("x", dtype, [6])], [("y", dtype, [6])])
    mod = mb.from_onnx(m)
    got = mb.compile(mod, opt_level=opt_level)(x)
    np.testing.assert_array_equal(got, np.sign(x))
    np.testing.assert_array_equal(interpret(mod, x), np.sign(x))


@pytest.mark.parametrize("op, fn", [("Neg", np.negative), ("Relu", lambda v: np.maximum(v, 0))])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_neg_and_relu_of_int16_wrap_as_numpy_and_onnxruntime_do(op, fn, opt_level):
    # onnxruntime has no int16 Relu (the spec has since opset 14): numpy alone checks that
    import onnxruntime as ort
    info = np.iinfo("int16")
    x = np.array([0, 1, -7, info.max, info.min, -(info.max // 2)], "int16")
    m = model([helper.make_node(op, ["x"], ["y"])], [("x", "int16", [6])],
              [("y", "int16", [6])])
    with np.errstate(over="ignore"):
        want = fn(x)
    got = mb.compile(mb.from_onnx(m), opt_level=opt_level)(x)
    np.testing.assert_array_equal(got, want)
    if op == "Neg":
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])
