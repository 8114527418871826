"""ONNX's integer ops run on the register-tiled int8 kernels.

``matmul_integer``, ``qlinear_matmul``, ``conv_integer`` and ``qlinear_conv`` (imported from
ONNX's MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv) become the kernels that
QDQ models compile to, ``int8_dense`` and ``int8_conv2d`` (:mod:`.qdq`), with the same
integer results. The kernels multiply uint8 activations by int8 weights packed offline, so
:func:`lower_integer_ops` folds each op's constants into them:

- the weight zero point (one value, or one per output column or channel) is subtracted from
  the constant weights, ``w' = w - w_zp``, which must then lie in [-128, 127] (uint8
  weights with zero point 128 do; uint8 weights with zero point 0 may not);
- int8 activations are moved to uint8, ``x + 128``, with their zero point moved alike, so
  ``x - x_zp`` is unchanged;
- the activation zero point becomes the int32 bias ``-x_zp * sum_k w'`` (plus
  QLinearConv's bias);
- QLinearMatMul/QLinearConv requantize with ``a_scale * b_scale / y_scale`` computed in
  float32 as ONNX's reference does; MatMulInteger/ConvInteger output the int32 sums
  (``dtype="int32"``);
- ``narrow=1`` (the ``vpmaddubsw`` kernel) only when
  :func:`~mlcbook.tir.x86_intrinsics.pairs_fit_int16` proves it from the packed ``w'``.

A matmul whose first operand has more than 2 dimensions is reshaped to 2-D around the
kernel. MatMulInteger's first zero point may also be one per row, or known only at run time
(DynamicQuantizeLinear's output): the kernel then sums ``a * w'`` and ``a_zp * colsum(w')``
is subtracted after it. An op that does not fit keeps its generic integer kernel, which
computes the same more slowly: weights that are not constants, or not 2-D (a batched
matmul) / 4-D with ``group == 1`` (a 2-D conv); ``w - w_zp`` outside int8; a conv's or a
QLinear op's activation zero point, scales or (QLinearConv) bias that are not constants.

    >>> func = lower_integer_ops(func)   # runs at opt_level >= 1, before constants are folded
"""

from __future__ import annotations

import numpy as np

from ...ops.int8_kernels import pack_conv_int8, pack_int8
from ...ops.types import Attrs
from ...tir.x86_intrinsics import pairs_fit_int16
from ..expr import Call, Constant, Expr, Function
from ..functor import ExprMutator

def lower_integer_ops(func: Function) -> Function:
    """``func`` with every ONNX integer matmul/conv whose weights, zero points and scales are
    constants (and fit, see the module docstring) replaced by ``int8_dense`` /
    ``int8_conv2d``."""
    return _LowerIntegerOps().visit_function(func)


def _part(name: str, what: str) -> str:
    """The name of a node made for the call ``name`` (unnamed if it is)."""
    return f"{name}_{what}" if name else ""


def _value(e: Expr) -> np.ndarray | None:
    return e.data if isinstance(e, Constant) else None


def _one(e: Expr):
    """The value of a one-element constant, else None."""
    v = _value(e)
    return v.reshape(-1)[0] if v is not None and v.size == 1 else None


def _shifted_weights(w: Expr, wzp: Expr, axis: int) -> np.ndarray | None:
    """``w - w_zp`` as int8 (zero point per tensor or per index of ``axis``), or None when
    either is not a constant or the difference leaves int8."""
    wv, zv = _value(w), _value(wzp)
    if wv is None or zv is None:
        return None
    shape = [1] * wv.ndim
    if zv.size != 1:
        shape[axis] = -1
    d = wv.astype(np.int32) - zv.astype(np.int32).reshape(shape if zv.size != 1 else ())
    if d.min(initial=0) < -128 or d.max(initial=0) > 127:
        return None
    return d.astype(np.int8)


def _multiplier(a_scale: Expr, b_scale: Expr, y_scale: Expr, n: int) -> np.ndarray | None:
    """``a_scale * b_scale / y_scale`` per output column, in float32, or None."""
    sa, sy, sb = _one(a_scale), _one(y_scale), _value(b_scale)
    if sa is None or sy is None or sb is None or sb.size not in (1, n):
        return None
    f = np.float32
    return np.broadcast_to((f(sa) * sb.reshape(-1).astype(f)) / f(sy), (n,)).astype(f)


