"""The training forms of two ops whose inference form is something else:

- ``batch_norm_train(x, scale, bias, mean, var, epsilon=, momentum=)`` normalizes each
  channel (axis 1) with the mean and population variance of the *batch* (over every other
  axis), as ONNX's BatchNormalization with ``training_mode=1``. ``mean`` and ``var`` are the
  running statistics: the output does not read them; they are buffers whose next value a
  training step computes with ONNX's momentum, ``momentum * old + (1 - momentum) * batch``
  (:func:`mlcbook.graph.params.running_update`).
- ``dropout(x, counter, ratio=, seed=)`` zeroes each element with probability ``ratio`` and
  scales the others by ``1 / (1 - ratio)``. The mask is a hash of ``seed``, the 0-d integer
  ``counter`` (a buffer a training step increments) and the element's position, so it is
  the same in the interpreter and in compiled code, and new at every step.

    >>> y = Call("batch_norm_train", (x, scale, bias, mean, var), Attrs(momentum=0.9))
    >>> y = Call("dropout", (x, Constant(np.int64(0), "drop.counter")), Attrs(ratio=0.1))

Their gradients are rules of :mod:`mlcbook.train.grad_rules_train`.
"""

from __future__ import annotations

from ..errors import OpAttributeError, OpDTypeError, OpShapeError
from ..te import reduction as _r
from ..te.ops.util import axis_names, compute_dtype, compute_named, load, store
from ..tir import expr as E
from . import declare
from ._infer import FLOATS, require_dtype, same_dtype
from .registry import OpKind


def _check_bn(types, attrs):
    x = types[0]
    same_dtype("batch_norm_train", types)
    require_dtype("batch_norm_train", x, FLOATS)
    if x.ndim < 2 or 0 in x.shape:
        raise OpShapeError(f"batch_norm_train: data must be (N, C, ...) with no empty axis, "
                           f"got shape {x.shape}")
    for name, t in zip(("scale", "bias", "mean", "var"), types[1:]):
        if t.shape != (x.shape[1],):
            raise OpShapeError(f"batch_norm_train: {name} must have shape ({x.shape[1]},) "
                               f"(one per channel), got {t.shape}")
    if not 0.0 <= float(attrs["momentum"]) <= 1.0:
        raise OpAttributeError(f"batch_norm_train: momentum={attrs['momentum']} is not in "
                               "[0, 1]; ONNX's running mean is momentum * old + "
                               "(1 - momentum) * batch mean")


def _reduce_axes(x):
    """Reduction axes over every axis of ``x`` but the channel axis 1, and the index of ``x``
    at channel ``c`` they read."""
    rs = [_r.reduce_axis(s, name=f"k{d}") for d, s in enumerate(x.shape) if d != 1]
    return rs, lambda c: (rs[0], c) + tuple(rs[1:])


def channel_stats(x, name: str):
    """Stages ``<name>_mean`` and ``<name>_var`` (shape (C,), compute dtype): the batch mean
    and population variance of each channel of ``x`` (two passes, for accuracy)."""
    dt = compute_dtype(x.dtype)
    inv_n = E.const(x.shape[1] / _size(x.shape), dt)
    r1, at1 = _reduce_axes(x)
    total = compute_named((x.shape[1],), ["c"],
                          lambda c: _r.sum(load(x, at1(c)), axis=r1), f"{name}_sum")
    mean = compute_named((x.shape[1],), ["c"], lambda c: total[c] * inv_n, f"{name}_mean")
    r2, at2 = _reduce_axes(x)

    def sq_dev(c):
        d = load(x, at2(c)) - mean[c]
        return _r.sum(d * d, axis=r2)

    sq = compute_named((x.shape[1],), ["c"], sq_dev, f"{name}_sqsum")
    var = compute_named((x.shape[1],), ["c"], lambda c: sq[c] * inv_n, f"{name}_var")
    return mean, var


def _size(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _bn_train(x, scale, bias, mean, var, epsilon, momentum, name):
    # mean and var (the running statistics) are not read: training normalizes with the batch's
    bmean, bvar = channel_stats(x, name)
    eps = E.const(epsilon, compute_dtype(x.dtype))

    def body(*idx):
        c = (idx[1],)
        inv = E.const(1.0, bvar.dtype) / E.sqrt(bvar[c] + eps)
        return store((load(x, idx) - bmean[c]) * inv * load(scale, c) + load(bias, c),
                     x.dtype)
    return compute_named(x.shape, axis_names(x.ndim), body, name)


declare.op("batch_norm_train", _bn_train, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           attrs={"epsilon": 1e-5, "momentum": 0.9}, num_inputs=(5, 5), check=_check_bn,
           doc="BatchNormalization in training mode: each channel (axis 1) normalized with "
               "the batch's mean and population variance; mean and var are running "
               "statistics, updated by the training step")


# --- dropout --------------------------------------------------------------------------------
_M1, _M2, _GOLDEN = 0x7FEB352D, 0x846CA68B, 0x9E3779B9


def _mix(h):
    """A 32-bit integer hash (xor-shift-multiply): every output bit depends on every input
    bit. ``h // 2**k`` is ``h >> k`` for an unsigned ``h``."""
    u = "uint32"
    h = E.bitwise_xor(h, h // E.const(1 << 16, u))
    h = h * E.const(_M1, u)
    h = E.bitwise_xor(h, h // E.const(1 << 15, u))
    h = h * E.const(_M2, u)
    return E.bitwise_xor(h, h // E.const(1 << 16, u))


def _check_dropout(types, attrs):
    x, counter = types
    require_dtype("dropout", x, FLOATS)
    if counter.shape != () or counter.dtype not in ("int64", "int32"):
        raise OpDTypeError(f"dropout: the counter must be a 0-d int64 or int32 tensor, got "
                           f"{counter}")
    if not 0.0 <= float(attrs["ratio"]) < 1.0:
        raise OpAttributeError(f"dropout: ratio={attrs['ratio']} is not in [0, 1); it is the "
                               "probability of zeroing an element")


def keep_threshold(ratio: float) -> int:
    """An element is kept when its 32-bit hash is at least this."""
    return min(int(round(float(ratio) * 2.0 ** 32)), 2 ** 32 - 1)


def _dropout(x, counter, ratio, seed, name):
    u = "uint32"
    dt = compute_dtype(x.dtype)
    strides = [_size(x.shape[d + 1:]) for d in range(x.ndim)]
    # the step's stream: counter and seed mixed once per call
    # (a compiled graph may hold a 0-d tensor as shape (1,))
    at = tuple(E.const(0) for _ in counter.shape)
    key = _mix(E.cast(u, load(counter, at)) * E.const(_GOLDEN, u)
               + E.const(int(seed) % 2 ** 32, u))
    threshold = E.const(keep_threshold(ratio), u)
    scale = E.const(1.0 / (1.0 - float(ratio)), dt)

    def body(*idx):
        flat = E.const(0, u)
        for i, s in zip(idx, strides):
            flat = flat + E.cast(u, i) * E.const(s, u)
        keep = _mix(flat + key) >= threshold
        return store(E.select(keep, load(x, idx) * scale, E.const(0.0, dt)), x.dtype)
    return compute_named(x.shape, axis_names(x.ndim), body, name)


declare.op("dropout", _dropout, kind=OpKind.BROADCAST, attrs={"ratio": 0.5, "seed": 0},
           num_inputs=(2, 2), check=_check_dropout,
           doc="Dropout in training: each element zeroed with probability ratio (a hash of "
               "seed, the 0-d counter and its position), the others scaled by 1/(1-ratio)")

__all__ = ["channel_stats", "keep_threshold"]
