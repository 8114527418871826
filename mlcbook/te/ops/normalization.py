"""Normalizing operators: softmax, log_softmax, layer_norm, (inference) batch_norm and lrn
(local response normalization across channels, AlexNet's LRN).

    >>> s = softmax(logits, axis=-1)
    >>> y = layer_norm(x, gamma, beta, axis=-1, epsilon=1e-5)
    >>> y = lrn(x, size=5, alpha=1e-4, beta=0.75, bias=1.0)     # x (N, C, H, W)

Statistics are computed in the compute dtype (float32 for float16 data) and keep the
reduced dimensions with size 1. A float16 softmax (and log_softmax) rounds every stage to
float16 (``x - max``, ``exp``, the sum and the result), as ONNX's reference computes it: an
ONNX model casts to float32 before a Softmax when it wants the wider precision (Attention's
``softmax_precision`` does exactly that).
"""

from __future__ import annotations

from ...errors import TEError, TEShapeError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import (axis_names, broadcast_indices, check_tensor, clamp, compute_dtype,
                    compute_named, load, normalize_axis, prod, store)
from .nn import same_dtype


def _float_input(x: Tensor, op: str) -> None:
    check_tensor(x, op, "x")
    if not _e.is_float(x.dtype):
        raise TEError(f"{op}: {x.name!r} is {x.dtype}; {op} needs a float tensor")


def _softmax_stages(x: Tensor, axis: int, op: str, name: str):
    """The max, exp and sum stages along ``axis`` shared by softmax and log_softmax."""
    _float_input(x, op)
    axis = normalize_axis(axis, x.ndim, op)
    stat_shape = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    names = axis_names(x.ndim)

    def along(idx, r):
        return idx[:axis] + (r,) + idx[axis + 1:]

    def stat(idx):
        return idx[:axis] + (_e.const(0),) + idx[axis + 1:]

    k1 = _r.reduce_axis(x.shape[axis], name="k")
    mx = compute_named(stat_shape, names, lambda *i: _r.max(load(x, along(i, k1)), axis=k1),
                       f"{name}_max")
    ex = compute_named(x.shape, names, lambda *i: store(
        _e.exp(_rounded(load(x, i) - mx[stat(i)], x.dtype)), x.dtype), f"{name}_exp")
    k2 = _r.reduce_axis(x.shape[axis], name="k")
    sm = compute_named(stat_shape, names, lambda *i: _r.sum(load(ex, along(i, k2)), axis=k2),
                       f"{name}_sum")
    return names, stat, mx, ex, sm


def _rounded(v: _e.PrimExpr, dtype: str) -> _e.PrimExpr:
    """``v`` rounded to the storage dtype ``dtype`` and read back (a no-op for float32)."""
    return _e.cast(v.dtype, _e.cast(dtype, v))


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """``exp(x - max) / sum(exp(x - max))`` along ``axis``, in four stages:
    ``<name>_max``, ``<name>_exp``, ``<name>_sum`` and the division ``<name>``."""
    names, stat, _, ex, sm = _softmax_stages(x, axis, "softmax", name)
    return compute_named(x.shape, names, lambda *i: store(
        load(ex, i) / _rounded(sm[stat(i)], x.dtype), x.dtype), name)


