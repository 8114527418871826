"""The declared unary ops (mlcbook/ops/unary.py) against numpy: the reference (their own
compute, run by numpy), the compiled kernel, and the ONNX import through onnxruntime."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlcbook as mb
from mlcbook import ops
from mlcbook.errors import OpAttributeError, OpDTypeError
from mlcbook.graph import Function, Var, interpret, op
from mlcbook.ops.types import TensorType

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _expm1(x, alpha):
    return alpha * (np.exp(x) - 1)


#: name -> (numpy oracle in float64, attributes, the input's domain (low, high))
ORACLES = {
    "neg": (np.negative, {}, None), "abs": (np.abs, {}, None), "exp": (np.exp, {}, None),
    "log": (np.log, {}, (0.1, 4)), "sqrt": (np.sqrt, {}, (0, 4)),
    "reciprocal": (lambda x: 1 / x, {}, (0.5, 3)), "relu": (lambda x: np.maximum(x, 0), {}, None),
    "leaky_relu": (lambda x, alpha: np.where(x < 0, alpha * x, x), {"alpha": 0.2}, None),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), {}, None), "tanh": (np.tanh, {}, None),
    "erf": (_erf, {}, None), "gelu": (_gelu, {"approximate": "tanh"}, None),
    "clip": (lambda x, min, max: np.clip(x, min, max), {"min": -0.5, "max": 0.7}, None),
    "sin": (np.sin, {}, None), "cos": (np.cos, {}, None), "tan": (np.tan, {}, (-1, 1)),
    "asin": (np.arcsin, {}, (-0.9, 0.9)), "acos": (np.arccos, {}, (-0.9, 0.9)),
    "atan": (np.arctan, {}, None), "sinh": (np.sinh, {}, None), "cosh": (np.cosh, {}, None),
    "asinh": (np.arcsinh, {}, None), "acosh": (np.arccosh, {}, (1.1, 4)),
    "atanh": (np.arctanh, {}, (-0.9, 0.9)), "floor": (np.floor, {}, None),
    "ceil": (np.ceil, {}, None), "round": (np.round, {}, None),
    "softplus": (lambda x: np.logaddexp(0, x), {}, None),
    "mish": (lambda x: x * np.tanh(np.logaddexp(0, x)), {}, None),
    "swish": (lambda x, alpha: x / (1 + np.exp(-alpha * x)), {"alpha": 1.5}, None),
    "hard_swish": (lambda x: x * np.clip(x / 6 + 0.5, 0, 1), {}, (-5, 5)),
    "elu": (lambda x, alpha: np.where(x < 0, _expm1(x, alpha), x), {"alpha": 0.7}, None),
    "selu": (lambda x, alpha, gamma: gamma * np.where(x <= 0, _expm1(x, alpha), x),
             {"alpha": 1.5, "gamma": 1.1}, None),
    "celu": (lambda x, alpha: np.maximum(x, 0) + np.minimum(0, _expm1(x / alpha, alpha)),
             {"alpha": 0.8}, None),
    "thresholded_relu": (lambda x, alpha: np.where(x > alpha, x, 0), {"alpha": 0.3}, None),
    "hard_sigmoid": (lambda x, alpha, beta: np.clip(alpha * x + beta, 0, 1),
                     {"alpha": 0.3, "beta": 0.4}, (-4, 4)),
    "softsign": (lambda x: x / (1 + np.abs(x)), {}, None),
    "shrink": (lambda x, bias, lambd: np.where(x < -lambd, x + bias,
                                               np.where(x > lambd, x - bias, 0)),
               {"bias": 0.2, "lambd": 0.6}, None),
    "sign": (np.sign, {}, None),
}


def _input(name, shape=(3, 7), dtype="float32", seed=0):
    rng = np.random.default_rng(seed)
    domain = ORACLES[name][2]
    x = rng.uniform(*domain, shape) if domain else 2 * rng.standard_normal(shape)
    return x.astype(dtype)


def _graph(name, x, **attrs):
    v = Var("x", TensorType(x.shape, x.dtype.name))
    return Function([v], getattr(op, name)(v, **attrs))


def test_every_oracle_is_a_declared_op():
    assert all(ops.get(name).onnx is not None for name in ORACLES)


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_reference_matches_numpy(name):
    fn, attrs, _ = ORACLES[name]
    x = _input(name)
    got = interpret(_graph(name, x, **attrs), x)
    want = fn(x.astype(np.float64), **attrs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_compiled_kernel_matches_numpy(name):
    fn, attrs, _ = ORACLES[name]
    x = _input(name, (5, 19), seed=1)
    got = mb.compile(_graph(name, x, **attrs))(x)
    np.testing.assert_allclose(got, fn(x.astype(np.float64), **attrs), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("name,dtype", [("relu", "int8"), ("neg", "int16"), ("abs", "int32"),
                                        ("sign", "int64"), ("shrink", "int32"),
                                        ("clip", "uint8")])
def test_integer_inputs_compute_in_their_dtype(name, dtype):
    fn, attrs, _ = ORACLES[name]
    x = np.random.default_rng(2).integers(0 if dtype == "uint8" else -9, 9, (4, 6)).astype(dtype)
    attrs = {k: int(v) if name == "clip" else v for k, v in attrs.items()}
    want = fn(x.astype(np.int64), **attrs)
    if name == "shrink":    # fractional bounds and bias, the result truncated (onnxruntime's)
        want = np.trunc(fn(x.astype(np.float64), **attrs))
    got = mb.compile(_graph(name, x, **attrs))(x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want.astype(dtype))
    np.testing.assert_array_equal(interpret(_graph(name, x, **attrs), x), got)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_storage_floats_compute_in_float32(dtype):
    x = _input("swish").astype(dtype)
    got = mb.compile(_graph("swish", x, alpha=1.0))(x)
    want = ORACLES["swish"][0](x.astype(np.float64), alpha=1.0)
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-2, atol=1e-2)


def test_predicates_give_bool():
    x = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], "float32")
    assert interpret(_graph("isnan", x), x).tolist() == [False, False, False, True, False]
    got = mb.compile(_graph("isinf", x, detect_negative=0))(x)
    assert got.tolist() == [False, True, False, False, False]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "uint32", "int64"])
def test_bitwise_not_flips_every_bit(dtype):
    info = np.iinfo(dtype)
    x = np.array([info.min, 0, 1, info.max], dtype)
    np.testing.assert_array_equal(mb.compile(_graph("bitwise_not", x))(x), np.invert(x))


def test_a_dtype_outside_the_declared_ones_is_refused():
    with pytest.raises(OpDTypeError, match="swish: the input has dtype int32, but swish takes"):
        _graph("swish", np.zeros(3, "int32"))


def test_an_attribute_value_outside_the_declared_ones_is_refused():
    with pytest.raises(OpAttributeError, match="gelu: approximate='fast' is not one of 'none', 'tanh'"):
        _graph("gelu", np.zeros(3, "float32"), approximate="fast")


@pytest.mark.parametrize("name", sorted(n for n in ORACLES if ops.get(n).onnx))
def test_onnx_import_and_export_match_onnxruntime(name):
    ort = pytest.importorskip("onnxruntime")
    fn, attrs, _ = ORACLES[name]
    x = _input(name, (2, 9), seed=3)
    model = mb.to_onnx(_graph(name, x, **attrs))
    assert [n.op_type for n in model.graph.node] == [ops.get(name).onnx]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    got = mb.compile(mb.from_onnx(model))(x)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)