class _LowerIntegerOps(ExprMutator):
    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op in ("matmul_integer", "qlinear_matmul"):
            return self._dense(new) or new
        if new.op in ("conv_integer", "qlinear_conv"):
            return self._conv(new) or new
        return new

    def _dense(self, call: Call) -> Expr | None:
        if call.op == "matmul_integer":
            a, b, azp, bzp = call.args
            scales = None
        else:
            a, as_, azp, b, bs, bzp, ys, yzp = call.args
            scales = (as_, bs, ys, yzp)
        if b.type.ndim != 2 or a.type.ndim < 2:
            return None
        w = _shifted_weights(b, bzp, 1)
        if w is None:
            return None
        w2d = np.ascontiguousarray(w.T)                     # (N, K)
        n, k = w2d.shape
        x = a if a.type.ndim == 2 else Call("reshape", (a,), Attrs(shape=(-1, k)),
                                            _part(call.name, "rows"))
        late = scales is None and _one(azp) is None
        name = _part(call.name, "sums") if late or a.type.ndim > 2 else call.name
        # a zero point known only at run time (DynamicQuantizeLinear's) or one per row is
        # subtracted after the kernel, times each column's weight sum
        out = self._kernel(call, "int8_dense", x, Constant(np.zeros((), a.type.dtype)) if late
                           else azp, w2d, pack_int8(w2d), None, scales, name, units=n)
        if out is None:
            return None
        if a.type.ndim > 2:
            out = Call("reshape", (out,), Attrs(shape=call.type.shape),
                       call.name if not late else _part(call.name, "shaped"))
        return _minus_zero_point(out, azp, w2d, call.name) if late else out

    def _conv(self, call: Call) -> Expr | None:
        if call.op == "conv_integer":
            x, w, xzp, wzp = call.args
            scales, bias = None, None
        else:
            x, xs, xzp, w, ws, wzp, ys, yzp = call.args[:8]
            scales = (xs, ws, ys, yzp)
            bias = call.args[8] if len(call.args) == 9 else None
            if bias is not None and _value(bias) is None:
                return None
        at = call.attrs
        if x.type.ndim != 4 or at["group"] != 1:
            return None
        wq = _shifted_weights(w, wzp, 0)
        if wq is None:
            return None
        return self._kernel(call, "int8_conv2d", x, xzp, wq.reshape(wq.shape[0], -1),
                            pack_conv_int8(wq), None if bias is None else _value(bias), scales,
                            call.name, channels=wq.shape[0], kernel_shape=tuple(wq.shape[2:]),
                            strides=tuple(at["strides"]), pads=tuple(at["pads"]),
                            dilations=tuple(at["dilations"]))

    def _kernel(self, call: Call, op: str, x: Expr, xzp: Expr, w2d: np.ndarray, packed,
                bias, scales, name: str, **attrs) -> Expr | None:
        """The kernel call, or None when a zero point or scale does not fit."""
        zp = _one(xzp)
        if zp is None:
            return None
        zp = int(zp)
        n = w2d.shape[0]
        if scales is None:
            mult, dtype, y_zp = np.ones(n, np.float32), "int32", 0
        else:
            mult, y_zp = _multiplier(*scales[:3], n), _one(scales[3])
            if mult is None or y_zp is None:
                return None
            dtype, y_zp = scales[3].type.dtype, int(y_zp)
        if x.type.dtype == "int8":
            x, zp = _as_uint8(x, _part(name, "u8")), zp + 128
        total = -zp * w2d.astype(np.int64).sum(axis=1)
        if bias is not None:
            total = total + bias.astype(np.int64).reshape(-1)
        args = tuple(Constant(v, _part(name, what)) for v, what in (
            (packed, "packed"), (total.astype(np.int32), "bias"), (mult, "multiplier")))
        # vpmaddubsw's int16 pair sums are exact for these weights: proven, never assumed
        narrow = int(pairs_fit_int16(packed))
        return Call(op, (x, *args), Attrs(dict(attrs, x_zp=zp, y_zp=y_zp, relu=0, dtype=dtype,
                                         narrow=narrow)), name)


def _minus_zero_point(sums: Expr, azp: Expr, w2d: np.ndarray, name: str) -> Expr:
    """``sums - azp * colsum(w)``: the int32 products of ``a - azp`` from those of ``a``
    (``azp`` one value, or one per row of ``a``; ``w2d`` (N, K) the weights)."""
    zp = Call("cast", (azp,), Attrs(dtype="int32"), _part(name, "zp32"))
    if azp.type.size != 1:
        zp = Call("reshape", (zp,), Attrs(shape=(-1, 1)), _part(name, "zp_rows"))
    elif azp.type.ndim:
        zp = Call("reshape", (zp,), Attrs(shape=()), _part(name, "zp_one"))
    colsum = Constant(w2d.astype(np.int32).sum(axis=1, dtype=np.int32), _part(name, "colsum"))
    shift = Call("mul", (zp, colsum), Attrs(), _part(name, "shift"))
    return Call("sub", (sums, shift), Attrs(), name)


def _as_uint8(x: Expr, name: str) -> Expr:
    """int8 ``x`` as uint8 ``x + 128``, the same distances apart."""
    wide = Call("cast", (x,), Attrs(dtype="int16"), _part(name, "wide"))
    moved = Call("add", (wide, Constant(np.int16(128))), Attrs(), _part(name, "moved"))
    return Call("cast", (moved,), Attrs(dtype="uint8"), name)


__all__ = ["lower_integer_ops"]
