"""DFT, STFT and MelWeightMatrix beyond onnx's node cases: the DFT matrix against numpy's
FFT in float64 for every mode (lengths that pad and cut the signal too), and the errors
of what the converters refuse."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.frontend.onnx_signal_ops import dft_matrix

RNG = np.random.default_rng(3)


def _apply(x_parts: np.ndarray, length: int, inverse: bool, onesided: bool) -> np.ndarray:
    """The DFT of signals (rows, n, parts) by the matrix, as (rows, m, parts_out)."""
    rows, n, parts = x_parts.shape
    parts_out = 1 if inverse and onesided else 2
    w = dft_matrix(n, length, parts, parts_out, inverse, onesided)
    return (x_parts.reshape(rows, -1) @ w).reshape(rows, -1, parts_out)


def _complex(v):
    return v[..., 0] + 1j * v[..., 1]


@pytest.mark.parametrize("n,length", [(8, 8), (7, 7), (5, 8), (9, 6)])
def test_forward_dft_of_complex_and_real_signals_is_numpys_fft(n, length):
    z = RNG.standard_normal((3, n)) + 1j * RNG.standard_normal((3, n))
    got = _apply(np.stack([z.real, z.imag], -1), length, False, False)
    np.testing.assert_allclose(_complex(got), np.fft.fft(z, n=length), atol=1e-12)
    r = RNG.standard_normal((3, n))
    got = _apply(r[..., None], length, False, True)
    np.testing.assert_allclose(_complex(got), np.fft.rfft(r, n=length), atol=1e-12)


@pytest.mark.parametrize("n,length", [(8, 8), (5, 8), (9, 7)])
def test_inverse_dft_is_numpys_ifft_and_onesided_its_irfft(n, length):
    z = RNG.standard_normal((2, n)) + 1j * RNG.standard_normal((2, n))
    got = _apply(np.stack([z.real, z.imag], -1), length, True, False)
    np.testing.assert_allclose(_complex(got), np.fft.ifft(z, n=length), atol=1e-12)
    got = _apply(np.stack([z.real, z.imag], -1), length, True, True)
    np.testing.assert_allclose(got[..., 0], np.fft.irfft(z, n=length), atol=1e-12)


def _model(node, inputs, outputs, opset=20):
    g = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def test_dft_compiles_along_a_middle_axis():
    node = helper.make_node("DFT", ["x", "", "axis"], ["y"])
    axis = helper.make_tensor("axis", TensorProto.INT64, [], [1])
    g = helper.make_graph([node], "g", [_vi("x", TensorProto.FLOAT, [2, 6, 3, 2])],
                          [_vi("y", TensorProto.FLOAT, [2, 6, 3, 2])], initializer=[axis])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    x = RNG.standard_normal((2, 6, 3, 2)).astype("float32")
    got = mb.compile(mb.from_onnx(model))(x)
    want = np.fft.fft(_complex(x.astype("float64")), axis=1)
    np.testing.assert_allclose(_complex(got), want, rtol=1e-4, atol=1e-5)


def test_stft_of_a_signal_shorter_than_a_frame_is_refused():
    node = helper.make_node("STFT", ["x", "step", "", "len"], ["y"])
    inits = [helper.make_tensor("step", TensorProto.INT64, [], [4]),
             helper.make_tensor("len", TensorProto.INT64, [], [8])]
    g = helper.make_graph([node], "g", [_vi("x", TensorProto.FLOAT, [1, 6, 1])],
                          [_vi("y", TensorProto.FLOAT, [1, "f", "b", 2])], initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedModelError, match="a signal of 6 samples has no frame of 8 "
                       "samples with frame_step=4"):
        mb.from_onnx(model)
