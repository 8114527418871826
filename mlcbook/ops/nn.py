"""Neural-network ops: ``conv``, ``max_pool``, ``avg_pool``, ``global_avg_pool``,
``batch_norm`` (inference), ``layer_norm``, ``softmax``, ``log_softmax``.

The pools and softmax are declared once from their te computes (:mod:`.declare`); conv
and the normalizations keep their inference and numpy reference written out.

Layouts are ONNX's: ``(N, C, *spatial)`` data, ``(M, C/group, *kernel)`` weights. ``pads``
lists the padding before every spatial axis, then after every one:
``(top, left, bottom, right)`` in 2-D.

    >>> get("conv").infer_type([TensorType((1, 3, 32, 32)), TensorType((8, 3, 3, 3))],
    ...                        {"pads": (1, 1, 1, 1)})
    Tensor((1, 8, 32, 32), "float32")
"""

from __future__ import annotations

import itertools

import numpy as np

from ..errors import OpAttributeError, OpShapeError
from ..te import ops as T
from ..te.ops.nn import window_out_size as te_window_out_size
from . import declare
from ._infer import FLOATS, ints, norm_axis, require_dtype, same_dtype
from .registry import REQUIRED, OpKind, register
from .types import TensorType, TupleType


def _spatial_attrs(op, attrs, nsp, kernel):
    strides = ints(op, "strides", attrs.get("strides") or (1,) * nsp, nsp)
    dilations = ints(op, "dilations", attrs.get("dilations") or (1,) * nsp, nsp)
    pads = ints(op, "pads", attrs.get("pads") or (0,) * (2 * nsp), 2 * nsp)
    kernel = ints(op, "kernel_shape", kernel, nsp)
    if min(strides + dilations + kernel, default=1) < 1 or min(pads, default=0) < 0:
        raise OpAttributeError(
            f"{op}: strides, dilations and kernel sizes must be >= 1 and pads >= 0; got "
            f"strides={strides}, dilations={dilations}, kernel={kernel}, pads={pads}")
    return strides, dilations, pads, kernel


def window_out_size(op, size, pad_lo, pad_hi, k, stride, dilation, ceil_mode=False) -> int:
    """Number of window positions along one axis (ONNX's rule, including ceil_mode; the
    rule is te.ops', shared by both layers)."""
    return te_window_out_size(op, size, pad_lo, pad_hi, k, stride, dilation, bool(ceil_mode),
                              error=OpShapeError)


def auto_pads(mode: str, in_spatial, kernel, strides, dilations) -> tuple[int, ...]:
    """Explicit ``pads`` for ONNX's ``auto_pad`` = SAME_UPPER, SAME_LOWER or VALID."""
    n = len(in_spatial)
    if mode == "VALID":
        return (0,) * (2 * n)
    lo, hi = [], []
    for size, k, s, d in zip(in_spatial, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + d * (k - 1) + 1 - size)
        small, big = total // 2, total - total // 2
        lo.append(big if mode == "SAME_LOWER" else small)
        hi.append(small if mode == "SAME_LOWER" else big)
    return tuple(lo + hi)


# --- conv --------------------------------------------------------------------------------------
def _conv_infer(types, attrs):
    x, w = types[0], types[1]
    dtype = same_dtype("conv", types)
    require_dtype("conv", x, FLOATS)
    if x.ndim < 3 or w.ndim != x.ndim:
        raise OpShapeError(
            f"conv: data must be (N, C, *spatial) and weight (M, C/group, *kernel) of the same "
            f"rank; got data {x.shape} and weight {w.shape}")
    nsp = x.ndim - 2
    group = attrs["group"]
    strides, dilations, pads, kernel = _spatial_attrs("conv", attrs, nsp, w.shape[2:])
    if attrs.get("kernel_shape") and tuple(attrs["kernel_shape"]) != w.shape[2:]:
        raise OpShapeError(f"conv: kernel_shape={tuple(attrs['kernel_shape'])} disagrees "
                           f"with the weight's spatial shape {w.shape[2:]}")
    if x.shape[1] % group or w.shape[0] % group or x.shape[1] // group != w.shape[1]:
        raise OpShapeError(
            f"conv: data has {x.shape[1]} channels and group={group}, so the weight "
            f"(shape {w.shape}) must have {x.shape[1] // max(group, 1)} input channels and a "
            f"number of filters divisible by {group}")
    if len(types) == 3 and types[2].shape != (w.shape[0],):
        raise OpShapeError(f"conv: bias must have shape ({w.shape[0]},), got {types[2].shape}")
    out = tuple(window_out_size("conv", x.shape[2 + i], pads[i], pads[nsp + i], kernel[i],
                                strides[i], dilations[i]) for i in range(nsp))
    return TensorType((x.shape[0], w.shape[0]) + out, dtype)


