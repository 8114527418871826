"""The integer kernels quantized models compile to: ``int8_dense`` and ``int8_conv2d``, uint8
activations times int8 weights summed in int32, requantized in the epilogue.

Both share one core, the int32 product of uint8 activations with weights packed offline as
``Wp[j // 16, k // 4, j % 16, k % 4]`` (:func:`pack_int8`; ``K`` and the columns padded with
zeros to multiples of 4 and 16), computed in the stage ``<name>_int8_acc`` whose last two
axes are ``(N16 // 16, 16)``. Each ``(16 x 4)`` tile of ``Wp`` is contiguous, so one
instruction (VNNI's ``vpdpbusd``, or two AVX2 multiply-adds of 8 lanes each) consumes it;
the default schedule tensorizes the stage (:mod:`mlcbook.rules.int8`). The epilogue
adds the int32 ``bias`` (which carries the activation zero point's correction
``-x_zp * sum_k w``), scales by the float32 ``multiplier`` per output channel, rounds half to
even, adds ``y_zp`` and saturates (and with ``relu``, clamps below at ``y_zp``, the
quantized zero). With ``dtype="int32"`` it stops after the bias: the output is the exact
int32 sums and the multiplier is not read::

    y = int8_dense(x, wp, bias, mult, units=10, y_zp=3, dtype="uint8")     # x (M, K) uint8

``int8_conv2d`` is a direct convolution over the data copied channels-last, each output
column's window row side by side (an im2col along the width only).
"""

from __future__ import annotations

import functools

import numpy as np

from ...errors import TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from ...tir.int_math import saturate
from .. import reduction as _r
from ..tensor import Tensor
from .nn import window_attrs, window_out_size
from .util import clamp, compute_named

__all__ = ["PACK_LANES", "pack_int8", "pack_conv_int8", "int8_dense", "int8_conv2d",
           "int8_product", "conv_row_terms",
           "ACC_SUFFIX", "NARROW_ACC_SUFFIX", "CONV_LAYOUTS", "OUT_DTYPES"]

#: the data layouts of :func:`int8_conv2d`: batch, channels, rows, columns or channels last
CONV_LAYOUTS = ("NCHW", "NHWC")
#: what the kernels output: requantized int8/uint8, or the int32 sums (plus bias) themselves
OUT_DTYPES = ("int8", "uint8", "int32")
#: output columns of one packed weight tile: VNNI's 16 int32 lanes (AVX2 does it in 2 x 8)
PACK_LANES = 16
#: the name of the stage the schedule tensorizes ends with this
ACC_SUFFIX = "_int8_acc"
#: ... and with this when the weights were proven to fit ``vpmaddubsw``'s int16 pair sums
#: (``narrow=True``; see :func:`mlcbook.tir.x86_intrinsics.pairs_fit_int16`)
NARROW_ACC_SUFFIX = "_w7" + ACC_SUFFIX


