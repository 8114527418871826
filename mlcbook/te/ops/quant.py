"""Quantization as tensor expressions, with ONNX's semantics: ``quantize_linear``,
``dequantize_linear``, the integer products ``matmul_integer`` and ``conv_integer``, and
``qlinear_matmul`` / ``qlinear_conv``, which requantize their int32 sums.

A quantized tensor stores ``q`` for the real value ``(q - zero_point) * scale``. Scales and
zero points are ``()`` or ``(1,)`` tensors (per tensor) or ``(C,)`` tensors, one per index of
``axis`` (per axis). Rounding is to the nearest integer, ties to even (``np.rint``), and
results saturate to the range of the output dtype::

    q = quantize_linear(x, scale, zp)            # x float32 (4, 8); scale (1,); zp (1,) uint8
    q.dtype                                      # 'uint8'
"""

from __future__ import annotations

from ...errors import TEShapeError
from ...tir import expr as _e
from ...tir.int_math import saturate
from ..tensor import Tensor
from .linalg import matmul
from .nn import conv
from .util import axis_names, compute_named, load, normalize_axis, store

__all__ = ["quantize_linear", "dequantize_linear", "matmul_integer", "conv_integer",
           "qlinear_matmul", "qlinear_conv", "requantize"]


def _one(t: Tensor) -> _e.PrimExpr:
    """The value of the one-value tensor ``t``, of shape ``()`` or ``(1,)``."""
    return load(t, (0,) * t.ndim)


def check_param(what: str, shape, x_shape, axis: int | None) -> None:
    """Raise unless a scale or zero point (``what``) of ``shape`` is one value, or one per
    index of ``axis`` (None: one value only) of the data of ``x_shape``: the quantizers'
    check, which the graph ops share."""
    if tuple(shape) in ((), (1,)):
        return
    if axis is None or len(shape) != 1 or shape[0] != x_shape[axis]:
        per = "" if axis is None else \
            f", or ({x_shape[axis]},): one per index of axis {axis}"
        raise TEShapeError(f"the {what} has shape {tuple(shape)}; it must be one value{per} "
                           f"of the data {tuple(x_shape)}")


def _param(t: Tensor, idx, axis: int, what: str, x: Tensor) -> _e.PrimExpr:
    """Scale or zero point ``t`` at output index ``idx``: one value, or one per ``axis``."""
    if t.shape in ((), (1,)):
        return _one(t)
    check_param(what, t.shape, x.shape, axis)
    return load(t, (idx[axis],))


def _axis(axis: int, x: Tensor, op: str, *params: Tensor) -> int:
    """``axis`` made non-negative; any value when every parameter is one value (unused)."""
    if all(p.shape in ((), (1,)) for p in params):
        return 0
    return normalize_axis(axis, max(x.ndim, 1), op)


def _names(x: Tensor) -> list[str]:
    return axis_names(x.ndim)


def quantize_linear(x: Tensor, scale: Tensor, zero_point: Tensor, axis: int = 1,
                    name: str = "quantize_linear") -> Tensor:
    """``saturate(rint(x / scale) + zero_point)`` in ``zero_point``'s dtype."""
    axis = _axis(axis, x, "quantize_linear", scale, zero_point)

    def body(*i):
        v = _e.round(load(x, i) / _param(scale, i, axis, "scale", x))
        return saturate(zero_point.dtype,
                        v + _e.cast("float32", _param(zero_point, i, axis, "zero point", x)))

    return compute_named(x.shape, _names(x), body, name)


def dequantize_linear(x: Tensor, scale: Tensor, zero_point: Tensor, axis: int = 1,
                      name: str = "dequantize_linear") -> Tensor:
    """``(x - zero_point) * scale`` in ``scale``'s dtype."""
    axis = _axis(axis, x, "dequantize_linear", scale, zero_point)

    def body(*i):
        q = load(x, i) - _param(zero_point, i, axis, "zero point", x)
        return store(_e.cast("float32", q) * _param(scale, i, axis, "scale", x), scale.dtype)

    return compute_named(x.shape, _names(x), body, name)