def _windows(xp, kernel, strides, dilations, out):
    """Yield (kernel offset, strided view of xp under that offset) for every kernel offset."""
    for off in itertools.product(*(range(k) for k in kernel)):
        sl = tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                   for o, d, s, n in zip(off, dilations, strides, out))
        yield off, xp[(Ellipsis,) + sl]


def _conv_ref(x, w, b=None, strides=None, pads=None, dilations=None, group=1, kernel_shape=None):
    nsp = x.ndim - 2
    strides, dilations, pads, kernel = _spatial_attrs(
        "conv", {"strides": strides, "pads": pads, "dilations": dilations}, nsp, w.shape[2:])
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[i], pads[nsp + i])
                                                          for i in range(nsp)])
    out = [window_out_size("conv", x.shape[2 + i], pads[i], pads[nsp + i], kernel[i], strides[i],
                           dilations[i]) for i in range(nsp)]
    y = np.zeros((x.shape[0], w.shape[0], *out))
    cg, mg = x.shape[1] // group, w.shape[0] // group
    w64 = w.astype(np.float64)
    for g in range(group):
        xg = xp[:, g * cg:(g + 1) * cg]
        for off, patch in _windows(xg, kernel, strides, dilations, out):
            wk = w64[(slice(g * mg, (g + 1) * mg), slice(None)) + off]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, wk)
    if b is not None:
        y += b.astype(np.float64).reshape((1, -1) + (1,) * nsp)
    return y.astype(x.dtype)


register("conv", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_conv_infer, reference=_conv_ref,
         attrs={"strides": None, "pads": None, "dilations": None, "group": 1,
                "kernel_shape": None},
         num_inputs=(2, 3), doc="N-d convolution (cross-correlation) with groups and bias")


# --- pooling -----------------------------------------------------------------------------------
def _pool_shape(op):
    """The output shape of the pool ``op`` (the check of its declaration)."""
    def shape_of(types, attrs):
        x = types[0]
        require_dtype(op, x, FLOATS + (("int8", "uint8") if op == "max_pool" else ()))
        if x.ndim < 3:
            raise OpShapeError(f"{op}: data must be (N, C, *spatial), got shape {x.shape}")
        nsp = x.ndim - 2
        strides, dilations, pads, kernel = _spatial_attrs(op, attrs, nsp, attrs["kernel_shape"])
        for i in range(nsp):
            if pads[i] >= kernel[i] * dilations[i] or pads[nsp + i] >= kernel[i] * dilations[i]:
                raise OpAttributeError(
                    f"{op}: pads={pads} are as large as the window {kernel}; a window "
                    "would see only padding. Use smaller pads")
        if op == "max_pool" and attrs.get("storage_order", 0) not in (0, 1):
            raise OpAttributeError(f"max_pool_indices: storage_order={attrs['storage_order']} "
                                   "is not 0 (row-major) or 1 (column-major)")
        return x.shape[:2] + tuple(
            window_out_size(op, x.shape[2 + i], pads[i], pads[nsp + i], kernel[i], strides[i],
                            dilations[i], bool(attrs["ceil_mode"])) for i in range(nsp))
    return shape_of


def _pool(name: str, op: str, attrs, onnx: str | None, doc: str):
    shape_of = _pool_shape(op)
    declare.op(name, getattr(T, name), kind=OpKind.OUT_ELEMWISE_FUSABLE, attrs=attrs,
               check=shape_of, empty=declare.empty_output(shape_of), onnx=onnx, doc=doc)


_POOL_ATTRS = {"kernel_shape": REQUIRED, "strides": None, "pads": None, "dilations": None,
               "ceil_mode": 0}
_pool("max_pool", "max_pool", _POOL_ATTRS, "MaxPool",
      "max over each window; padding never wins. A NaN in a window makes the result NaN "
      "(numpy's np.max; onnxruntime skips NaN instead)")
_pool("max_pool_indices", "max_pool", dict(_POOL_ATTRS, storage_order=0), None,
      "where max_pool's max of each window is (ONNX MaxPool's Indices): the int64 offset in "
      "the whole tensor, its spatial part row-major (storage_order 0) or column-major (1); "
      "the first of equal maxima")