def _up(n: int, m: int) -> int:
    return -(-n // m) * m


def pack_int8(w: np.ndarray) -> np.ndarray:
    """Weights ``w`` (N, K) int8 as ``Wp (ceil(N/16), ceil(K/4), 16, 4)``, zero padded.

        >>> pack_int8(np.ones((3, 5), np.int8)).shape
        (1, 2, 16, 4)
    """
    n, k = w.shape
    wp = np.zeros((_up(n, PACK_LANES), _up(k, 4)), np.int8)
    wp[:n, :k] = w
    nb, kb = wp.shape[0] // PACK_LANES, wp.shape[1] // 4
    return np.ascontiguousarray(wp.reshape(nb, PACK_LANES, kb, 4).transpose(0, 2, 1, 3))


def _acc_name(name: str, narrow: bool) -> str:
    return name + (NARROW_ACC_SUFFIX if narrow else ACC_SUFFIX)


def int8_product(a: Tensor, wp: Tensor, name: str = "int8_matmul",
                 narrow: bool = False) -> Tensor:
    """``acc[i, jo, ji] = sum_k int32(a[i, k]) * int32(wp[jo, k // 4, ji, k % 4])``: the
    int32 product of ``a`` (M, K) uint8 with weights packed by :func:`pack_int8`, the
    stage the default schedule tensorizes (named ``name + ACC_SUFFIX``, or
    ``NARROW_ACC_SUFFIX`` with ``narrow``, as in :func:`int8_dense`). Its (M, N16 // 16, 16)
    layout is the (M, N16) matrix in memory.

        >>> int8_product(placeholder((4, 8), "uint8"), placeholder((1, 2, 16, 4), "int8")).shape
        (4, 1, 16)
    """
    nb, kb = wp.shape[0], wp.shape[1]
    if a.shape[1] != 4 * kb or wp.shape[2:] != (PACK_LANES, 4):
        raise TEShapeError(f"{name}: the activations {a.shape} and the packed weights "
                           f"{wp.shape} do not fit; pack the weights with pack_int8")
    ko = _r.reduce_axis(kb, name="ko")
    ki = _r.reduce_axis(4, name="ki")
    return compute_named((a.shape[0], nb, PACK_LANES), ["i", "jo", "ji"], lambda i, jo, ji: _r.sum(
        _e.cast("int32", a[i, ko * 4 + ki]) * _e.cast("int32", wp[jo, ko, ji, ki]),
        axis=[ko, ki]), _acc_name(name, narrow))


def _requant(acc_ij: _e.PrimExpr, j, bias: Tensor, mult: Tensor, y_zp: int, dtype: str,
             relu: bool) -> _e.PrimExpr:
    if dtype == "int32":
        return acc_ij + bias[j]   # the sums themselves (ONNX's MatMulInteger, ConvInteger)
    v = _e.round(_e.cast("float32", acc_ij + bias[j]) * mult[j])
    if y_zp:   # (+ 0.0 only turns -0.0 into 0.0, which the integer cast makes 0 anyway)
        v = v + float(y_zp)
    if relu:
        v = _e.max(v, float(y_zp))
    return saturate(dtype, v)


def _check_operands(name: str, wp: Tensor, bias: Tensor, mult: Tensor, n: int, k: int,
                    dtype: str, pack: str) -> None:
    """Raise unless ``wp`` (packed by ``pack``) holds ``n`` outputs over ``k`` terms, the
    bias and the multiplier one value per output, and ``dtype`` is one the kernels write."""
    if dtype not in OUT_DTYPES:
        raise TEAttributeError(f"{name}: dtype={dtype!r} is not int8, uint8 or int32")
    want = (-(-n // PACK_LANES), -(-k // 4), PACK_LANES, 4)
    if wp.shape != want or bias.shape != (n,) or mult.shape != (n,):
        raise TEShapeError(f"{name}: for {n} outputs over {k} terms the packed weight must be "
                           f"{want}, bias and multiplier ({n},); got {wp.shape}, {bias.shape}, "
                           f"{mult.shape}. Instead: pack the weights with {pack}")
    if bias.dtype != "int32" or mult.dtype != "float32":
        raise TEDTypeError(f"{name}: the bias must be int32 and the multiplier float32, got "
                           f"{bias.dtype} and {mult.dtype}")


def int8_dense(x: Tensor, wp: Tensor, bias: Tensor, multiplier: Tensor, units: int,
               x_zp: int = 0, y_zp: int = 0, dtype: str = "uint8", relu: bool = False,
               name: str = "int8_dense", narrow: bool = False) -> Tensor:
    """``x`` (M, K) uint8 times the packed weights of ``units`` outputs, requantized to
    ``dtype`` (M, units). ``narrow=True`` promises that the weights pass
    :func:`~mlcbook.tir.x86_intrinsics.pairs_fit_int16` (the caller checked the constant
    weights), which lets the schedule use the ``vpmaddubsw`` kernel; the computation is the
    same."""
    if x.ndim != 2:
        raise TEShapeError(f"{name}: the data must be 2-D (M, K), got {x.shape}")
    m, k = x.shape
    _check_operands(name, wp, bias, multiplier, units, k, dtype, "pack_int8")
    a = x
    if k % 4:
        # the reduction runs over whole tiles of 4: the extra columns meet zero weights
        kp = _up(k, 4)
        a = compute_named((m, kp), ["i", "k"], lambda i, kk: _e.select(
            kk < k, x[i, clamp(kk, k)], _e.const(x_zp, x.dtype)), f"{name}_pad")
    acc = int8_product(a, wp, name, narrow)
    return compute_named((m, units), ["i", "j"], lambda i, j: _requant(
        acc[i, j // PACK_LANES, j % PACK_LANES], j, bias, multiplier, y_zp, dtype, relu), name)


def int8_conv2d(x: Tensor, wp: Tensor, bias: Tensor, multiplier: Tensor, channels: int,
                kernel_shape, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1),
                x_zp: int = 0, y_zp: int = 0, dtype: str = "uint8", relu: bool = False,
                name: str = "int8_conv2d", narrow: bool = False,
                layout: str = "NCHW", pool=(1, 1), pixels: int = 1) -> Tensor:
    """2-D convolution of ``x`` (N, C, H, W) uint8 with ``channels`` filters of
    ``kernel_shape`` packed by :func:`pack_conv_int8`, requantized to ``dtype``
    (N, channels, OH, OW). The data is copied once into ``<name>_pad``
    (N, H + pads, OW, R), R = :func:`conv_row_terms`: for each output column, the KW pixels
    its window row covers, channels innermost, padded to a multiple of 4 with ``x_zp`` (the
    real zero; the border holds it too). The product then reads one contiguous run of R
    terms per window row (one register-tiled call sums it all), and neighbouring output
    columns are neighbouring rows of that copy whatever the stride. ``narrow`` as in
    :func:`int8_dense`.

    ``layout="NHWC"`` takes ``x`` channels-last (N, H, W, C) and gives (N, OH, OW,
    channels), the layout the product's sums are in: the copy then reads whole runs of
    channels and the requantizing epilogue reads and writes contiguous channels.

    ``pool=(ph, pw)`` (NHWC only) requantizes the largest sum of each ``ph x pw`` window of
    output pixels, windows side by side: a 2x2 max pool with stride 2 after the conv, when
    every multiplier is positive (requantizing then keeps the order of the sums). Each
    output column of a conv with ``pixels=P`` holds ``P`` neighbouring pixels of
    ``channels // P`` channels each (see
    :func:`mlcbook.graph.passes.int8_layout.group_pixels`; the groups share the bias and
    multiplier of the first), so ``pw`` counts those pixels: the output is
    ``(N, OH // ph, OW * P // pw, channels // P)``."""
    if layout not in CONV_LAYOUTS:
        raise TEAttributeError(f"{name}: layout={layout!r} is not one of {CONV_LAYOUTS}. "
                               "Instead: give NCHW data, or NHWC (channels last)")
    if x.ndim != 4:
        raise TEShapeError(f"{name}: the data must be 4-D ({', '.join(layout)}), got {x.shape}")
    window_attrs(name, 2, kernel_shape, strides, pads, dilations)
    if layout == "NHWC":
        n, h, w, c = x.shape
    else:
        n, c, h, w = x.shape
    kh, kw = kernel_shape
    row = conv_row_terms(c, kw)
    _check_operands(name, wp, bias, multiplier, channels, kh * row, dtype, "pack_conv_int8")
    oh = window_out_size(name, h, pads[0], pads[2], kh, strides[0], dilations[0])
    ow = window_out_size(name, w, pads[1], pads[3], kw, strides[1], dilations[1])
    hp = h + pads[0] + pads[2]

    def rows(b, y, z, kk):
        rx, ch = kk // c, kk % c
        yi, zi = y - pads[0], z * strides[1] + rx * dilations[1] - pads[1]
        inside = (kk < kw * c) & (yi >= 0) & (yi < h) & (zi >= 0) & (zi < w)
        ch, yi, zi = clamp(ch, c), clamp(yi, h), clamp(zi, w)
        return _e.select(inside, x[b, yi, zi, ch] if layout == "NHWC" else x[b, ch, yi, zi],
                         _e.const(x_zp, x.dtype))

    xr = compute_named((n, hp, ow, row), ["n", "y", "x", "k"], rows, f"{name}_pad")
    ry = _r.reduce_axis(kh, name="ry")
    ko = _r.reduce_axis(row // 4, name="ko")
    ki = _r.reduce_axis(4, name="ki")

    def product(b, y, z, jo, ji):
        src = xr[b, y * strides[0] + ry * dilations[0], z, ko * 4 + ki]
        wk = wp[jo, ry * (row // 4) + ko, ji, ki]
        return _r.sum(_e.cast("int32", src) * _e.cast("int32", wk), axis=[ry, ko, ki])

    acc = compute_named((n, oh, ow, wp.shape[0], PACK_LANES), ["n", "y", "x", "jo", "ji"],
                        product, _acc_name(name, narrow))

    def out(b, f, y, z):
        return _requant(acc[b, y, z, f // PACK_LANES, f % PACK_LANES], f, bias, multiplier,
                        y_zp, dtype, relu)

    if tuple(pool) != (1, 1) or pixels != 1:
        return _pooled(name, acc, channels, tuple(pool), pixels, layout,
                       lambda v, f: _requant(v, f, bias, multiplier, y_zp, dtype, relu))
    if layout == "NHWC":
        return compute_named((n, oh, ow, channels), ["n", "y", "x", "f"],
                             lambda b, y, z, f: out(b, f, y, z), name)
    return compute_named((n, channels, oh, ow), ["n", "f", "y", "x"], out, name)


def _pooled(name: str, acc: Tensor, channels: int, pool, pixels: int, layout: str,
            requant) -> Tensor:
    """The epilogue of :func:`int8_conv2d` with ``pool`` and ``pixels``: the largest sum of
    each window, requantized. The window's few sums are one expression (no reduce axes), so
    the epilogue stays one spatial stage the schedule can place under the product's rows."""
    n, oh, ow = acc.shape[:3]
    (ph, pw), f = pool, channels // pixels
    if layout != "NHWC" or channels % pixels or pw % pixels or min(ph, pw, pixels) < 1 or \
            oh < ph or ow * pixels < pw:
        raise TEShapeError(f"{name}: pool={tuple(pool)} over pixels={pixels} needs "
                           f"layout='NHWC', channels in groups of {pixels} pixels, the pool's "
                           f"width a multiple of {pixels} and a whole window in the "
                           f"{oh}x{ow * pixels} output pixels; got layout={layout!r}, "
                           f"{channels} channels. Instead: pool with max_pool")

    def out(b, y, z, c):
        sums = []
        for dy in range(ph):
            for dx in range(pw):   # the original pixel z * pw + dx, in its group's column
                j = (dx % pixels) * f + c
                sums.append(acc[b, y * ph + dy, z * (pw // pixels) + dx // pixels,
                                j // PACK_LANES, j % PACK_LANES])
        return requant(functools.reduce(_e.max, sums), c)

    return compute_named((n, oh // ph, ow * pixels // pw, f), ["n", "y", "x", "f"], out, name)


def conv_row_terms(c: int, kw: int) -> int:
    """Terms of one window row of :func:`int8_conv2d`: ``kw * c`` rounded up to 4 (for
    one channel and a 3-wide window, 4 terms, not 3 taps of 4 channels)."""
    return _up(kw * c, 4)


def pack_conv_int8(w: np.ndarray) -> np.ndarray:
    """Conv weights ``w`` (F, C, KH, KW) int8 packed for :func:`int8_conv2d`: each window
    row's ``KW * C`` weights (channels innermost) padded with zeros to
    :func:`conv_row_terms`, then :func:`pack_int8` of the ``(F, KH * R)`` matrix.

        >>> pack_conv_int8(np.ones((8, 1, 3, 3), np.int8)).shape     # R = 4
        (1, 3, 16, 4)
    """
    f, c, kh, kw = w.shape
    rows = np.zeros((f, kh, conv_row_terms(c, kw)), np.int8)
    rows[..., :kw * c] = w.transpose(0, 2, 3, 1).reshape(f, kh, kw * c)
    return pack_int8(rows.reshape(f, -1))
