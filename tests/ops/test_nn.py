"""conv, conv_transpose, batch_norm and layer_norm, declared from their te computes, against
numpy oracles written from ONNX's definitions."""
import itertools

import numpy as np
import pytest

from mlcbook.errors import OpAttributeError, OpShapeError
from mlcbook.ops import TensorType, get


def _rand(shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def conv_oracle(x, w, b=None, strides=None, pads=None, dilations=None, group=1):
    """Each kernel offset's strided view of the padded input, contracted with the weights."""
    nsp = x.ndim - 2
    strides, dilations = strides or (1,) * nsp, dilations or (1,) * nsp
    pads = pads or (0,) * (2 * nsp)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[i], pads[nsp + i])
                                                          for i in range(nsp)])
    kernel = w.shape[2:]
    out = [(xp.shape[2 + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1
           for i in range(nsp)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    cg, mg = x.shape[1] // group, w.shape[0] // group
    for g, off in itertools.product(range(group), itertools.product(*map(range, kernel))):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                   for o, d, s, n in zip(off, dilations, strides, out))
        patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + sl]
        wk = w[(slice(g * mg, (g + 1) * mg), slice(None)) + off].astype(np.float64)
        y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, wk)
    if b is not None:
        y += b.reshape((1, -1) + (1,) * nsp)
    return y


def conv_transpose_oracle(x, w, b=None, strides=None, pads=None, dilations=None, group=1,
                          output_padding=None):
    """Every input element scattered onto its output window, then the padding cropped."""
    nsp = x.ndim - 2
    strides, dilations = strides or (1,) * nsp, dilations or (1,) * nsp
    pads, opad = pads or (0,) * (2 * nsp), output_padding or (0,) * nsp
    kernel, (n, c), mg = w.shape[2:], x.shape[:2], w.shape[1]
    full = tuple(strides[d] * (x.shape[2 + d] - 1) + opad[d] + (kernel[d] - 1) * dilations[d]
                 + 1 for d in range(nsp))
    y = np.zeros((n, mg * group) + full)
    cg = c // group
    for g, off in itertools.product(range(group), itertools.product(*map(range, kernel))):
        xs = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        ws = w[g * cg:(g + 1) * cg].astype(np.float64)
        contrib = np.einsum("nc...,cm->nm...", xs, ws[(slice(None), slice(None)) + off])
        sl = tuple(slice(o * d, o * d + s * (size - 1) + 1, s) for o, d, s, size in
                   zip(off, dilations, strides, x.shape[2:]))
        y[(slice(None), slice(g * mg, (g + 1) * mg)) + sl] += contrib
    y = y[(slice(None), slice(None)) + tuple(slice(pads[d], full[d] - pads[nsp + d])
                                             for d in range(nsp))]
    return y if b is None else y + b.reshape((-1,) + (1,) * nsp)


@pytest.mark.parametrize("x,w,attrs", [
    ((1, 4, 6, 6), (6, 2, 3, 3), {"group": 2, "strides": (2, 1), "pads": (1, 0, 1, 2),
                                  "dilations": (1, 2)}),
    ((2, 3, 9), (4, 3, 2), {"pads": (1, 1)}),
    ((1, 2, 3, 4, 4), (2, 1, 2, 2, 2), {"group": 2, "strides": (1, 2, 2)}),
], ids=str)
def test_conv_matches_its_oracle(x, w, attrs):
    xs, ws, b = _rand(x), _rand(w, 1), _rand((w[0],), 2)
    np.testing.assert_allclose(get("conv").reference(xs, ws, b, **attrs),
                               conv_oracle(xs, ws, b, **attrs), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("x,w,attrs", [
    ((1, 2, 3, 3), (2, 3, 3, 3), {"strides": (2, 2), "pads": (1, 0, 0, 1),
                                  "output_padding": (1, 0)}),
    ((2, 4, 5), (4, 1, 3), {"group": 2, "dilations": (2,)}),
], ids=str)
def test_conv_transpose_matches_its_oracle(x, w, attrs):
    xs, ws = _rand(x), _rand(w, 1)
    b = _rand((w[1] * attrs.get("group", 1),), 2)
    np.testing.assert_allclose(get("conv_transpose").reference(xs, ws, b, **attrs),
                               conv_transpose_oracle(xs, ws, b, **attrs), rtol=1e-5, atol=1e-5)


def test_a_conv_of_an_empty_batch_is_empty():
    x, w = np.zeros((0, 3, 5, 5), "float32"), np.zeros((4, 3, 3, 3), "float32")
    assert get("conv").reference(x, w, pads=(1, 1, 1, 1)).shape == (0, 4, 5, 5)
    assert get("conv_transpose").infer_type([TensorType((0, 3, 5)), TensorType((3, 2, 3))],
                                            {}).shape == (0, 2, 7)


def test_conv_attributes_are_checked_once_by_the_compute_as_graph_errors():
    with pytest.raises(OpAttributeError, match=r"conv: strides=\(1,\) must be an int or 2 ints"):
        get("conv").infer_type([TensorType((1, 3, 5, 5)), TensorType((4, 3, 3, 3))],
                               {"strides": (1,)})
    with pytest.raises(OpAttributeError, match=r"conv_transpose: strides \(0, 1\), dilations "
                                               r"\(1, 1\) and kernel \(3, 3\) must be positive"):
        get("conv_transpose").infer_type([TensorType((1, 3, 5, 5)), TensorType((3, 2, 3, 3))],
                                         {"strides": (0, 1)})
    with pytest.raises(OpShapeError, match=r"conv_transpose: the data has shape \(3, 5\), of "
                                           r"rank 2; it needs at least 3 dimensions \(N, C, "):
        get("conv_transpose").infer_type([TensorType((3, 5)), TensorType((3, 2, 3))], {})


def test_batch_norm_is_the_formula():
    x = _rand((2, 3, 4))
    scale, bias, mean = _rand((3,), 1), _rand((3,), 2), _rand((3,), 3)
    var = np.abs(_rand((3,), 4)) + 0.5
    c = (1, -1, 1)
    want = (x - mean.reshape(c)) / np.sqrt(var.reshape(c).astype(np.float64) + 1e-3) \
        * scale.reshape(c) + bias.reshape(c)
    got = get("batch_norm").reference(x, scale, bias, mean, var, epsilon=1e-3)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12)])
def test_layer_norm_and_its_statistics_are_the_formula(dtype, tol):
    x, scale, bias = _rand((2, 3, 4), 0, dtype), _rand((4,), 1, dtype), _rand((3, 1), 2, dtype)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(1, 2), keepdims=True)
    inv = 1 / np.sqrt(((x64 - mean) ** 2).mean(axis=(1, 2), keepdims=True) + 1e-5)
    y, m, s = get("layer_norm").reference(x, scale, bias, axis=1, num_outputs=3)
    np.testing.assert_allclose(y, (x64 - mean) * inv * scale + bias, rtol=tol, atol=tol)
    np.testing.assert_allclose(m, mean, rtol=tol, atol=tol)
    np.testing.assert_allclose(s, inv, rtol=tol, atol=tol)
    assert y.dtype == x.dtype and m.dtype == s.dtype == np.dtype(dtype)


def test_layer_norm_refuses_other_output_counts():
    with pytest.raises(OpAttributeError, match="layer_norm: num_outputs must be 1"):
        get("layer_norm").infer_type([TensorType((2, 4)), TensorType((4,))], {"num_outputs": 2})