# (AveragePool's dilations came in opset 19, after the exporter's 17: its export is written out)
_pool("avg_pool", "avg_pool", dict(_POOL_ATTRS, count_include_pad=0), None,
      "mean over each window; count_include_pad=1 counts padded zeros")


def _gap_check(types, attrs):
    x = types[0]
    require_dtype("global_avg_pool", x, FLOATS)
    if x.ndim < 3:
        raise OpShapeError(f"global_avg_pool: data must be (N, C, *spatial), got {x.shape}")


def _gap_empty(types, attrs, arrays):
    x = types[0]
    if 0 not in x.shape:
        return None
    return np.full(x.shape[:2] + (1,) * (x.ndim - 2), np.nan, x.dtype)   # a mean of nothing


declare.op("global_avg_pool", T.global_avg_pool, kind=OpKind.REDUCTION, check=_gap_check,
           empty=_gap_empty, onnx="GlobalAveragePool",
           doc="mean over all spatial axes, keeping them as size 1")


# --- normalization -----------------------------------------------------------------------------
def _bn_infer(types, attrs):
    x = types[0]
    same_dtype("batch_norm", types)
    require_dtype("batch_norm", x, FLOATS)
    if x.ndim < 2:
        raise OpShapeError(f"batch_norm: data must be (N, C, ...), got shape {x.shape}")
    for name, t in zip(("scale", "bias", "mean", "var"), types[1:]):
        if t.shape != (x.shape[1],):
            raise OpShapeError(
                f"batch_norm: {name} must have shape ({x.shape[1]},) (one per channel), got {t.shape}")
    return x


def _bn_ref(x, scale, bias, mean, var, epsilon=1e-5):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    f = [a.astype(np.float64).reshape(shape) for a in (scale, bias, mean, var)]
    y = (x.astype(np.float64) - f[2]) / np.sqrt(f[3] + epsilon) * f[0] + f[1]
    return y.astype(x.dtype)


register("batch_norm", kind=OpKind.BROADCAST, infer=_bn_infer, reference=_bn_ref,
         attrs={"epsilon": 1e-5}, num_inputs=(5, 5),
         doc="(x - mean) / sqrt(var + epsilon) * scale + bias, per channel (axis 1)")


def _ln_infer(types, attrs):
    x = types[0]
    same_dtype("layer_norm", types)
    require_dtype("layer_norm", x, FLOATS)
    axis = norm_axis("layer_norm", attrs["axis"], x.ndim)
    norm_shape = x.shape[axis:]
    for name, t in zip(("scale", "bias"), types[1:]):
        tail = norm_shape[len(norm_shape) - t.ndim:] if t.ndim <= len(norm_shape) else None
        if tail is None or any(a not in (1, b) for a, b in zip(t.shape, tail)):
            raise OpShapeError(
                f"layer_norm: {name} of shape {t.shape} does not broadcast to the normalized "
                f"shape {norm_shape} (axis={attrs['axis']})")
    if attrs["num_outputs"] == 1:
        return x
    if attrs["num_outputs"] != 3:
        raise OpAttributeError("layer_norm: num_outputs must be 1 (Y) or 3 (Y, mean, inv_std_dev)")
    stat = TensorType(x.shape[:axis] + (1,) * (x.ndim - axis), "float32"
                      if x.dtype != "float64" else "float64")
    return TupleType((x, stat, stat))


def _ln_ref(x, scale, bias=None, axis=-1, epsilon=1e-5, num_outputs=1):
    axis = axis % x.ndim
    red = tuple(range(axis, x.ndim))
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=red, keepdims=True)
    inv = 1 / np.sqrt(((x64 - mean) ** 2).mean(axis=red, keepdims=True) + epsilon)
    y = (x64 - mean) * inv * scale.astype(np.float64)
    if bias is not None:
        y = y + bias.astype(np.float64)
    if num_outputs == 1:
        return y.astype(x.dtype)
    stat = np.float64 if x.dtype == np.float64 else np.float32
    return y.astype(x.dtype), mean.astype(stat), inv.astype(stat)


register("layer_norm", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_ln_infer, reference=_ln_ref,
         attrs={"axis": -1, "epsilon": 1e-5, "num_outputs": 1}, num_inputs=(2, 3),
         doc="normalize over the axes from `axis` on, then scale and shift; num_outputs=3 "
             "also returns the mean and 1/std")