def log_softmax(x: Tensor, axis: int = -1, name: str = "log_softmax") -> Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``; stages as :func:`softmax`."""
    names, stat, mx, _, sm = _softmax_stages(x, axis, "log_softmax", name)
    return compute_named(x.shape, names, lambda *i: store(
        _rounded(load(x, i) - mx[stat(i)], x.dtype)
        - _rounded(_e.log(_rounded(sm[stat(i)], x.dtype)), x.dtype), x.dtype), name)


def layer_norm(x: Tensor, gamma: Tensor | None = None, beta: Tensor | None = None,
               axis: int = -1, epsilon: float = 1e-5, return_stats: bool = False,
               name: str = "layer_norm"):
    """``(x - mean) / sqrt(var + epsilon) * gamma + beta``, mean and (biased) variance over
    the dimensions ``axis, axis+1, ..., last`` (ONNX LayerNormalization's ``axis``).
    ``gamma`` and ``beta`` (optional) broadcast to those dimensions. Stages: ``<name>_sum``
    (of the deviations from the first normalized element, so equal values give exactly 0),
    ``<name>_mean``, ``<name>_sqsum`` (squared deviations from the mean: two passes, for
    accuracy), ``<name>_inv_std`` and ``<name>``. With ``return_stats`` the result is
    ``(y, mean, inv_std)``, the statistics in the compute dtype with the normalized
    dimensions kept as size 1."""
    op = "layer_norm"
    _float_input(x, op)
    axis = normalize_axis(axis, x.ndim, op)
    inner = x.shape[axis:]
    for arg, t in (("gamma", gamma), ("beta", beta)):
        if t is None:
            continue
        check_tensor(t, op, arg)
        same_dtype(op, x, t)
        tail = inner[len(inner) - t.ndim:]
        if t.ndim > len(inner) or any(a not in (1, b) for a, b in zip(t.shape, tail)):
            raise TEShapeError(f"{op}: the {arg} has shape {t.shape} but must broadcast "
                               f"to {inner}, the normalized dimensions of the data {x.shape}")
    stat_shape = x.shape[:axis] + (1,) * len(inner)
    dt = compute_dtype(x.dtype)
    inv_n, eps = _e.const(1.0 / prod(inner), dt), _e.const(epsilon, dt)
    names = axis_names(x.ndim)

    def stat(i):
        return tuple(i[:axis]) + (_e.const(0),) * len(inner)

    def reduce_axes():
        return [_r.reduce_axis(s, name=f"k{d}") for d, s in enumerate(inner)]

    # Sum the deviations from each row's first element, not the values: a row of equal
    # values then has a mean of exactly that value and normalizes to exactly 0, as the exact
    # formula says (a float sum times 1/n would be off by an ulp, and 1/sqrt(eps) magnifies it).
    first = (_e.const(0),) * len(inner)
    r1 = reduce_axes()
    total = compute_named(stat_shape, names, lambda *i: _r.sum(
        load(x, tuple(i[:axis]) + tuple(r1)) - load(x, tuple(i[:axis]) + first), axis=r1),
        f"{name}_sum")
    mean = compute_named(stat_shape, names,
                         lambda *i: load(x, tuple(i[:axis]) + first) + total[i] * inv_n,
                         f"{name}_mean")
    r2 = reduce_axes()

    def sq_dev(*i):
        d = load(x, tuple(i[:axis]) + tuple(r2)) - mean[i]
        return _r.sum(d * d, axis=r2)

    sq = compute_named(stat_shape, names, sq_dev, f"{name}_sqsum")
    inv = compute_named(stat_shape, names,
                        lambda *i: _e.const(1.0, dt) / _e.sqrt(sq[i] * inv_n + eps),
                        f"{name}_inv_std")

    def normalize(*i):
        s = stat(i)
        y = (load(x, i) - mean[s]) * inv[s]
        if gamma is not None:
            y = y * load(gamma, broadcast_indices(gamma.shape, i))
        if beta is not None:
            y = y + load(beta, broadcast_indices(beta.shape, i))
        return store(y, x.dtype)

    y = compute_named(x.shape, names, normalize, name)
    if not return_stats:
        return y
    return (y, *(compute_named(stat_shape, names, lambda *i, t=t: t[i], f"{t.name}_out")
                 for t in (mean, inv)))


def batch_norm(x: Tensor, scale: Tensor, bias: Tensor, mean: Tensor, var: Tensor,
               epsilon: float = 1e-5, name: str = "batch_norm") -> Tensor:
    """Inference batch normalization along the channel axis 1 of ``(N, C, ...)`` data:
    ``(x - mean) / sqrt(var + epsilon) * scale + bias``, the four statistics of shape (C,)."""
    op = "batch_norm"
    _float_input(x, op)
    if x.ndim < 2:
        raise TEShapeError(f"{op}: the data has shape {x.shape}; it must be (N, C, ...)")
    for arg, t in (("scale", scale), ("bias", bias), ("mean", mean), ("var", var)):
        check_tensor(t, op, arg)
        same_dtype(op, x, t)
        if t.shape != (x.shape[1],):
            raise TEShapeError(f"{op}: the {arg} has shape {t.shape} but must be "
                               f"({x.shape[1]},), one value per channel")
    eps = _e.const(epsilon, compute_dtype(x.dtype))

    def body(*idx):
        c = (idx[1],)
        s, b, m, v = (load(t, c) for t in (scale, bias, mean, var))
        return store((load(x, idx) - m) / _e.sqrt(v + eps) * s + b, x.dtype)

    return compute_named(x.shape, axis_names(x.ndim), body, name)


def lrn(x: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0,
        name: str = "lrn") -> Tensor:
    """``x / (bias + alpha / size * sqsum) ** beta`` where ``sqsum[n, c, ...]`` sums ``x**2``
    over the channels ``c - (size-1)//2 .. c + ceil((size-1)/2)`` that exist. Stages:
    ``<name>_sqsum`` and ``<name>``."""
    _float_input(x, "lrn")
    if x.ndim < 3:
        raise TEShapeError(f"lrn: the data has shape {x.shape}; it must be (N, C, *spatial)")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise TEError(f"lrn: size={size!r} must be a positive int")
    channels, before = x.shape[1], (size - 1) // 2
    dt = compute_dtype(x.dtype)
    names = axis_names(x.ndim)
    k = _r.reduce_axis(size, name="k")

    def sqsum(*i):
        c = i[1] + k - before if before else i[1] + k
        inside = (c >= 0) & (c < channels)
        v = load(x, (i[0], clamp(c, channels)) + tuple(i[2:]))
        return _r.sum(v * v, axis=k, where=inside)

    sq = compute_named(x.shape, names, sqsum, f"{name}_sqsum")
    scale, b, p = _e.const(alpha / size, dt), _e.const(bias, dt), _e.const(beta, dt)
    return compute_named(x.shape, names, lambda *i: store(
        load(x, i) / _e.pow(b + scale * sq[i], p), x.dtype), name)