def _shifted(x: Tensor, zp: Tensor, axis: int, name: str) -> Tensor:
    """``int32(x) - zp`` (``zp`` one value or one per index of ``axis``)."""
    return compute_named(x.shape, _names(x), lambda *i: load(x, i) - _param(
        zp, i, axis, "zero point", x), name)


def matmul_integer(a: Tensor, b: Tensor, a_zero_point: Tensor, b_zero_point: Tensor,
                   name: str = "matmul_integer") -> Tensor:
    """``(a - a_zp) @ (b - b_zp)`` in int32; ``a_zp`` per row of ``a``, ``b_zp`` per column
    of ``b`` when they are not single values."""
    a32 = _shifted(a, a_zero_point, max(a.ndim - 2, 0), f"{name}_a")
    b32 = _shifted(b, b_zero_point, b.ndim - 1, f"{name}_b")
    return matmul(a32, b32, name=name)


def conv_integer(x: Tensor, w: Tensor, x_zero_point: Tensor, w_zero_point: Tensor,
                 bias: Tensor | None = None, name: str = "conv_integer", **window) -> Tensor:
    """``conv(x - x_zp, w - w_zp)`` in int32 (``w_zp`` per output channel when it is not
    one value; padding is ``x_zp``, i.e. zero once shifted); ``window`` as
    :func:`~.nn.conv` takes it."""
    x32 = _shifted(x, x_zero_point, 1, f"{name}_x")
    w32 = _shifted(w, w_zero_point, 0, f"{name}_w")
    return conv(x32, w32, bias, name=name, **window)


def requantize(acc: Tensor, multiplier, zero_point: Tensor, dtype: str, name: str) -> Tensor:
    """``saturate(rint(float32(acc) * multiplier(i)) + zero_point)``: an int32 sum back to
    ``dtype``; ``multiplier(i)`` is the float32 factor at output index ``i``."""
    def body(*i):
        v = _e.round(_e.cast("float32", acc[i]) * multiplier(i))
        return saturate(dtype, v + _e.cast("float32", _one(zero_point)))

    return compute_named(acc.shape, _names(acc), body, name)


def _multiplier(a_scale: Tensor, b_scale: Tensor, y_scale: Tensor, axis: int, like: Tensor):
    def factor(i):
        s = _one(a_scale) * _param(b_scale, i, axis, "weight scale", like)
        return _e.cast("float32", s / _one(y_scale))
    return factor


def qlinear_matmul(a: Tensor, a_scale: Tensor, a_zero_point: Tensor, b: Tensor,
                   b_scale: Tensor, b_zero_point: Tensor, y_scale: Tensor,
                   y_zero_point: Tensor, name: str = "qlinear_matmul") -> Tensor:
    """The quantized matrix product: ``matmul_integer`` requantized with
    ``a_scale * b_scale / y_scale`` (``b``'s scale and zero point may be per column)."""
    acc = matmul_integer(a, b, a_zero_point, b_zero_point, name=f"{name}_acc")
    axis = acc.ndim - 1
    return requantize(acc, _multiplier(a_scale, b_scale, y_scale, axis, acc), y_zero_point,
                      y_zero_point.dtype, name)


def qlinear_conv(x: Tensor, x_scale: Tensor, x_zero_point: Tensor, w: Tensor, w_scale: Tensor,
                 w_zero_point: Tensor, y_scale: Tensor, y_zero_point: Tensor,
                 bias: Tensor | None = None, name: str = "qlinear_conv", **window) -> Tensor:
    """The quantized convolution: ``conv_integer`` (+ the int32 ``bias``) requantized with
    ``x_scale * w_scale / y_scale`` (``w``'s scale and zero point may be per output channel)."""
    acc = conv_integer(x, w, x_zero_point, w_zero_point, bias, name=f"{name}_acc", **window)
    return requantize(acc, _multiplier(x_scale, w_scale, y_scale, 1, acc), y_zero_point,
                      y_zero_point.dtype, name)
