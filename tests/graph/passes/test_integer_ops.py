"""lower_integer_ops: ONNX's MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv with
constant weights become the int8 kernels of quantized models (int8_dense, int8_conv2d), with
the integer results of onnx's reference and onnxruntime; what does not fit keeps its
generic kernel."""

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mlcbook as mb
from mlcbook.frontend.conformance import case_op, node_tests
from mlcbook.graph.passes import lower_integer_ops

ort = pytest.importorskip("onnxruntime")

_ONNX = {"uint8": TensorProto.UINT8, "int8": TensorProto.INT8, "float32": TensorProto.FLOAT,
         "int32": TensorProto.INT32}
KERNELS = ("int8_dense", "int8_conv2d")


def _model(op, inputs, inits, out_dtype, **attrs):
    """A one-node model: ``inputs`` (name -> array) are graph inputs, ``inits`` constants;
    the node reads them in ``order`` (default: as given); the output has the first input's
    rank."""
    order = list(inputs) + list(inits)
    names = attrs.pop("order", order)
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], "m",
        [helper.make_tensor_value_info(n, _ONNX[str(v.dtype)], v.shape)
         for n, v in inputs.items()],
        [helper.make_tensor_value_info("y", _ONNX[out_dtype], [f"d{i}" for i in range(
            next(iter(inputs.values())).ndim)])],
        [numpy_helper.from_array(v, n) for n, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _ops(model):
    return [c.op for c in lower_integer_ops(mb.from_onnx(model)["main"]).calls()]


def _reference(model, inputs):
    return ReferenceEvaluator(model).run(None, inputs)[0]


def _check(model, inputs, compiled=False):
    """The lowered graph (op references) and, if ``compiled``, native code equal onnx's
    reference evaluator."""
    want = _reference(model, inputs)
    mod = mb.from_onnx(model)
    lowered = mb.graph.interpret(lower_integer_ops(mod["main"]), *inputs.values())
    np.testing.assert_array_equal(lowered, want)
    if compiled:
        np.testing.assert_array_equal(mb.compile(mod)(*inputs.values()), want)
    return want


def _rng():
    return np.random.default_rng(0)


# --- MatMulInteger --------------------------------------------------------------------------------
def _matmul_integer(a_dtype="uint8", m=5, k=10, n=20, b_zp=None, a_zp=3, a_zp_input=False,
                    batch=(), b=None):
    rng = _rng()
    lo, hi = np.iinfo(a_dtype).min, np.iinfo(a_dtype).max + 1
    a = rng.integers(lo, hi, (*batch, m, k)).astype(a_dtype)
    b = rng.integers(-64, 64, (k, n)).astype(np.int8) if b is None else b
    zp = np.array(a_zp, a_dtype)
    inputs = {"A": a, "a_zero_point": zp} if a_zp_input else {"A": a}
    inits = {"B": b} if a_zp_input else {"B": b, "a_zero_point": zp}
    if b_zp is not None:
        inits["b_zero_point"] = np.asarray(b_zp, b.dtype)
    order = ["A", "B", "a_zero_point"] + (["b_zero_point"] if b_zp is not None else [])
    return _model("MatMulInteger", inputs, inits, "int32", order=order), inputs


@pytest.mark.parametrize("a_dtype", ["uint8", "int8"])
def test_matmul_integer_runs_the_int8_kernel_and_matches_the_reference(a_dtype):
    model, inputs = _matmul_integer(a_dtype, b_zp=np.arange(-5, 15, dtype=np.int8))
    ops = _ops(model)
    assert "int8_dense" in ops and "matmul_integer" not in ops
    _check(model, inputs)


def test_matmul_integer_compiled_matches_onnxruntime():
    model, inputs = _matmul_integer("uint8", m=6, k=36, n=40, b_zp=2, batch=(2,))
    want = _check(model, inputs, compiled=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, inputs)[0], want)


def test_run_time_zero_point_is_subtracted_after_the_kernel():
    """DynamicQuantizeLinear's zero point is an input, not a constant: the kernel sums
    ``a * b`` and ``a_zp * colsum(b)`` is subtracted from them."""
    model, inputs = _matmul_integer("uint8", a_zp=131, a_zp_input=True, batch=(3,))
    ops = _ops(model)
    assert "int8_dense" in ops and {"sub", "mul"} <= set(ops)
    _check(model, inputs, compiled=True)


