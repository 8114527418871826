"""Converters of ONNX's signal-processing ops: ``DFT``, ``STFT`` and ``MelWeightMatrix``.

A discrete Fourier transform of a known length is a linear map, so ``DFT`` becomes one
``matmul`` by a constant matrix of cosines and sines built at import (real and imaginary
parts interleaved, as ONNX stores complex numbers in a last axis of size 2). That costs
O(n**2) per transform instead of an FFT's O(n log n), and it compiles, fuses and tiles like
any matmul. ``STFT`` gathers the frames, multiplies them by the window and applies the
same matrix; ``MelWeightMatrix`` has only constant inputs and is computed at import.

    >>> dft_matrix(4, 4, 1, 2, inverse=False, onesided=False).shape
    (4, 8)
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from .onnx_context import Unsupported, onnx_dtype
from .onnx_ops import CONVERTERS, converter, guard_dtype


def dft_matrix(n: int, length: int, parts_in: int, parts_out: int, inverse: bool,
               onesided: bool) -> np.ndarray:
    """The (n * parts_in, m * parts_out) float64 matrix of a DFT of ``length`` points
    applied to ``n`` samples (zero-padded or cut to ``length``), with real and imaginary
    parts interleaved (``parts`` is 1 for a real signal, 2 for a complex one).

    Forward: ``m`` is ``length`` (``length // 2 + 1`` if ``onesided``). Inverse: the
    result is divided by ``length``; ``onesided`` reads the first ``length // 2 + 1`` bins
    of a Hermitian spectrum and gives the real signal (numpy's ``irfft``)."""
    bins = length // 2 + 1
    m = bins if onesided and not inverse else length
    used = min(n, bins if onesided and inverse else length)
    j, k = np.arange(used)[:, None], np.arange(m)[None, :]
    # the angle of sample j at frequency k, reduced mod length first so that it is exact
    angle = 2 * np.pi * ((j * k) % length) / length
    cos, sin = np.cos(angle), np.sin(angle)
    sign = 1.0 if inverse else -1.0    # e^{-i angle} forward, e^{+i angle} inverse
    if inverse and onesided:
        # each bin but the first (and the middle one of an even length) stands for two
        twice = np.where((np.arange(used) == 0) | (2 * np.arange(used) == length), 1.0, 2.0)
        cos, sin = cos * twice[:, None], sin * twice[:, None]
    w = np.zeros((n, parts_in, m, parts_out))
    # (a + ib)(cos + i sign sin) = a cos - sign b sin + i (b cos + sign a sin)
    w[:used, 0, :, 0] = cos
    if parts_out == 2:
        w[:used, 0, :, 1] = sign * sin
    if parts_in == 2:
        w[:used, 1, :, 0] = -sign * sin
        if parts_out == 2:
            w[:used, 1, :, 1] = cos
    if inverse:
        w /= length
    return w.reshape(n * parts_in, m * parts_out)


def _dft(cx, x, axis: int, length: int | None, inverse: bool, onesided: bool, suffix=""):
    """DFT of ``x`` (..., c) along ``axis`` (c: 1 real, 2 complex) as one matmul."""
    ndim, parts_in = x.type.ndim, x.shape[-1]
    if parts_in not in (1, 2) or not 0 <= axis < ndim - 1:
        raise Unsupported(f"DFT: the input {x.shape} must end in an axis of 1 (real) or 2 "
                          f"(complex) values, and axis={axis} must be another axis")
    if x.dtype not in ("float16", "float32", "float64"):
        raise Unsupported(f"DFT of {x.dtype} values (mlcbook computes it for floats)")
    n = x.shape[axis]
    if length is None:
        length = 2 * (n - 1) if inverse and onesided else n
    parts_out = 1 if inverse and onesided else 2
    w = dft_matrix(n, length, parts_in, parts_out, inverse, onesided)
    m = w.shape[1] // parts_out
    # bring the signal axis beside the parts, so that one row of n * parts values is a signal
    perm = tuple(d for d in range(ndim - 1) if d != axis) + (axis, ndim - 1)
    moved = x if axis == ndim - 2 else cx.call("transpose", x, perm=perm,
                                               suffix=suffix + "_to_end")
    rest = tuple(x.shape[d] for d in perm[:-2])
    rows = cx.call("reshape", moved, shape=rest + (n * parts_in,), suffix=suffix + "_rows")
    y = cx.call("matmul", rows, Constant(w.astype(x.dtype)), suffix=suffix + "_matmul")
    y = cx.call("reshape", y, shape=rest + (m, parts_out),
                suffix=suffix + ("_spectrum" if axis != ndim - 2 else ""))
    if axis == ndim - 2:
        return y
    back = tuple(int(i) for i in np.argsort(perm))
    return cx.call("transpose", y, perm=back, suffix=suffix)


@converter("DFT", attrs=("axis", "inverse", "onesided"), static=(1, 2))
@guard_dtype
def _dft_converter(cx, ins, attrs):
    x = ins[0]
    length = cx.number(1, "dft_length")
    if cx.opset >= 20:
        axis = cx.number(2, "axis")
        axis = -2 if axis is None else axis
    else:
        axis = attrs.get("axis", 1)
    if not -x.type.ndim <= axis < x.type.ndim:
        raise Unsupported(f"DFT: axis={axis} is outside the input's {x.type.ndim} axes")
    inverse, onesided = bool(attrs.get("inverse", 0)), bool(attrs.get("onesided", 0))
    return _dft(cx, x, axis % x.type.ndim, length, inverse, onesided)


@converter("STFT", attrs=("onesided",), static=(1, 3))
@guard_dtype
def _stft(cx, ins, attrs):
    x = ins[0]
    window = ins[2] if len(ins) > 2 else None
    step, length = cx.number(1, "frame_step"), cx.number(3, "frame_length")
    if window is not None:
        if window.type.ndim != 1 or (length is not None and length != window.shape[0]):
            raise Unsupported(f"STFT: the window {window.shape} must be 1-D, of "
                              f"frame_length={length} values")
        length = window.shape[0]
    if x.type.ndim != 3:
        raise Unsupported(f"STFT: the signal must be (batch, length, 1 or 2), got {x.shape}")
    length = x.shape[1] if length is None else length
    frames = 1 + (x.shape[1] - length) // step
    if frames < 1 or step < 1:
        raise Unsupported(f"STFT: a signal of {x.shape[1]} samples has no frame of "
                          f"{length} samples with frame_step={step}")
    starts = np.arange(frames, dtype=np.int64)[:, None] * step
    where = Constant(starts + np.arange(length, dtype=np.int64)[None, :])
    framed = cx.call("gather", x, where, axis=1, suffix="_frames")      # (b, frames, L, c)
    if window is not None:
        w = cx.call("reshape", window, shape=(length, 1), suffix="_window")
        framed = cx.call("mul", framed, w, suffix="_windowed")
    return _dft(cx, framed, 2, length, False, bool(attrs.get("onesided", 1)))


def mel_weight_matrix(num_mel_bins: int, dft_length: int, sample_rate: int, lower_hz: float,
                      upper_hz: float) -> np.ndarray:
    """ONNX's MelWeightMatrix, (dft_length // 2 + 1, num_mel_bins) in float64: triangles
    rising from one mel band edge to the next and falling to the one after, on DFT bins."""
    def to_mel(hz):
        return 2595 * np.log10(1 + hz / 700)
    low, high = to_mel(lower_hz), to_mel(upper_hz)
    edges_mel = low + np.arange(num_mel_bins + 2) * (high - low) / (num_mel_bins + 2)
    edges_hz = 700 * (10 ** (edges_mel / 2595) - 1)
    edges = ((dft_length + 1) * edges_hz // sample_rate).astype(np.int64)
    out = np.zeros((dft_length // 2 + 1, num_mel_bins))
    for i in range(num_mel_bins):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center, i] = 1
        else:
            out[left:center + 1, i] = (np.arange(left, center + 1) - left) / (center - left)
        if right > center:
            out[center:right, i] = (right - np.arange(center, right)) / (right - center)
    return out


@converter("MelWeightMatrix", attrs=("output_datatype",), static=(0, 1, 2, 3, 4))
def _mel_weight_matrix(cx, ins, attrs):
    values = [cx.static(k, name) for k, name in enumerate(
        ("num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz", "upper_edge_hertz"))]
    dtype = onnx_dtype(attrs.get("output_datatype", 1), "output_datatype")
    mel, dft, rate = (int(np.asarray(v).reshape(-1)[0]) for v in values[:3])
    low, high = (float(np.asarray(v).reshape(-1)[0]) for v in values[3:])
    return Constant(mel_weight_matrix(mel, dft, rate, low, high).astype(dtype))


__all__ = ["CONVERTERS", "dft_matrix", "mel_weight_matrix"]
