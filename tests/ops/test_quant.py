"""The quantization ops: references against hand-computed values (ONNX's rounding and
saturation), their legalizations against the references, and their errors."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import OpDTypeError, OpShapeError
from mlcbook.ops import TensorType, get, legalize_call, type_of_array


def run_legalized(op, *args, **attrs):
    func = legalize_call(op, [type_of_array(a) for a in args], attrs)
    want = get(op).reference(*args, **attrs)
    out = np.zeros(want.shape if want.ndim else (1,), want.dtype)
    mb.tir.interpret(func, *[a.reshape(1) if a.ndim == 0 else a for a in args], out)
    return out.reshape(want.shape), want


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


@pytest.mark.parametrize("op,args,attrs", [
    ("quantize_linear", (np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4),
                         np.array([0.5, 0.25, 1.0], np.float32), np.array([0, 3, -2], np.int8)),
     {"axis": 0}),
    ("dequantize_linear", (np.arange(12, dtype=np.uint8).reshape(3, 4), np.float32(0.1),
                           np.uint8(5)), {}),
    ("matmul_integer", (np.arange(6, dtype=np.uint8).reshape(2, 3),
                        np.arange(-6, 6, dtype=np.int8).reshape(3, 4), np.uint8(2),
                        np.array([1, 0, -1, 2], np.int8)), {}),
])
def test_legalization_matches_reference(op, args, attrs):
    got, want = run_legalized(op, *args, **attrs)
    np.testing.assert_array_equal(got, want)


def test_qlinear_conv_matches_its_float_meaning():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (1, 2, 5, 5), dtype=np.uint8)
    w = rng.integers(-20, 20, (3, 2, 3, 3), dtype=np.int8)
    xs, xz, ws, ys, yz = np.float32(0.02), np.uint8(100), np.float32(0.01), np.float32(0.05), \
        np.uint8(128)
    y = get("qlinear_conv").reference(x, xs, xz, w, ws, np.int8(0), ys, yz, pads=(1, 1, 1, 1))
    real = get("conv").reference((x.astype(np.float32) - 100) * xs, w.astype(np.float32) * ws,
                                 pads=(1, 1, 1, 1))
    want = np.clip(np.rint(real / ys) + 128, 0, 255)
    assert np.abs(y.astype(int) - want).max() <= 1


def test_scale_of_wrong_shape_is_an_error():
    with pytest.raises(OpShapeError, match=r"one per index of axis 1"):
        get("quantize_linear").infer_type(
            [TensorType((2, 3)), TensorType((4,)), TensorType((), "uint8")], {})


def test_float_zero_point_is_an_error():
    with pytest.raises(OpDTypeError, match="zero point"):
        get("quantize_linear").infer_type(
            [TensorType((2, 3)), TensorType(()), TensorType(())], {})