def test_zero_point_per_row():
    """ONNX allows ``a_zero_point`` (M,); onnx's reference evaluator and onnxruntime do not
    take it, so the reference is the unlowered op's (numpy)."""
    model, inputs = _matmul_integer("int8", m=4, a_zp=np.array([1, -2, 3, 0]), batch=(2,))
    assert "int8_dense" in _ops(model)
    mod = mb.from_onnx(model)
    np.testing.assert_array_equal(mb.graph.interpret(lower_integer_ops(mod["main"]), inputs["A"]),
                                  mb.graph.interpret(mod, inputs["A"]))


def test_uint8_weights_that_fit_int8_once_shifted():
    b = _rng().integers(0, 256, (10, 20)).astype(np.uint8)
    model, inputs = _matmul_integer(b=b, b_zp=128)
    assert "int8_dense" in _ops(model)
    _check(model, inputs)


def test_weights_that_leave_int8_once_shifted_keep_the_generic_kernel():
    """uint8 weights up to 255 with zero point 0: ``w - w_zp`` is not an int8."""
    b = np.full((10, 20), 200, np.uint8)
    model, inputs = _matmul_integer(b=b, b_zp=0)
    assert "matmul_integer" in _ops(model) and "int8_dense" not in _ops(model)
    _check(model, inputs)


def test_weights_that_are_inputs_keep_the_generic_kernel():
    rng = _rng()
    a = rng.integers(0, 256, (4, 8)).astype(np.uint8)
    b = rng.integers(-128, 128, (8, 16)).astype(np.int8)
    model = _model("MatMulInteger", {"A": a, "B": b}, {}, "int32")
    assert _ops(model) == ["matmul_integer"]


@pytest.mark.parametrize("high, narrow", [(64, 1), (128, 0)])
def test_pmaddubsw_only_for_weights_proven_7_bit(high, narrow):
    """[-64, 64) weights pass pairs_fit_int16 (the pmaddubsw kernel); full-range ones do not
    (pmaddwd). The mark is on the shifted weights the kernel multiplies by."""
    b = _rng().integers(-high, high, (16, 32)).astype(np.int8)
    b[0, 0], b[1, 0] = -high, -high
    model, _ = _matmul_integer(k=16, n=32, b=b)
    kernel = next(c for c in lower_integer_ops(mb.from_onnx(model)["main"]).calls()
                  if c.op == "int8_dense")
    assert kernel.attrs["narrow"] == narrow


# --- QLinearMatMul --------------------------------------------------------------------------------
def _qlinear_matmul(a_dtype="uint8", y_dtype="uint8", per_column=False, batch=(), high=100):
    rng = _rng()
    lo, hi = np.iinfo(a_dtype).min, np.iinfo(a_dtype).max + 1
    a = rng.integers(lo, hi, (*batch, 6, 24)).astype(a_dtype)
    n = 20
    b = rng.integers(-high, high, (24, n)).astype(np.int8)
    scale = (rng.random(n) * 0.02 + 0.01).astype(np.float32) if per_column else \
        np.array([0.02], np.float32)
    zp = rng.integers(-8, 8, n).astype(np.int8) if per_column else np.array([3], np.int8)
    inits = {"a_scale": np.array(0.05, np.float32), "a_zero_point": np.array(7, a_dtype),
             "b": b, "b_scale": scale, "b_zero_point": zp,
             "y_scale": np.array(0.9, np.float32), "y_zero_point": np.array(-4 if y_dtype
                                                                            == "int8" else 120,
                                                                            y_dtype)}
    return _model("QLinearMatMul", {"a": a}, inits, y_dtype), {"a": a}


@pytest.mark.parametrize("a_dtype, y_dtype, per_column", [
    ("uint8", "uint8", False), ("int8", "int8", True), ("uint8", "int8", True)])
def test_qlinear_matmul_runs_the_int8_kernel_and_matches_the_reference(a_dtype, y_dtype,
                                                                       per_column):
    model, inputs = _qlinear_matmul(a_dtype, y_dtype, per_column, batch=(2,))
    ops = _ops(model)
    assert "int8_dense" in ops and "qlinear_matmul" not in ops
    _check(model, inputs)


