"""Quantized models in QDQ form run on integer kernels.

A model quantized in QDQ format (``onnxruntime.quantization.quantize_static``) keeps its
float ops and surrounds them with quantize/dequantize pairs::

    xd = dequantize_linear(xq, xs, xzp)           # uint8 activations
    wd = dequantize_linear(Wq, ws, wzp)           # int8 weights (a constant), per tensor or channel
    bd = dequantize_linear(Bq, xs * ws, 0)        # int32 bias (optional)
    y  = conv(xd, wd, bd)                         # or gemm / 2-D matmul, then maybe relu
    yq = quantize_linear(y, ys, yzp)

:func:`lower_qdq` replaces each such group by one integer kernel,
``yq = int8_conv2d(xq, pack(Wq), bias', multiplier)`` (or ``int8_dense``), which sums
``uint8 x int8`` products in int32 with the CPU's dot-product instruction and requantizes
once: ``multiplier = xs * ws / ys`` per output channel, ``bias' = Bq - xzp * sum_k Wq``
(so the activations need not be shifted; a weight zero point ``wzp`` is subtracted from the
constant weights first, ``Wq - wzp``, when that stays inside int8), a relu becoming a clamp
at ``yzp``. The kernel's ``narrow`` attribute is 1 when the constant weights pass
:func:`~mlcbook.tir.x86_intrinsics.pairs_fit_int16` (true for onnxruntime's
``reduce_range`` 7-bit weights): only then may AVX2 use ``vpmaddubsw``. A reshape or
flatten between a dequantize and a quantize with the same scale and zero point moves to the
integers, and so does a max pool. What does not match (int8 activations, weights whose
``Wq - wzp`` leaves int8, grouped convs, batched matmuls) keeps its float QDQ form, which
computes the same model more slowly.

    >>> func = lower_qdq(func)      # runs first at opt_level >= 1, before constants are folded
"""

from __future__ import annotations

import numpy as np

from ...ops import get as get_op
from ...ops.int8_kernels import pack_conv_int8, pack_int8
from ...ops.types import Attrs
from ...tir.x86_intrinsics import pairs_fit_int16
from ..expr import Call, Constant, Expr, Function
from ..functor import ExprMutator

#: ops that commute with quantize/dequantize of one scale and zero point: views of the
#: elements in another shape, and max pooling (rounding and ``x * s``, s > 0, keep order)
_INTEGER_SAFE = ("reshape", "flatten", "max_pool")


def lower_qdq(func: Function) -> Function:
    """``func`` with every DQ -> conv/gemm/matmul (-> relu) -> Q group on uint8 activations
    and symmetric int8 constant weights replaced by an integer kernel."""
    return _LowerQDQ().visit_function(func)


def _is(e: Expr, op: str) -> bool:
    return isinstance(e, Call) and e.op == op


def _scalar(e: Expr):
    """The value of a one-element constant, else None."""
    if isinstance(e, Constant) and e.data.size == 1:
        return e.data.reshape(-1)[0]
    return None


def _same_params(a: Call, b: Call) -> bool:
    sa, za, sb, zb = (_scalar(x) for x in (*a.args[1:3], *b.args[1:3]))
    return None not in (sa, za, sb, zb) and sa == sb and sa > 0 and za == zb and \
        a.args[2].type.dtype == b.args[2].type.dtype


def _dequantized_input(e: Expr):
    """``(xq, scale, zero point)`` when ``e`` dequantizes uint8 activations per tensor."""
    if not _is(e, "dequantize_linear") or e.args[0].type.dtype != "uint8":
        return None
    s, z = _scalar(e.args[1]), _scalar(e.args[2])
    return None if s is None or z is None else (e.args[0], float(s), int(z))


def _weights(e: Expr, out_axis: int):
    """``(Wq - zero point as int8, per-channel scales along out_axis)`` of a constant int8 or
    uint8 weight whose zero point (per tensor or per output channel) leaves ``Wq - zp``
    inside int8; else None (the group stays float)."""
    if not _is(e, "dequantize_linear"):
        return None
    wq, ws, wz = e.args
    if not (isinstance(wq, Constant) and wq.data.dtype in (np.int8, np.uint8)
            and isinstance(ws, Constant) and isinstance(wz, Constant)):
        return None
    n = wq.data.shape[out_axis]
    per_channel = e.attrs["axis"] % wq.data.ndim == out_axis
    if (ws.data.size != 1 and (not per_channel or ws.data.size != n)) or \
            (wz.data.size != 1 and (not per_channel or wz.data.size != n)):
        return None
    zp_shape = [1] * wq.data.ndim
    zp_shape[out_axis] = -1
    shifted = wq.data.astype(np.int32) - wz.data.astype(np.int32).reshape(
        zp_shape if wz.data.size != 1 else ())
    if shifted.min(initial=0) < -128 or shifted.max(initial=0) > 127:
        return None
    w = wq if wq.data.dtype == np.int8 and not np.any(wz.data != 0) else \
        Constant(shifted.astype(np.int8), wq.name, wq.owner)
    return w, np.broadcast_to(ws.data.reshape(-1).astype(np.float32), (n,)).copy()


