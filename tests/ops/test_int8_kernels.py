"""The int8 kernel ops' references (their computes) against numpy oracles and the QLinear ops
they stand for, and weight packing."""

import numpy as np
import pytest

from mlcbook.errors import OpAttributeError, OpShapeError
from mlcbook.ops import TensorType, get, type_of_array
from mlcbook.ops.int8_kernels import pack_conv_int8, pack_int8, unpack_conv_int8, unpack_int8


def _requantized(acc, mult, y_zp, dtype, relu, axis):
    """numpy: int32 sums (bias added) to ``dtype``, per-channel ``mult`` along ``axis``."""
    if dtype == "int32":
        return acc.astype(np.int32)
    shape = [1] * acc.ndim
    shape[axis] = -1
    v = np.rint(acc.astype(np.float32) * mult.reshape(shape)) + np.float32(y_zp)
    if relu:
        v = np.maximum(v, np.float32(y_zp))
    info = np.iinfo(dtype)
    return np.clip(v, info.min, info.max).astype(dtype)


def dense_oracle(x, wp, bias, mult, units, x_zp=0, y_zp=0, dtype="uint8", relu=0):
    w = unpack_int8(wp, units, x.shape[1]).astype(np.int64)
    acc = x.astype(np.int64) @ w.T + bias
    return _requantized(acc, mult, y_zp, dtype, relu, 1)


