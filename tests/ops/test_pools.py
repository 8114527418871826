"""The pools, declared from their te computes, against numpy oracles written from ONNX's
definitions (windows as strided views of the padded input)."""
import itertools

import numpy as np
import pytest

from mlcbook.ops import get


def _window_views(xp, kernel, strides, dilations, out):
    """(kernel offset, the strided view of xp under that offset) for every offset."""
    for off in itertools.product(*(range(k) for k in kernel)):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                   for o, d, s, n in zip(off, dilations, strides, out))
        yield off, xp[(Ellipsis,) + sl]


def _window(x, kernel, strides, pads, dilations, ceil_mode):
    nsp = x.ndim - 2
    strides, dilations = strides or (1,) * nsp, dilations or (1,) * nsp
    pads = pads or (0,) * (2 * nsp)
    out = []
    for i in range(nsp):
        span = x.shape[2 + i] + pads[i] + pads[nsp + i] - dilations[i] * (kernel[i] - 1) - 1
        n = -(-span // strides[i]) if ceil_mode else span // strides[i]
        # ONNX: a last window that starts in the end padding is dropped
        if ceil_mode and n * strides[i] >= x.shape[2 + i] + pads[i]:
            n -= 1
        out.append(n + 1)
    return strides, pads, dilations, out


def pool_oracle(op, x, kernel_shape, strides=None, pads=None, dilations=None, ceil_mode=0,
                count_include_pad=0):
    nsp = x.ndim - 2
    strides, pads, dilations, out = _window(x, kernel_shape, strides, pads, dilations, ceil_mode)
    # padded far enough that every window fits; masks tell real input and explicit padding apart
    extra = [max(0, (out[i] - 1) * strides[i] + dilations[i] * (kernel_shape[i] - 1) + 1
                 - x.shape[2 + i] - pads[i] - pads[nsp + i]) for i in range(nsp)]
    widths = [(pads[i], pads[nsp + i] + extra[i]) for i in range(nsp)]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + widths)
    real = np.pad(np.ones(x.shape[2:]), widths)
    counted = np.pad(np.ones([x.shape[2 + i] + pads[i] + pads[nsp + i] for i in range(nsp)]),
                     [(0, e) for e in extra])
    args = (kernel_shape, strides, dilations, out)
    views = [v for _, v in _window_views(xp, *args)]
    reals = [v for _, v in _window_views(real, *args)]
    if op == "max_pool":
        y = np.full(x.shape[:2] + tuple(out), -np.inf)
        for v, r in zip(views, reals):
            y = np.maximum(y, np.where(r > 0, v, -np.inf))
        return y.astype(x.dtype)
    masks = [v for _, v in _window_views(counted, *args)] if count_include_pad else reals
    return (sum(views) / sum(masks)).astype(x.dtype)


def max_pool_indices_oracle(x, kernel_shape, strides=None, pads=None, dilations=None,
                            ceil_mode=0, storage_order=0):
    """The offset of the first of each window's maxima, looked for element by element."""
    best = pool_oracle("max_pool", x, kernel_shape, strides, pads, dilations, ceil_mode)
    strides, pads, dilations, out = _window(x, kernel_shape, strides, pads, dilations, ceil_mode)
    nsp, spatial = x.ndim - 2, x.shape[2:]
    found = np.full(best.shape, -1, np.int64)
    for o in itertools.product(*(range(n) for n in out)):
        for off in itertools.product(*(range(k) for k in kernel_shape)):   # row-major
            at = [o[d] * strides[d] + off[d] * dilations[d] - pads[d] for d in range(nsp)]
            if not all(0 <= a < s for a, s in zip(at, spatial)):
                continue
            v, b = x[(...,) + tuple(at)], best[(...,) + o]
            new = (found[(...,) + o] < 0) & ((v == b) | (np.isnan(v) & np.isnan(b)))
            found[(...,) + o][new] = np.ravel_multi_index(at, spatial,
                                                          order="F" if storage_order else "C")
    planes = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2] + (1,) * nsp)
    return found + planes * int(np.prod(spatial))


CASES = [
    ((1, 2, 5, 5), "uint8", {"kernel_shape": (2, 2), "strides": (2, 2), "ceil_mode": 1}),
    ((1, 2, 5, 6), "float32", {"kernel_shape": (3, 3), "pads": (1, 1, 1, 1), "strides": (2, 2),
                               "count_include_pad": 1}),
    ((1, 2, 5, 6), "float32", {"kernel_shape": (3, 3), "pads": (1, 0, 2, 1), "strides": (2, 1)}),
    ((1, 1, 7), "float32", {"kernel_shape": (3,), "pads": (1, 1), "dilations": (2,)}),
    ((2, 2, 7), "float16", {"kernel_shape": (3,), "dilations": (2,), "ceil_mode": 1,
                            "strides": (2,)}),
    ((2, 3, 4, 5), "int8", {"kernel_shape": (2, 3), "strides": (2, 1), "pads": (1, 0, 0, 1)}),
]


def _data(shape, dtype):
    # few distinct values: windows with equal maxima, where the first one must win
    return np.random.default_rng(0).integers(-3, 3, shape).astype(dtype) \
        if dtype != "uint8" else np.random.default_rng(0).integers(0, 4, shape).astype(dtype)


@pytest.mark.parametrize("op", ["max_pool", "avg_pool", "max_pool_indices"])
@pytest.mark.parametrize("shape,dtype,attrs", CASES, ids=str)
def test_a_pool_matches_its_oracle(op, shape, dtype, attrs):
    if op == "avg_pool" and dtype.startswith(("int", "uint")):
        pytest.skip("average pooling takes floats")
    attrs = {k: v for k, v in attrs.items() if op == "avg_pool" or k != "count_include_pad"}
    x = _data(shape, dtype)
    got = get(op).reference(x, **attrs)
    if op == "max_pool_indices":
        for order in (0, 1):
            np.testing.assert_array_equal(get(op).reference(x, **attrs, storage_order=order),
                                          max_pool_indices_oracle(x, **attrs,
                                                                  storage_order=order))
        return
    tol = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(got, pool_oracle(op, x, **attrs), rtol=tol, atol=tol)


def test_a_nan_in_a_window_makes_its_max_nan():
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    x[0, 0, 0, 0] = np.nan
    got = get("max_pool").reference(x, kernel_shape=(2, 2), strides=(2, 2))
    assert np.isnan(got[0, 0, 0, 0]) and got[0, 0, 1, 1] == 15
    assert get("max_pool_indices").reference(x, kernel_shape=(2, 2), strides=(2, 2))[
        0, 0, 0, 0] == 0


def test_global_avg_pool_is_the_spatial_mean():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype("float32")
    np.testing.assert_allclose(get("global_avg_pool").reference(x),
                               x.astype(np.float64).mean((2, 3), keepdims=True), rtol=1e-6)


def test_pools_of_an_empty_batch_are_empty():
    x = np.zeros((0, 2, 4, 4), "float32")
    assert get("max_pool").reference(x, kernel_shape=(2, 2)).shape == (0, 2, 3, 3)
    assert get("global_avg_pool").reference(x).shape == (0, 2, 1, 1)
