"""Rotary position embedding (RoPE): each pair of features of a head is rotated by an angle
that depends on the token's position, given as its cosine and sine.

    >>> y = rotary_embedding(x, cos, sin)       # x (B, H, S, D); cos, sin (B, S, R / 2)

The pairs are ``(d, d + R/2)`` for ``d < R/2`` (the halves of the first ``R`` features),
or ``(2e, 2e + 1)`` with ``interleaved``; the features from ``R`` on pass through. A pair
``(a, b)`` at angle ``t`` becomes ``(a cos t - b sin t, a sin t + b cos t)``.
"""

from __future__ import annotations

from ...errors import TEError, TEShapeError
from ...tir import expr as _e
from ..tensor import Tensor
from .util import check_tensor, clamp, compute_named, load, store


def _rounded(v: _e.PrimExpr, dtype: str) -> _e.PrimExpr:
    # each product is rounded to the storage dtype before the sum, as ONNX's reference does
    return _e.cast(v.dtype, _e.cast(dtype, v))


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False,
                     rotary_dim: int = 0, name: str = "rotary_embedding") -> Tensor:
    """``x`` (B, H, S, D) with its first ``rotary_dim`` features (0: all D) rotated pairwise
    by the angles whose cosines and sines ``cos`` and ``sin`` (B, S, rotary_dim / 2) give."""
    for arg, t in (("x", x), ("cos", cos), ("sin", sin)):
        check_tensor(t, "rotary_embedding", arg)
    if not _e.is_float(x.dtype) or not x.dtype == cos.dtype == sin.dtype:
        raise TEError(f"rotary_embedding: x, cos and sin are {x.dtype}, {cos.dtype}, "
                      f"{sin.dtype}; they must share one float dtype")
    b, _, s, d = x.shape if x.ndim == 4 else (None,) * 4
    r = rotary_dim or d
    if x.ndim != 4 or r % 2 or r > d or cos.shape != (b, s, r // 2) or sin.shape != cos.shape:
        raise TEShapeError(
            f"rotary_embedding: x {x.shape} must be (B, H, S, D) and cos {cos.shape}, sin "
            f"{sin.shape} (B, S, rotary_dim / 2) with an even rotary_dim <= D "
            f"(rotary_dim={rotary_dim})")
    half = r // 2

    def body(bi, h, si, di):
        # index arithmetic that stays in bounds for the pass-through features too
        if interleaved:
            angle, first = (di // 2) % half, di % 2 == 0
            partner = clamp(di // 2 * 2 + 1 - di % 2, d)
        else:
            angle, first, partner = di % half, di < half, (di + half) % r
        c, sn = load(cos, (bi, si, angle)), load(sin, (bi, si, angle))
        own, other = load(x, (bi, h, si, di)), load(x, (bi, h, si, partner))
        mine, theirs = _rounded(c * own, x.dtype), _rounded(sn * other, x.dtype)
        rotated = _e.select(first, mine - theirs, theirs + mine)
        return store(_e.select(di < r, rotated, own), x.dtype)

    return compute_named(x.shape, ["b", "h", "s", "d"], body, name)
