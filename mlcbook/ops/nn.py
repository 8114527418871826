"""Neural-network ops: ``conv``, ``max_pool``, ``avg_pool``, ``global_avg_pool``,
``batch_norm`` (inference), ``layer_norm``, ``softmax``, ``log_softmax``.

Each is declared once from its te compute (:mod:`.declare`); ``conv_transpose`` too.

Layouts are ONNX's: ``(N, C, *spatial)`` data, ``(M, C/group, *kernel)`` weights. ``pads``
lists the padding before every spatial axis, then after every one:
``(top, left, bottom, right)`` in 2-D.

    >>> get("conv").infer_type([TensorType((1, 3, 32, 32)), TensorType((8, 3, 3, 3))],
    ...                        {"pads": (1, 1, 1, 1)})
    Tensor((1, 8, 32, 32), "float32")
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..errors import OpAttributeError
from ..te import ops as T
from ..te.ops.nn import window_attrs as te_window_attrs
from ..te.ops.nn import window_out_size as te_window_out_size
from ..te.ops.util import need_rank
from . import declare
from ._infer import FLOATS, norm_axis, require_dtype, same_dtype
from .registry import REQUIRED, OpKind


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


_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


def check_auto_pad(attrs) -> list[str]:
    """The problem of an ONNX conv or pool node's ``auto_pad``, if it has one."""
    a = attrs.get("auto_pad", "NOTSET")
    return [] if a in _AUTO_PADS else [f"auto_pad={a!r} is not one of {_AUTO_PADS}"]


def onnx_window(attrs, x_shape: tuple[int, ...], kernel) -> dict:
    """The strides, dilations and pads of an ONNX conv or pool node's ``attrs`` over data of
    ``x_shape``: ONNX's defaults filled in, ``auto_pad`` made explicit pads.

        >>> onnx_window({"auto_pad": "SAME_UPPER"}, (1, 1, 5, 5), (2, 2))["pads"]
        (0, 0, 1, 1)
    """
    nsp = len(x_shape) - 2
    strides = tuple(attrs.get("strides") or (1,) * nsp)
    dilations = tuple(attrs.get("dilations") or (1,) * nsp)
    mode = attrs.get("auto_pad", "NOTSET")
    if mode == "NOTSET":
        pads = tuple(attrs.get("pads") or (0,) * (2 * nsp))
    else:
        pads = auto_pads(mode, x_shape[2:], kernel, strides, dilations)
    return {"strides": strides, "dilations": dilations, "pads": pads}


def _onnx_window_attrs(attrs, types, used):
    # a Conv node may leave its kernel_shape to the weight's shape (a pool without one is
    # refused by the op, which names it)
    kernel = attrs.get("kernel_shape") or (types[1].shape[2:] if len(types) > 1 else None)
    if kernel is None:
        return {}
    return dict(onnx_window(attrs, types[0].shape, tuple(kernel)), kernel_shape=tuple(kernel))


#: a conv's or pool's ONNX attributes: its own, and auto_pad made pads
_ONNX_WINDOW = declare.OnnxAttrs(onnx_only=("auto_pad",), derive=_onnx_window_attrs,
                                 check=check_auto_pad)


# --- conv --------------------------------------------------------------------------------------
def _conv_check(op: str):
    """The check of a convolution's declaration: the dtypes (the compute checks the ranks,
    the shapes and the attributes)."""
    def check(types, attrs):
        same_dtype(op, types)
        require_dtype(op, types[0], FLOATS)
    return check


declare.op("conv", T.conv, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           attrs={"strides": None, "pads": None, "dilations": None, "group": 1,
                  "kernel_shape": None},
           num_inputs=(2, 3), check=_conv_check("conv"),
           empty=declare.empty_batch("conv"), onnx="Conv", onnx_attrs=_ONNX_WINDOW,
           doc="N-d convolution (cross-correlation) with groups and bias")


# --- pooling -----------------------------------------------------------------------------------
def _pool_shape(op):
    """The output shape of the pool ``op`` (the check of its declaration)."""
    def shape_of(types, attrs):
        x = types[0]
        require_dtype(op, x, FLOATS + (("int8", "uint8") if op == "max_pool" else ()))
        need_rank(op, x.shape, 3, "the data", "(N, C, *spatial)")
        nsp = x.ndim - 2
        kernel, strides, pads, dilations = te_window_attrs(
            op, nsp, attrs["kernel_shape"], attrs.get("strides"), attrs.get("pads"),
            attrs.get("dilations"))
        for i in range(nsp):
            if pads[i] >= kernel[i] * dilations[i] or pads[nsp + i] >= kernel[i] * dilations[i]:
                raise OpAttributeError(
                    f"{op}: pads={pads} are as large as the window {kernel}; a window "
                    "would see only padding. Use smaller pads")
        if op == "max_pool" and attrs.get("storage_order", 0) not in (0, 1):
            raise OpAttributeError(f"max_pool_indices: storage_order={attrs['storage_order']} "
                                   "is not 0 (row-major) or 1 (column-major)")
        return x.shape[:2] + tuple(
            te_window_out_size(op, x.shape[2 + i], pads[i], pads[nsp + i], kernel[i],
                               strides[i], dilations[i], bool(attrs["ceil_mode"]))
            for i in range(nsp))
    return shape_of


