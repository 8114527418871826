"""lower_qdq: QDQ models quantized by onnxruntime (built here with onnx.helper, calibrated on a
few random inputs) compile to integer kernels and match onnxruntime within one quantization
step of their output."""

import logging

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.frontend.quantize import quantize_qdq
from mlcbook.graph.passes import lower_qdq, optimize
from mlcbook.tir.x86_intrinsics import pairs_fit_int16

ort = pytest.importorskip("onnxruntime")


def _model(nodes, inits, x_shape, y_shape):
    rng = np.random.default_rng(0)
    tensors = [numpy_helper.from_array((rng.standard_normal(s) * sc).astype(np.float32), n)
               for n, s, sc in inits]
    graph = helper.make_graph(
        [helper.make_node(op, i, o, **a) for op, i, o, a in nodes], "m",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], tensors)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def cnn():
    """conv 3->8 (pad 1) -> relu -> max pool -> conv 8->16 (stride 2) -> relu -> flatten -> fc."""
    return _model([("Conv", ["x", "w1", "b1"], ["c1"], {"pads": [1, 1, 1, 1]}),
                   ("Relu", ["c1"], ["r1"], {}),
                   ("MaxPool", ["r1"], ["p1"], {"kernel_shape": [2, 2], "strides": [2, 2]}),
                   ("Conv", ["p1", "w2", "b2"], ["c2"], {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
                   ("Relu", ["c2"], ["r2"], {}),
                   ("Flatten", ["r2"], ["f"], {}),
                   ("Gemm", ["f", "w3", "b3"], ["y"], {"transB": 1})],
                  [("w1", (8, 3, 3, 3), 0.3), ("b1", (8,), 0.1), ("w2", (16, 8, 3, 3), 0.15),
                   ("b2", (16,), 0.1), ("w3", (10, 64), 0.1), ("b3", (10,), 0.1)],
                  [2, 3, 8, 8], [2, 10])


def mlp():
    """matmul + add -> relu -> gemm (weights quantized per channel)."""
    return _model([("MatMul", ["x", "w1"], ["m"], {}), ("Add", ["m", "b1"], ["a"], {}),
                   ("Relu", ["a"], ["r"], {}), ("Gemm", ["r", "w2", "b2"], ["y"], {})],
                  [("w1", (24, 32), 0.2), ("b1", (32,), 0.1), ("w2", (32, 10), 0.2),
                   ("b2", (10,), 0.1)], [4, 24], [4, 10])


MODELS = {"cnn": (cnn, (2, 3, 8, 8), False), "mlp": (mlp, (4, 24), True)}


@pytest.fixture(scope="module", params=sorted(MODELS))
def quantized(request):
    build, shape, per_channel = MODELS[request.param]
    rng = np.random.default_rng(1)
    logging.disable(logging.WARNING)   # onnxruntime advises pre-processing, at length
    try:
        q = quantize_qdq(build(), [{"x": rng.standard_normal(shape).astype(np.float32)}
                                   for _ in range(4)], per_channel=per_channel)
    finally:
        logging.disable(logging.NOTSET)
    x = rng.standard_normal(shape).astype(np.float32)
    want = ort.InferenceSession(q.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    step = numpy_helper.to_array(next(i for i in q.graph.initializer if i.name == "y_scale"))
    return request.param, q, x, want, float(step)


def test_compiled_model_matches_onnxruntime_within_one_step(quantized):
    _, q, x, want, step = quantized
    got = mb.compile(mb.from_onnx(q))(x)
    assert np.abs(got - want).max() <= step * 1.001


def test_float_qdq_form_matches_onnxruntime_within_one_step(quantized):
    _, q, x, want, step = quantized
    got = mb.graph.interpret(mb.from_onnx(q), x)
    assert np.abs(got - want).max() <= step * 1.001


def test_quantized_groups_become_integer_kernels(quantized):
    name, q, _, _, _ = quantized
    ops = [c.op for c in optimize(mb.from_onnx(q), 3).calls()]
    want = {"cnn": {"int8_conv2d": 2, "int8_dense": 1}, "mlp": {"int8_dense": 2}}[name]
    assert {op: ops.count(op) for op in want} == want
    assert not {"conv", "gemm", "matmul"} & set(ops)


def _shift_weight_zero_points(q, by: int):
    """``q`` with every weight zero point moved by ``by`` (the weights mean other values)."""
    q = onnx.ModelProto.FromString(q.SerializeToString())
    for init in q.graph.initializer:
        if init.name.startswith("w") and init.name.endswith("zero_point"):
            zp = numpy_helper.to_array(init).astype(np.int32) + by
            init.CopyFrom(numpy_helper.from_array(zp.astype(np.int8), init.name))
    return q


@pytest.mark.parametrize("by", [1, -3, 9])
def test_asymmetric_weights_run_on_integer_kernels_as_onnxruntime(quantized, by):
    # Wq - zp stays inside int8: the kernels take the shifted weights, exactly
    name, q, x, _, _ = quantized
    q = _shift_weight_zero_points(q, by)
    want = ort.InferenceSession(q.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ops = [c.op for c in optimize(mb.from_onnx(q), 3).calls()]
    assert not {"conv", "gemm", "matmul"} & set(ops)
    for opt_level in (1, 3):
        np.testing.assert_array_equal(mb.compile(mb.from_onnx(q), opt_level=opt_level)(x), want)


def test_weights_whose_shift_leaves_int8_keep_the_float_form(quantized):
    name, q, x, _, step = quantized
    q = _shift_weight_zero_points(q, 100)   # Wq - zp reaches below -128
    ops = {c.op for c in lower_qdq(mb.from_onnx(q)["main"]).calls()}
    assert "int8_dense" not in ops and {"gemm"} <= ops
    want = ort.InferenceSession(q.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = mb.compile(mb.from_onnx(q), opt_level=3)(x)   # its float convs may be blocked
    assert np.abs(got - want).max() <= step * 1.001


def test_quantize_without_calibration_is_an_error():
    with pytest.raises(UnsupportedModelError, match="no calibration inputs"):
        quantize_qdq(mlp(), [])


def _int8_kernels(q):
    return [c for c in lower_qdq(mb.from_onnx(q)["main"]).calls()
            if c.op in ("int8_dense", "int8_conv2d")]


def test_reduce_range_weights_are_marked_narrow(quantized):
    _, q, _, _, _ = quantized      # quantize_qdq keeps weights in 7 bits (reduce_range)
    assert [c.attrs["narrow"] for c in _int8_kernels(q)] == [1] * len(_int8_kernels(q))


def test_full_range_weights_are_not_marked_narrow():
    """8-bit weights: vpmaddubsw would saturate, so the kernels must not claim to be narrow;
    the mark follows pairs_fit_int16 of each kernel's own constant weights."""
    rng = np.random.default_rng(1)
    logging.disable(logging.WARNING)
    try:
        q = quantize_qdq(mlp(), [{"x": rng.standard_normal((4, 24)).astype(np.float32)}
                                 for _ in range(4)], reduce_range=False)
    finally:
        logging.disable(logging.NOTSET)
    kernels = _int8_kernels(q)
    assert [c.attrs["narrow"] for c in kernels] == [
        int(pairs_fit_int16(c.args[1].data)) for c in kernels]
    assert 0 in [c.attrs["narrow"] for c in kernels]
