"""The quantization ops: their declared computes (as the graph reference and legalized to loop
IR) against numpy oracles written independently (ONNX's rounding and saturation) and
hand-computed values, their empty forms, and their errors."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import OpDTypeError, OpShapeError
from mlcbook.ops import TensorType, get, legalize_call, type_of_array

from .test_nn import conv_oracle


# --- the oracles ------------------------------------------------------------------------------
def _per(p, ndim, axis):
    """A scale or zero point shaped to broadcast against a rank-``ndim`` tensor."""
    if p.size == 1:
        return p.reshape(())
    shape = [1] * ndim
    shape[axis] = -1
    return p.reshape(shape)


def _rint_saturate(v, dtype):
    info = np.iinfo(dtype)
    return np.clip(np.rint(v), info.min, info.max).astype(dtype)


def quantize_oracle(x, scale, zp, axis=1):
    axis = axis % max(x.ndim, 1)
    q = np.rint(x.astype(np.float32) / _per(scale.astype(np.float32), x.ndim, axis))
    return _rint_saturate(q + _per(zp, x.ndim, axis).astype(np.float32), zp.dtype)


def dequantize_oracle(x, scale, zp, axis=1):
    axis = axis % max(x.ndim, 1)
    q = (x.astype(np.int64) - _per(zp, x.ndim, axis).astype(np.int64)).astype(np.float32)
    return (q * _per(scale.astype(np.float32), x.ndim, axis)).astype(scale.dtype)


def matmul_integer_oracle(a, b, azp, bzp):
    a64 = a.astype(np.int64) - _per(azp, a.ndim, a.ndim - 2).astype(np.int64)
    b64 = b.astype(np.int64) - _per(bzp, b.ndim, b.ndim - 1).astype(np.int64)
    return np.matmul(a64, b64).astype(np.int32)


def conv_integer_oracle(x, w, xzp, wzp, bias=None, **window):
    window.pop("kernel_shape", None)
    xf = x.astype(np.float64) - xzp.astype(np.float64).reshape(())
    wf = w.astype(np.float64) - _per(wzp, w.ndim, 0).astype(np.float64)
    return conv_oracle(xf, wf, bias, **window).astype(np.int32)   # exact in float64


def _requantize(acc, s_a, s_b, s_y, zp, axis):
    f = np.float32
    m = (f(s_a.reshape(-1)[0]) * s_b.astype(f)) / f(s_y.reshape(-1)[0])
    v = np.rint(acc.astype(f) * _per(m, acc.ndim, axis)) + f(zp.reshape(-1)[0])
    return _rint_saturate(v, zp.dtype)


def qlinear_matmul_oracle(a, as_, azp, b, bs, bzp, ys, yzp):
    acc = matmul_integer_oracle(a, b, azp, bzp)
    return _requantize(acc, as_, bs, ys, yzp, acc.ndim - 1)


def qlinear_conv_oracle(x, xs, xzp, w, ws, wzp, ys, yzp, bias=None, **window):
    return _requantize(conv_integer_oracle(x, w, xzp, wzp, bias, **window), xs, ws, ys, yzp, 1)


ORACLES = {"quantize_linear": quantize_oracle, "dequantize_linear": dequantize_oracle,
           "matmul_integer": matmul_integer_oracle, "conv_integer": conv_integer_oracle,
           "qlinear_matmul": qlinear_matmul_oracle, "qlinear_conv": qlinear_conv_oracle}


# --- the cases --------------------------------------------------------------------------------
def _ints(shape, dtype, seed, lo=None, hi=None):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    return rng.integers(info.min if lo is None else lo, (info.max if hi is None else hi) + 1,
                        shape).astype(dtype)


def _floats(shape, seed, scale=3.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


CASES = [
    ("quantize_linear", (np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4),
                         np.array([0.5, 0.25, 1.0], np.float32), np.array([0, 3, -2], np.int8)),
     {"axis": 0}),
    ("quantize_linear", (_floats((2, 3, 4), 1, 300), np.float32(0.7), np.uint8(128)), {}),
    ("quantize_linear", (_floats((2, 5), 2, 30000), np.array([0.25], np.float32),
                         np.array([7], np.int16)), {"axis": -1}),
    ("quantize_linear", (_floats((4, 3), 3).astype(np.float16), np.float16(0.05),
                         np.int8(-1)), {}),
    ("dequantize_linear", (np.arange(12, dtype=np.uint8).reshape(3, 4), np.float32(0.1),
                           np.uint8(5)), {}),
    ("dequantize_linear", (_ints((2, 3), np.int8, 4), np.array([0.5, 2.0, 0.1], np.float32),
                           np.array([1, -3, 0], np.int8)), {}),
    ("dequantize_linear", (_ints((3, 2), np.int32, 5, -1000, 1000), np.float16(0.01),
                           np.int32(0)), {}),
    ("matmul_integer", (np.arange(6, dtype=np.uint8).reshape(2, 3),
                        np.arange(-6, 6, dtype=np.int8).reshape(3, 4), np.uint8(2),
                        np.array([1, 0, -1, 2], np.int8)), {}),
    ("matmul_integer", (_ints((2, 3, 8), np.uint8, 6), _ints((8, 5), np.uint8, 7),
                        np.array([3, 200, 9], np.uint8), np.array([128], np.uint8)), {}),
    ("conv_integer", (_ints((1, 2, 5, 5), np.uint8, 8), _ints((3, 2, 3, 3), np.int8, 9),
                      np.uint8(100), np.array([0, 2, -3], np.int8)),
     {"pads": (1, 1, 1, 1), "strides": (2, 1)}),
    ("qlinear_matmul", (_ints((3, 6), np.uint8, 10), np.float32(0.02), np.uint8(120),
                        _ints((6, 4), np.int8, 11, -30, 30), np.array([0.01, 0.02, 0.03, 0.04],
                                                                      np.float32),
                        np.zeros(4, np.int8), np.float32(0.05), np.uint8(128)), {}),
    ("qlinear_matmul", (_ints((2, 3, 6), np.int8, 12), np.array([0.1], np.float32),
                        np.int8(-5), _ints((6, 2), np.int8, 13), np.float32(0.3), np.int8(1),
                        np.float32(0.2), np.int8(0)), {}),
    ("qlinear_conv", (_ints((1, 2, 6, 6), np.uint8, 14), np.float32(0.02), np.uint8(100),
                      _ints((4, 1, 3, 3), np.int8, 15, -20, 20), np.float32(0.01), np.int8(0),
                      np.float32(0.05), np.uint8(128), _ints((4,), np.int32, 16, -500, 500)),
     {"pads": (1, 0, 1, 2), "group": 2}),
]
IDS = [f"{op}-{k}" for k, (op, _, _) in enumerate(CASES)]


def run_legalized(op, *args, **attrs):
    """The op legalized to loop IR and run by the interpreter (0-d inputs as (1,) buffers)."""
    out_type = get(op).infer_type([type_of_array(a) for a in args], attrs)
    func = legalize_call(op, [type_of_array(a) for a in args], attrs)
    out = np.zeros(out_type.shape or (1,), out_type.dtype)
    mb.tir.interpret(func, *[a.reshape(1) if a.ndim == 0 else a for a in args], out)
    return out.reshape(out_type.shape)


@pytest.mark.parametrize("op,args,attrs", CASES, ids=IDS)
def test_reference_matches_the_oracle(op, args, attrs):
    got, want = get(op).reference(*args, **attrs), ORACLES[op](*args, **attrs)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,args,attrs", CASES, ids=IDS)
def test_legalization_matches_the_oracle(op, args, attrs):
    np.testing.assert_array_equal(run_legalized(op, *args, **attrs), ORACLES[op](*args, **attrs))


def test_quantize_rounds_half_to_even_and_saturates():
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1000.0, -1000.0], np.float32)
    q = get("quantize_linear").reference(x, np.float32(1.0), np.int8(0))
    np.testing.assert_array_equal(q, [0, 2, 2, 0, -2, 127, -128])


def test_quantize_adds_the_zero_point_in_uint8():
    q = get("quantize_linear").reference(np.array([-1.0, 0.0, 3.0], np.float32),
                                         np.float32(0.5), np.uint8(10))
    np.testing.assert_array_equal(q, [8, 10, 16])
    assert q.dtype == np.uint8


def test_quantize_per_axis_uses_one_scale_per_channel():
    x = np.ones((2, 3), np.float32)
    q = get("quantize_linear").reference(x, np.array([1.0, 0.5, 0.25], np.float32),
                                         np.zeros(3, np.int8), axis=1)
    np.testing.assert_array_equal(q, [[1, 2, 4], [1, 2, 4]])


def test_dequantize_per_axis():
    q = np.array([[10, 20], [30, 40]], np.uint8)
    y = get("dequantize_linear").reference(q, np.array([1.0, 0.5], np.float32),
                                           np.array([10, 0], np.uint8), axis=0)
    np.testing.assert_array_equal(y, [[0, 10], [15, 20]])


def test_qlinear_conv_matches_its_float_meaning():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, 2, 5, 5), dtype=np.uint8)
    w = rng.integers(-20, 20, (3, 2, 3, 3), dtype=np.int8)
    xs, xz, ws, ys, yz = np.float32(0.02), np.uint8(100), np.float32(0.01), np.float32(0.05), \
        np.uint8(128)
    y = get("qlinear_conv").reference(x, xs, xz, w, ws, np.int8(0), ys, yz, pads=(1, 1, 1, 1))
    real = conv_oracle((x.astype(np.float32) - 100) * xs, w.astype(np.float32) * ws,
                       pads=(1, 1, 1, 1))
    want = np.clip(np.rint(real / ys) + 128, 0, 255)
    assert np.abs(y.astype(int) - want).max() <= 1


# --- no elements ------------------------------------------------------------------------------
def test_quantizing_an_empty_per_axis_tensor_gives_an_empty_one():
    q = get("quantize_linear").reference(np.zeros((2, 0), np.float32),
                                         np.ones(2, np.float32), np.zeros(2, np.int8), axis=0)
    assert q.shape == (2, 0) and q.dtype == np.int8


def test_an_integer_product_over_no_terms_is_its_zero():
    a, b = np.zeros((2, 0), np.uint8), np.zeros((0, 3), np.int8)
    acc = get("matmul_integer").reference(a, b, np.uint8(4), np.int8(1))
    np.testing.assert_array_equal(acc, np.zeros((2, 3), np.int32))
    y = get("qlinear_matmul").reference(a, np.float32(1), np.uint8(4), b, np.float32(1),
                                        np.int8(1), np.float32(1), np.uint8(9))
    np.testing.assert_array_equal(y, np.full((2, 3), 9, np.uint8))


def test_a_quantized_conv_of_an_empty_batch_is_empty():
    t = get("conv_integer").infer_type([TensorType((0, 2, 5, 5), "uint8"),
                                        TensorType((3, 2, 3, 3), "int8"),
                                        TensorType((), "uint8"), TensorType((), "int8")], {})
    assert t == TensorType((0, 3, 3, 3), "int32")


# --- errors -----------------------------------------------------------------------------------
def test_scale_of_wrong_shape_is_an_error():
    with pytest.raises(OpShapeError, match=r"quantize_linear: the scale has shape \(4,\); it "
                       r"must be one value, or \(3,\): one per index of axis 1"):
        get("quantize_linear").infer_type(
            [TensorType((2, 3)), TensorType((4,)), TensorType((), "uint8")], {})


def test_float_zero_point_is_an_error():
    with pytest.raises(OpDTypeError, match="quantize_linear: the zero point has dtype float32"):
        get("quantize_linear").infer_type(
            [TensorType((2, 3)), TensorType(()), TensorType(())], {})


def test_dequantize_zero_point_must_have_the_inputs_dtype():
    with pytest.raises(OpDTypeError, match=r"dequantize_linear: the zero point has dtype "
                       r"int8, but dequantize_linear takes uint8"):
        get("dequantize_linear").infer_type(
            [TensorType((2,), "uint8"), TensorType(()), TensorType((), "int8")], {})


def test_integer_matmul_needs_matrices_of_8_bit_integers():
    one = TensorType((), "uint8")
    with pytest.raises(OpShapeError, match=r"matmul_integer: both operands must have at least "
                       r"2 dimensions, got \(4,\) and \(4, 2\)"):
        get("matmul_integer").infer_type([TensorType((4,), "uint8"), TensorType((4, 2), "uint8"),
                                          one, one], {})
    with pytest.raises(OpDTypeError, match=r"qlinear_matmul: the first operand has dtype "
                       r"float32, but qlinear_matmul takes int8, uint8"):
        get("qlinear_matmul").infer_type([TensorType((2, 4)), TensorType(()), one,
                                          TensorType((4, 2), "uint8"), TensorType(()), one,
                                          TensorType(()), one], {})


def test_qlinear_conv_bias_needs_one_value_per_output_channel():
    u8, i8 = TensorType((), "uint8"), TensorType((), "int8")
    with pytest.raises(OpShapeError, match=r"qlinear_conv: conv: the bias has shape \(2,\) but "
                       r"must be \(3,\), one per output channel"):
        get("qlinear_conv").infer_type(
            [TensorType((1, 2, 5, 5), "uint8"), TensorType(()), u8,
             TensorType((3, 2, 3, 3), "int8"), TensorType(()), i8, TensorType(()), u8,
             TensorType((2,), "int32")], {})


def test_conv_integer_refuses_a_window_as_conv_does():
    one = TensorType((), "uint8")
    with pytest.raises(mb.errors.OpAttributeError, match=r"conv: strides \(0, 1\), dilations "
                       r"\(1, 1\) and kernel \(3, 3\) must be positive"):
        get("conv_integer").infer_type([TensorType((1, 2, 5, 5), "uint8"),
                                        TensorType((3, 2, 3, 3), "uint8"), one, one],
                                       {"strides": (0, 1)})