def _pool(name: str, op: str, attrs, onnx: str, doc: str, onnx_attrs=_ONNX_WINDOW):
    shape_of = _pool_shape(op)
    declare.op(name, getattr(T, name), kind=OpKind.OUT_ELEMWISE_FUSABLE, attrs=attrs,
               check=shape_of, empty=declare.empty_output(shape_of), onnx=onnx,
               onnx_attrs=onnx_attrs, doc=doc)


_POOL_ATTRS = {"kernel_shape": REQUIRED, "strides": None, "pads": None, "dilations": None,
               "ceil_mode": 0}
_pool("max_pool", "max_pool", _POOL_ATTRS, "MaxPool",
      "max over each window; padding never wins. A NaN in a window makes the result NaN "
      "(numpy's np.max; onnxruntime skips NaN instead)")
# it exports as a MaxPool whose output 0 is left unused (a model's max_pool beside it is
# a node of its own); a MaxPool node imports as both (mlcbook.frontend.onnx_ops)
_pool("max_pool_indices", "max_pool", dict(_POOL_ATTRS, storage_order=0), "MaxPool",
      "where max_pool's max of each window is (ONNX MaxPool's Indices): the int64 offset in "
      "the whole tensor, its spatial part row-major (storage_order 0) or column-major (1); "
      "the first of equal maxima",
      onnx_attrs=replace(_ONNX_WINDOW, places=lambda attrs, n: (None, (1,))))
_pool("avg_pool", "avg_pool", dict(_POOL_ATTRS, count_include_pad=0), "AveragePool",
      "mean over each window; count_include_pad=1 counts padded zeros")


def _gap_check(types, attrs):
    x = types[0]
    require_dtype("global_avg_pool", x, FLOATS)
    # the compute checks it too; an empty input never reaches the compute
    need_rank("global_avg_pool", x.shape, 3, "the data", "(N, C, *spatial)")


def _gap_empty(types, attrs, arrays):
    x = types[0]
    if 0 not in x.shape:
        return None
    return np.full(x.shape[:2] + (1,) * (x.ndim - 2), np.nan, x.dtype)   # a mean of nothing


declare.op("global_avg_pool", T.global_avg_pool, kind=OpKind.REDUCTION, check=_gap_check,
           empty=_gap_empty, onnx="GlobalAveragePool",
           doc="mean over all spatial axes, keeping them as size 1")


# --- normalization -----------------------------------------------------------------------------
def _check_bn(attrs):
    # (chapter 5's exercise 4 repairs a model that uses training_mode=1: supporting it here
    # would take that exercise away; a training import has a converter of its own)
    if attrs.get("training_mode", 0):
        return ["training_mode=1 is not supported (models are imported for inference)"]
    return []


declare.op("batch_norm", T.batch_norm, kind=OpKind.BROADCAST, attrs={"epsilon": 1e-5},
           num_inputs=(5, 5), check=declare.same_dtype_in("batch_norm", FLOATS),
           onnx="BatchNormalization",
           onnx_attrs=declare.OnnxAttrs(onnx_only=("momentum", "training_mode"),
                                        check=_check_bn),
           empty=declare.empty_output(lambda types, attrs: types[0].shape),
           doc="(x - mean) / sqrt(var + epsilon) * scale + bias, per channel (axis 1)")


def _layer_norm_check(types, attrs):
    same_dtype("layer_norm", types)
    require_dtype("layer_norm", types[0], FLOATS)
    norm_axis("layer_norm", attrs["axis"], types[0].ndim)
    if attrs["num_outputs"] not in (1, 3):
        raise OpAttributeError("layer_norm: num_outputs must be 1 (Y) or 3 (Y, mean, "
                               "inv_std_dev)")


def _layer_norm(x, *scale_bias, axis, epsilon, num_outputs, name):
    return T.layer_norm(x, *scale_bias, axis=axis, epsilon=epsilon,
                        return_stats=num_outputs == 3, name=name)


# ONNX's LayerNormalization has no num_outputs: the outputs a node uses say it (its
# stash_type, the statistics' precision, is not read: they are float32, float64 for float64)
declare.op("layer_norm", _layer_norm, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           attrs={"axis": -1, "epsilon": 1e-5, "num_outputs": 1}, num_inputs=(2, 3),
           check=_layer_norm_check, onnx="LayerNormalization",
           onnx_attrs=declare.OnnxAttrs(
               onnx_only=("stash_type",), local={"num_outputs": None}, outputs=3,
               derive=lambda attrs, types, used: {"num_outputs": 3 if any(used[1:]) else 1}),
           doc="normalize over the axes from `axis` on, then scale and shift; num_outputs=3 "
               "also returns the mean and 1/std (float32, or float64 for float64 data)")


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


declare.op("conv_transpose", T.conv_transpose, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           attrs={"strides": None, "pads": None, "dilations": None, "group": 1,
                  "output_padding": None},
           num_inputs=(2, 3), check=_conv_check("conv_transpose"),
           empty=declare.empty_batch("conv_transpose"), onnx="ConvTranspose",
           doc="transposed convolution (ONNX ConvTranspose): data (N, C, ...), weight "
               "(C, M/group, *kernel)")