def _conv_sums(x, w, strides, pads, x_zp):
    """int64 sums (N, F, OH, OW) of NCHW ``x`` (padded with ``x_zp``) and ``w`` (F, C, KH, KW)."""
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
                constant_values=x_zp)
    f, _, kh, kw = w.shape
    oh = (xp.shape[2] - kh) // strides[0] + 1
    ow = (xp.shape[3] - kw) // strides[1] + 1
    out = np.zeros((x.shape[0], f, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            win = xp[:, :, i:i + strides[0] * oh:strides[0], j:j + strides[1] * ow:strides[1]]
            out += np.einsum("nchw,fc->nfhw", win, w[:, :, i, j].astype(np.int64))
    return out


def conv_oracle(x, wp, bias, mult, channels, kernel_shape, strides=(1, 1), pads=(0, 0, 0, 0),
                x_zp=0, y_zp=0, dtype="uint8", relu=0, layout="NCHW", pool=(1, 1), pixels=1):
    """numpy: the conv's sums, the windows' largest (groups of ``pixels`` pixels per
    column), requantized with the first group's bias and multiplier."""
    nchw = x.transpose(0, 3, 1, 2) if layout == "NHWC" else x
    w = unpack_conv_int8(wp, channels, nchw.shape[1], kernel_shape)
    acc = _conv_sums(nchw, w, strides, pads, x_zp)
    if layout == "NCHW":
        return _requantized(acc + bias.reshape(1, -1, 1, 1), mult, y_zp, dtype, relu, 1)
    n, f, oh, ow = acc.shape
    (ph, pw), f = pool, f // pixels
    acc = acc.transpose(0, 2, 3, 1).reshape(n, oh, ow * pixels, f)
    acc = acc[:, :oh // ph * ph, :ow * pixels // pw * pw]
    acc = acc.reshape(n, oh // ph, ph, ow * pixels // pw, pw, f).max(axis=(2, 4))
    return _requantized(acc + bias[:f], mult[:f], y_zp, dtype, relu, 3)


@pytest.mark.parametrize("units, k, dtype, relu", [(6, 10, "uint8", 0), (20, 64, "int8", 1),
                                                   (3, 7, "int32", 0)])
def test_int8_dense_computes_the_oracle(units, k, dtype, relu):
    rng = np.random.default_rng(units)
    x = rng.integers(0, 256, (5, k), dtype=np.uint8)
    wp = pack_int8(rng.integers(-128, 128, (units, k), dtype=np.int8))
    bias = rng.integers(-3000, 3000, units).astype(np.int32)
    mult = rng.uniform(1e-3, 4e-3, units).astype(np.float32)
    attrs = dict(units=units, x_zp=9, y_zp=4, dtype=dtype, relu=relu)
    np.testing.assert_array_equal(get("int8_dense").reference(x, wp, bias, mult, **attrs),
                                  dense_oracle(x, wp, bias, mult, **attrs))


@pytest.mark.parametrize("shape, f, attrs", [
    ((2, 3, 7, 6), 5, dict(strides=(2, 1), pads=(1, 0, 1, 2))),
    ((2, 6, 7, 3), 4, dict(layout="NHWC", pads=(1, 1, 1, 1), dtype="int8")),
    ((1, 6, 8, 2), 16, dict(layout="NHWC", pads=(1, 1, 1, 1), pool=(2, 2))),
    ((1, 4, 5, 3), 6, dict(layout="NHWC", dtype="int32"))])
def test_int8_conv2d_computes_the_oracle(shape, f, attrs):
    rng = np.random.default_rng(f)
    c = shape[3] if attrs.get("layout") == "NHWC" else shape[1]
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    wp = pack_conv_int8(rng.integers(-128, 128, (f, c, 3, 3), dtype=np.int8))
    bias = rng.integers(-3000, 3000, f).astype(np.int32)
    mult = rng.uniform(1e-3, 4e-3, f).astype(np.float32)
    attrs = dict(channels=f, kernel_shape=(3, 3), x_zp=7, y_zp=3, relu=1, **attrs)
    np.testing.assert_array_equal(get("int8_conv2d").reference(x, wp, bias, mult, **attrs),
                                  conv_oracle(x, wp, bias, mult, **attrs))


def test_pack_unpack_round_trip_and_zero_padding():
    w = np.arange(-30, 5, dtype=np.int8).reshape(5, 7)
    wp = pack_int8(w)
    assert wp.shape == (1, 2, 16, 4) and wp[0, 1, 2, 1] == w[2, 5] and wp[0, 1, 2, 3] == 0
    np.testing.assert_array_equal(unpack_int8(wp, 5, 7), w)


def epilogue(w2d, xz, ws, xs, ys):
    bias = -xz * w2d.astype(np.int32).sum(axis=1)
    mult = (np.float32(xs) * ws) / np.float32(ys)
    return bias.astype(np.int32), mult.astype(np.float32)


def test_int8_dense_is_qlinear_matmul():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (3, 10), dtype=np.uint8)
    w = rng.integers(-60, 60, (6, 10), dtype=np.int8)
    ws = np.linspace(0.01, 0.02, 6).astype(np.float32)
    bias, mult = epilogue(w, 7, ws, 0.03, 0.1)
    got = get("int8_dense").reference(x, pack_int8(w), bias, mult, units=6, x_zp=7, y_zp=9)
    want = get("qlinear_matmul").reference(x, np.float32(0.03), np.uint8(7), w.T.copy(), ws,
                                           np.zeros(6, np.int8), np.float32(0.1), np.uint8(9))
    np.testing.assert_array_equal(got, want)


def test_int8_conv2d_is_qlinear_conv():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 256, (1, 3, 6, 6), dtype=np.uint8)
    w = rng.integers(-60, 60, (5, 3, 3, 3), dtype=np.int8)
    bias, mult = epilogue(w.reshape(5, -1), 11, np.full(5, 0.01, np.float32), 0.02, 0.2)
    window = dict(strides=(2, 2), pads=(1, 1, 1, 1), dilations=(1, 1))
    got = get("int8_conv2d").reference(x, pack_conv_int8(w), bias, mult, channels=5,
                                       kernel_shape=(3, 3), x_zp=11, y_zp=3, dtype="int8",
                                       **window)
    want = get("qlinear_conv").reference(x, np.float32(0.02), np.uint8(11), w, np.float32(0.01),
                                         np.int8(0), np.float32(0.2), np.int8(3), **window)
    np.testing.assert_array_equal(got, want)


def test_conv_weights_are_packed_by_window_row_channels_last_and_padded_to_4():
    w = np.arange(2 * 3 * 2 * 2, dtype=np.int8).reshape(2, 3, 2, 2)     # (F, C, KH, KW)
    wp = pack_conv_int8(w)
    rows = unpack_int8(wp, 2, 2 * 8).reshape(2, 2, 8)      # a window row: 2 x 3 -> 8 terms
    np.testing.assert_array_equal(rows[..., :6], w.transpose(0, 2, 3, 1).reshape(2, 2, 6))
    assert not rows[..., 6:].any()


def test_relu_clamps_at_the_output_zero_point():
    x = np.zeros((1, 4), np.uint8)
    w = np.ones((2, 4), np.int8)
    got = get("int8_dense").reference(x, pack_int8(w), np.array([-50, 50], np.int32),
                                      np.ones(2, np.float32), units=2, y_zp=20, relu=1)
    np.testing.assert_array_equal(got, [[20, 70]])


def test_unpacked_weights_are_an_error():
    with pytest.raises(OpShapeError, match="pack the weights with pack_int8"):
        get("int8_dense").infer_type([TensorType((2, 8), "uint8"), TensorType((4, 8), "int8"),
                                      TensorType((4,), "int32"), TensorType((4,))],
                                     {"units": 4})


def test_output_type():
    wp = pack_int8(np.zeros((10, 64), np.int8))
    t = get("int8_dense").infer_type([TensorType((4, 64), "uint8"), type_of_array(wp),
                                      TensorType((10,), "int32"), TensorType((10,))],
                                     {"units": 10, "dtype": "int8"})
    assert t == TensorType((4, 10), "int8")


def test_int8_conv2d_channels_last_shapes_and_an_unknown_layout():
    wp = pack_conv_int8(np.ones((5, 3, 3, 3), np.int8))
    types = [TensorType((2, 8, 8, 3), "uint8"), type_of_array(wp), TensorType((5,), "int32"),
             TensorType((5,), "float32")]
    attrs = dict(channels=5, kernel_shape=(3, 3), strides=(2, 2))
    assert get("int8_conv2d").infer_type(types, dict(attrs, layout="NHWC")).shape == (2, 3, 3, 5)
    with pytest.raises(OpAttributeError, match=r"layout='NWHC' is not one of .*Instead"):
        get("int8_conv2d").infer_type(types, dict(attrs, layout="NWHC"))


def test_int32_output_is_the_sums_plus_bias_unscaled():
    """dtype="int32" (ONNX's MatMulInteger) stops before requantizing: the multiplier is
    not read, and sums beyond float32's 24 bits stay exact."""
    x = np.full((1, 64), 255, np.uint8)
    w = np.full((3, 64), -128, np.int8)
    bias = np.array([0, 1, -1], np.int32)
    got = get("int8_dense").reference(x, pack_int8(w), bias, np.full(3, 0.5, np.float32),
                                      units=3, dtype="int32")
    want = x.astype(np.int32) @ w.T.astype(np.int32) + bias
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int32


def test_output_dtype_outside_int8_uint8_int32_is_an_error():
    wp = pack_int8(np.zeros((10, 64), np.int8))
    with pytest.raises(OpAttributeError, match="dtype='float32' is not int8, uint8 or int32"):
        get("int8_dense").infer_type([TensorType((4, 64), "uint8"), type_of_array(wp),
                                      TensorType((10,), "int32"), TensorType((10,))],
                                     {"units": 10, "dtype": "float32"})


def _conv_epilogue(w):
    f = w.shape[0]
    return epilogue(w.reshape(f, -1), 5, np.linspace(0.01, 0.03, f).astype(np.float32), 0.02,
                    0.1)


def _nhwc_conv(x, w, **attrs):
    f = w.shape[0]
    bias, mult = _conv_epilogue(w)
    return get("int8_conv2d").reference(x, pack_conv_int8(w), bias, mult, channels=f,
                                        kernel_shape=w.shape[2:], pads=(1, 1, 1, 1), x_zp=5,
                                        y_zp=3, relu=1, layout="NHWC", **attrs)


def test_a_pooled_int8_conv2d_is_the_conv_then_a_max_pool():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 256, (2, 6, 7, 3), dtype=np.uint8)
    w = rng.integers(-60, 60, (4, 3, 3, 3), dtype=np.int8)
    y = _nhwc_conv(x, w)                              # (2, 6, 7, 4)
    want = y[:, :6, :6].reshape(2, 3, 2, 3, 2, 4).max(axis=(2, 4))   # the last column left out
    np.testing.assert_array_equal(_nhwc_conv(x, w, pool=(2, 2)), want)


def test_a_conv_of_grouped_pixels_pools_across_its_groups():
    # two pixels of 2 filters per column: filters 2-3 are 0-1 shifted one pixel right
    rng = np.random.default_rng(4)
    x = rng.integers(0, 256, (1, 4, 8, 1), dtype=np.uint8)
    w = rng.integers(-60, 60, (2, 1, 3, 3), dtype=np.int8)
    wide = np.zeros((4, 1, 3, 4), np.int8)
    wide[:2, ..., :3], wide[2:, ..., 1:] = w, w
    bias, mult = _conv_epilogue(w)
    got = get("int8_conv2d").reference(
        x, pack_conv_int8(wide), np.tile(bias, 2), np.tile(mult, 2), channels=4,
        kernel_shape=(3, 4), strides=(1, 2), pads=(1, 1, 1, 1), x_zp=5, y_zp=3, relu=1,
        layout="NHWC", pool=(2, 2), pixels=2)
    want = _nhwc_conv(x, w).reshape(1, 2, 2, 4, 2, 2).max(axis=(2, 4))
    np.testing.assert_array_equal(got, want)


def test_pooling_needs_channels_last_and_whole_groups_of_pixels():
    wp = pack_conv_int8(np.ones((4, 3, 3, 3), np.int8))
    types = [TensorType((2, 3, 8, 8), "uint8"), type_of_array(wp), TensorType((4,), "int32"),
             TensorType((4,), "float32")]
    attrs = dict(channels=4, kernel_shape=(3, 3), pool=(2, 2))
    with pytest.raises(OpShapeError, match=r"pool=\(2, 2\) over pixels=1 needs layout='NHWC'.*"
                                           "layout='NCHW'.*Instead: pool with max_pool"):
        get("int8_conv2d").infer_type(types, attrs)
    types[0] = TensorType((2, 8, 8, 3), "uint8")
    with pytest.raises(OpShapeError, match="pool's width a multiple of 4"):
        get("int8_conv2d").infer_type(types, dict(attrs, layout="NHWC", pixels=4, pool=(2, 2)))
    assert get("int8_conv2d").infer_type(types, dict(attrs, layout="NHWC")).shape == (2, 3, 3, 4)


def test_unpack_conv_int8_inverts_pack_conv_int8():
    w = np.random.default_rng(5).integers(-128, 128, (5, 3, 3, 2), dtype=np.int8)
    np.testing.assert_array_equal(unpack_conv_int8(pack_conv_int8(w), 5, 3, (3, 2)), w)
