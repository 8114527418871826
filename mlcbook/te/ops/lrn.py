"""Local response normalization across channels (AlexNet's LRN, ONNX's ``LRN``).

    >>> y = lrn(x, size=5, alpha=1e-4, beta=0.75, bias=1.0)     # x (N, C, H, W)
"""

from __future__ import annotations

from ...errors import TEError, TEShapeError
from ...tir import expr as _e
from .. import reduction as _r
from ..tensor import Tensor
from .util import axis_names, check_tensor, clamp, compute_dtype, compute_named, load, store


def lrn(x: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, bias: float = 1.0,
        name: str = "lrn") -> Tensor:
    """``x / (bias + alpha / size * sqsum) ** beta`` where ``sqsum[n, c, ...]`` sums ``x**2``
    over the channels ``c - (size-1)//2 .. c + ceil((size-1)/2)`` that exist. Stages:
    ``<name>_sqsum`` and ``<name>``."""
    check_tensor(x, "lrn", "x")
    if not _e.is_float(x.dtype):
        raise TEError(f"lrn: {x.name!r} is {x.dtype}; lrn needs a float tensor")
    if x.ndim < 3:
        raise TEShapeError(f"lrn: {x.name!r} has shape {x.shape}; it must be (N, C, *spatial)")
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