def _constant_value(e: Expr | None):
    """The value of a constant or of a dequantized constant (a QDQ bias), else None."""
    if isinstance(e, Constant):
        return e.data
    if _is(e, "dequantize_linear") and all(isinstance(a, Constant) for a in e.args):
        return get_op("dequantize_linear").reference(*(a.data for a in e.args), **e.attrs)
    return None


class _LowerQDQ(ExprMutator):
    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op != "quantize_linear":
            return new
        ys, yzp = _scalar(new.args[1]), _scalar(new.args[2])
        if ys is None or yzp is None:
            return new
        y, relu = new.args[0], False
        if _is(y, "relu"):
            y, relu = y.args[0], True
        if _is(y, "conv"):
            return self._conv(new, y, float(ys), int(yzp), relu) or new
        if _is(y, "gemm") or _is(y, "matmul"):
            return self._dense(new, y, float(ys), int(yzp), relu) or new
        if isinstance(y, Call) and y.op in _INTEGER_SAFE and not relu and \
                _is(y.args[0], "dequantize_linear") and \
                _same_params(y.args[0], new):
            # quantize(view(dequantize(q))) with the same parameters is view(q)
            return Call(y.op, (y.args[0].args[0],), y.attrs, new.name)
        return new

    def _kernel(self, q: Call, op: str, xq: Expr, wq: Constant, w2d: np.ndarray, packed, ws,
                xs: float, xzp: int, bias, ys: float, yzp: int, relu: bool, **attrs) -> Call:
        n = w2d.shape[0]
        bias_q = np.zeros(n, np.int64) if bias is None else np.rint(
            bias.astype(np.float64) / (np.float64(xs) * ws.astype(np.float64))).astype(np.int64)
        total = bias_q - xzp * w2d.astype(np.int64).sum(axis=1)
        mult = (np.float32(xs) * ws) / np.float32(ys)
        args = (xq, Constant(packed, f"{wq.name}_packed" if wq.name else ""),
                Constant(total.astype(np.int32), f"{q.name}_bias"),
                Constant(mult.astype(np.float32), f"{q.name}_multiplier"))
        # the int16 pair sums of vpmaddubsw are exact for these weights: say so, and the
        # schedule may use that kernel (the check is on the constants, never assumed)
        narrow = int(pairs_fit_int16(packed))
        return Call(op, args, Attrs(dict(attrs, x_zp=xzp, y_zp=yzp, relu=int(relu),
                                          dtype=q.type.dtype, narrow=narrow)), q.name)

    def _conv(self, q: Call, conv: Call, ys: float, yzp: int, relu: bool):
        x = _dequantized_input(conv.args[0])
        w = _weights(conv.args[1], 0)
        bias = _constant_value(conv.args[2]) if len(conv.args) == 3 else None
        if x is None or w is None or (len(conv.args) == 3 and bias is None) or \
                conv.args[0].type.ndim != 4 or conv.attrs["group"] != 1:
            return None
        (xq, xs, xzp), (wq, ws) = x, w
        w2d = wq.data.reshape(wq.data.shape[0], -1)
        a = conv.attrs
        return self._kernel(q, "int8_conv2d", xq, wq, w2d, pack_conv_int8(wq.data), ws, xs, xzp,
                            bias, ys, yzp, relu,
                            channels=w2d.shape[0], kernel_shape=tuple(wq.data.shape[2:]),
                            strides=tuple(a["strides"]), pads=tuple(a["pads"]),
                            dilations=tuple(a["dilations"]))

    def _dense(self, q: Call, y: Call, ys: float, yzp: int, relu: bool):
        a = y.attrs
        if y.op == "gemm" and (a["alpha"] != 1.0 or a["beta"] != 1.0 or a["trans_a"] or
                               a["b_panel"]):
            return None
        trans_b = y.op == "gemm" and a["trans_b"]
        x = _dequantized_input(y.args[0])
        w = _weights(y.args[1], 0 if trans_b else 1)
        bias = _constant_value(y.args[2]) if len(y.args) == 3 else None
        if x is None or w is None or (len(y.args) == 3 and (bias is None or bias.size not in (
                1, q.type.shape[-1]))) or y.args[0].type.ndim != 2 or y.args[1].type.ndim != 2:
            return None
        (xq, xs, xzp), (wq, ws) = x, w
        w2d = wq.data if trans_b else wq.data.T
        if bias is not None:
            bias = np.broadcast_to(bias.reshape(-1), (w2d.shape[0],))
        return self._kernel(q, "int8_dense", xq, wq, w2d, pack_int8(w2d), ws, xs, xzp,
                            bias, ys, yzp, relu, units=w2d.shape[0])