def test_qlinear_matmul_compiled_matches_onnxruntime():
    # 7-bit weights: onnxruntime's AVX2 kernel saturates int16 pair sums of wider ones
    model, inputs = _qlinear_matmul("uint8", "uint8", True, high=56)
    want = _check(model, inputs, compiled=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.abs(sess.run(None, inputs)[0].astype(int) - want).max() <= 1


# --- ConvInteger, QLinearConv ---------------------------------------------------------------------
def _conv(op, x_dtype="uint8", w_dtype="int8", group=1, per_channel=True, f=8, **attrs):
    rng = _rng()
    lo, hi = np.iinfo(x_dtype).min, np.iinfo(x_dtype).max + 1
    x = rng.integers(lo, hi, (2, 3, 7, 6)).astype(x_dtype)
    w = (rng.integers(0, 248, (f, 3 // group, 3, 3)) if w_dtype == "uint8" else
         rng.integers(-60, 60, (f, 3 // group, 3, 3))).astype(w_dtype)
    wzp = np.arange(120, 120 + f).astype(w_dtype) if w_dtype == "uint8" else np.zeros(f, np.int8)
    wzp = wzp if per_channel else wzp[:1]
    xzp = np.array(5, x_dtype)
    if op == "ConvInteger":
        inits = {"w": w, "x_zero_point": xzp, "w_zero_point": wzp}
        order, out = ["x", "w", "x_zero_point", "w_zero_point"], "int32"
    else:
        inits = {"x_scale": np.array(0.1, np.float32), "x_zero_point": xzp, "w": w,
                 "w_scale": (rng.random(f) * 0.01 + 0.005).astype(np.float32),
                 "w_zero_point": wzp, "y_scale": np.array(0.3, np.float32),
                 "y_zero_point": np.array(100, np.uint8),
                 "B": rng.integers(-500, 500, f).astype(np.int32)}
        order, out = list(inits), "uint8"
        order.insert(0, "x")
    return _model(op, {"x": x}, inits, out, order=order, group=group, **attrs), {"x": x}


@pytest.mark.parametrize("op", ["ConvInteger", "QLinearConv"])
@pytest.mark.parametrize("x_dtype, w_dtype", [("uint8", "int8"), ("int8", "uint8")])
def test_conv_runs_the_int8_kernel_and_matches_the_reference(op, x_dtype, w_dtype):
    model, inputs = _conv(op, x_dtype, w_dtype, pads=[1, 0, 1, 2], strides=[1, 2])
    ops = _ops(model)
    assert "int8_conv2d" in ops and not {"conv_integer", "qlinear_conv"} & set(ops)
    _check(model, inputs)


@pytest.mark.parametrize("op", ["ConvInteger", "QLinearConv"])
def test_conv_compiled_matches_onnxruntime(op):
    # onnxruntime's ConvInteger takes one weight zero point only
    model, inputs = _conv(op, pads=[1, 1, 1, 1], dilations=[1, 2], per_channel=False)
    want = _check(model, inputs, compiled=True)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.abs(sess.run(None, inputs)[0].astype(int) - want).max() <= (op == "QLinearConv")


def test_grouped_conv_keeps_the_generic_kernel():
    model, inputs = _conv("ConvInteger", group=3, f=6)
    assert "conv_integer" in _ops(model) and "int8_conv2d" not in _ops(model)


# --- onnx's own cases, their weights made constants ----------------------------------------------
def _array(value):
    return numpy_helper.to_array(value) if isinstance(value, TensorProto) else np.asarray(value)


_CASES = {c.name: c for c in node_tests()
          if case_op(c) in ("MatMulInteger", "QLinearMatMul", "QLinearConv", "ConvInteger")}
#: the cases whose shifted weights fit int8 (the others: uint8 weights far from their zero
#: point, or a batched matmul)
_LOWERED = {"test_matmulinteger", "test_convinteger_with_padding",
            "test_convinteger_without_padding"}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_onnx_cases_with_constant_weights_match_their_expected_outputs(name):
    case = _CASES[name]
    names = [i.name for i in case.model.graph.input]
    ins, expected = case.data_sets[0]
    values = dict(zip(names, (_array(v) for v in ins)))
    mod = mb.from_onnx(case.model, constants={k: v for k, v in values.items()
                                              if k != names[0]})
    func = lower_integer_ops(mod["main"])
    assert any(c.op in KERNELS for c in func.calls()) == (name in _LOWERED)
    got = mb.graph.interpret(func, values[names[0]])
    np.testing.assert_array_equal(got, _array(expected[0]))