def _softmax_check(op):
    def check(types, attrs):
        require_dtype(op, types[0], FLOATS)
        norm_axis(op, attrs["axis"], types[0].ndim)
    return check


# float16 stays float16 at every stage of te.ops.softmax (ONNX's rounding)
declare.op("softmax", T.softmax, kind=OpKind.OUT_ELEMWISE_FUSABLE, attrs={"axis": -1},
           check=_softmax_check("softmax"), onnx="Softmax",
           doc="exp(x) / sum(exp(x)) along `axis`")
declare.op("log_softmax", T.log_softmax, kind=OpKind.OUT_ELEMWISE_FUSABLE, attrs={"axis": -1},
           check=_softmax_check("log_softmax"), onnx="LogSoftmax",
           doc="log(softmax(x)) along `axis`")


def conv_transpose_out(op, in_sizes, kernel, strides, dilations, pads, output_padding):
    """The output spatial sizes of a transposed convolution."""
    nsp = len(in_sizes)
    return tuple(strides[d] * (in_sizes[d] - 1) + output_padding[d] + (kernel[d] - 1) *
                 dilations[d] + 1 - pads[d] - pads[nsp + d] for d in range(nsp))


def _conv_t_infer(types, attrs):
    x, w = types[0], types[1]
    dtype = same_dtype("conv_transpose", types)
    require_dtype("conv_transpose", x, FLOATS)
    if x.ndim < 3 or w.ndim != x.ndim:
        raise OpShapeError(f"conv_transpose: data must be (N, C, *spatial) and weight "
                           f"(C, M/group, *kernel) of the same rank; got {x.shape} and {w.shape}")
    nsp, group = x.ndim - 2, attrs["group"]
    strides, dilations, pads, kernel = _spatial_attrs("conv_transpose", attrs, nsp, w.shape[2:])
    opad = ints("conv_transpose", "output_padding", attrs.get("output_padding") or (0,) * nsp,
                nsp)
    if x.shape[1] % group or w.shape[0] != x.shape[1]:
        raise OpShapeError(f"conv_transpose: data has {x.shape[1]} channels and group={group}; "
                           f"the weight {w.shape} must have as many rows, divisible by group")
    m = w.shape[1] * group
    if len(types) == 3 and types[2].shape != (m,):
        raise OpShapeError(f"conv_transpose: bias must have shape ({m},), got {types[2].shape}")
    out = conv_transpose_out("conv_transpose", x.shape[2:], kernel, strides, dilations, pads,
                             opad)
    if min(out) < 1:
        raise OpShapeError(f"conv_transpose: pads={pads} leave an empty output {out}")
    return TensorType((x.shape[0], m) + out, dtype)


def _conv_t_ref(x, w, b=None, strides=None, pads=None, dilations=None, group=1,
                output_padding=None):
    nsp = x.ndim - 2
    strides, dilations = strides or (1,) * nsp, dilations or (1,) * nsp
    pads, opad = pads or (0,) * (2 * nsp), output_padding or (0,) * nsp
    kernel, (n, c), mg = w.shape[2:], x.shape[:2], w.shape[1]
    full = tuple(strides[d] * (x.shape[2 + d] - 1) + opad[d] + (kernel[d] - 1) * dilations[d] + 1
                 for d in range(nsp))
    y = np.zeros((n, mg * group) + full, np.float64)
    cg = c // group
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        ws = w[g * cg:(g + 1) * cg].astype(np.float64)
        for off in itertools.product(*(range(k) for k in kernel)):
            # every input position i lands at i*s + off*d
            contrib = np.einsum("nc...,cm->nm...", xs, ws[(slice(None), slice(None)) + off])
            sl = tuple(slice(o * d, o * d + s * (size - 1) + 1, s) for o, d, s, size in
                       zip(off, dilations, strides, x.shape[2:]))
            y[(slice(None), slice(g * mg, (g + 1) * mg)) + sl] += contrib
    crop = tuple(slice(pads[d], full[d] - pads[nsp + d]) for d in range(nsp))
    y = y[(slice(None), slice(None)) + crop]
    if b is not None:
        y = y + b.reshape((-1,) + (1,) * nsp)
    return y.astype(x.dtype)


register("conv_transpose", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_conv_t_infer,
         reference=_conv_t_ref, attrs={"strides": None, "pads": None, "dilations": None,
                                       "group": 1, "output_padding": None},
         num_inputs=(2, 3), doc="transposed convolution (ONNX ConvTranspose): data (N, C, ...), "
                                "weight (C, M/group, *kernel)")
