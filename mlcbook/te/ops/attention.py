"""The transformer operators. Scaled dot-product attention on ``(batch, heads, sequence,
head size)`` tensors, made of the library's operators (matmul, tanh, softmax, max) and two
stages of its own: the bias of the scores and the zeroing of the rows that may attend no
key.

    >>> y = attention(q, k, v, is_causal=True)                 # q (B, Hq, S, D), k (B, Hkv, T, D)
    >>> y, p = attention(q, k, v, mask=m, qk_output="probs")   # also the probabilities

Every step is computed in q's dtype and rounded as ONNX's reference rounds it (a float16
attention rounds the scaled q and k, the scores, the biased scores and each softmax stage
to float16); ``softmax_precision`` names a wider dtype for the softmax.

Rotary position embedding (RoPE): each pair of features of a head is rotated by an angle
that depends on the token's position, given as its cosine and sine.

    >>> y = rotary_embedding(x, cos, sin)       # x (B, H, S, D); cos, sin (B, S, R / 2)

The pairs are ``(d, d + R/2)`` for ``d < R/2`` (the halves of the first ``R`` features),
or ``(2e, 2e + 1)`` with ``interleaved``; the features from ``R`` on pass through. A pair
``(a, b)`` at angle ``t`` becomes ``(a cos t - b sin t, a sin t + b cos t)``.
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import TEAttributeError, TEDTypeError, TEShapeError
from ...tir import expr as _e
from ..tensor import Tensor
from .elementwise import add, cast, div, mul, tanh
from .linalg import matmul
from .normalization import softmax
from .reduce import max as reduce_max
from .transform import reshape
from .util import (broadcast_indices, broadcast_shapes, check_tensor, clamp, compute_dtype,
                   compute_named, load, store)

#: what the second output of ``attention(..., qk_output=...)`` is
QK_OUTPUTS = ("scores", "biased", "probs")


def in_dtype(value: float, dtype: str) -> float:
    """``value`` rounded to ``dtype``, as a Python float: a constant the kernel multiplies by
    has the precision of the tensor it multiplies (numpy's rule for a Python scalar)."""
    return float(np.dtype(dtype).type(value))


def scale_root(scale: float | None, head_size: int, dtype: str) -> float:
    """``sqrt(scale)`` in ``dtype`` (scale defaults to ``1 / sqrt(head_size)``): q and k are
    each multiplied by it, which keeps float16 scores in range."""
    return in_dtype(math.sqrt(1 / math.sqrt(head_size) if scale is None else scale), dtype)


def grouped_matmul(a: Tensor, b: Tensor, transpose_b: bool = False,
                   name: str = "grouped_matmul") -> Tensor:
    """``a @ b`` (``a @ b^T`` with ``transpose_b``) per head of (B, H, rows, cols) tensors,
    where each group of ``Ha // Hb`` consecutive heads of ``a`` shares one head of ``b``
    (grouped-query attention): a group's rows are stacked into one product."""
    (n, ha, m, kk), hb = a.shape, b.shape[1]
    if ha == hb:
        return matmul(a, b, transpose_b=transpose_b, name=name)
    stacked = reshape(a, (n, hb, ha // hb * m, kk), name=f"{name}_grouped")
    out = matmul(stacked, b, transpose_b=transpose_b, name=f"{name}_stacked")
    return reshape(out, (n, ha, m, out.shape[-1]), name=name)


def _bias(shape, dtype: str, mask, valid_keys, is_causal, past_length, left, right, name):
    """The additive bias of the scores, (B, Hq, S, T) in ``dtype``: the mask (padded with
    -inf past its last key) plus -inf wherever the causal, window or padding rule forbids."""
    b, hq, s, t = shape
    wide = compute_dtype(dtype)

    def body(bi, h, i, j):
        zero, neg_inf = _e.const(0.0, wide), _e.neg_infinity(wide)
        offset = (_e.const(past_length) if valid_keys is None
                  else _e.cast("int32", valid_keys[bi]) - _e.const(s))
        pos = i + offset
        rules = [j <= pos] if is_causal else []
        rules += [pos - j <= _e.const(left)] if left >= 0 else []
        rules += [j - pos <= _e.const(right)] if right >= 0 else []
        rules += [j < _e.cast("int32", valid_keys[bi])] if valid_keys is not None else []
        value = zero
        if mask is not None:
            width = mask.shape[-1]
            lead = broadcast_indices(mask.shape[:-1], (bi, h, i), (b, hq, s))
            m = load(mask, lead + ((j if width == t else clamp(j, width)),))
            inside = [j < _e.const(width)] if width < t else []
            if mask.dtype == "bool":
                rules += inside + [m]
            else:
                value = _e.select(inside[0], m, neg_inf) if inside else m
        allowed = None
        for rule in rules:
            allowed = rule if allowed is None else _e.logical_and(allowed, rule)
        total = value if allowed is None else value + _e.select(allowed, zero, neg_inf)
        return store(total, dtype)

    return compute_named(shape, ["b", "h", "i", "j"], body, f"{name}_bias")


def _zero_masked_rows(p: Tensor, bias: Tensor, name: str) -> Tensor:
    """``p`` with the rows whose bias is -inf everywhere set to 0 (no key may be attended)."""
    top = reduce_max(bias, axis=-1, keepdims=True, name=f"{name}_bias_max")

    def body(b, h, i, j):
        value, row_max = load(p, (b, h, i, j)), load(top, (b, h, i, _e.const(0)))
        empty = row_max == _e.neg_infinity(row_max.dtype)
        return store(_e.select(empty, _e.const(0.0, value.dtype), value), p.dtype)

    return compute_named(p.shape, ["b", "h", "i", "j"], body, f"{name}_probs")


def _check(q: Tensor, k: Tensor, v: Tensor, mask, valid_keys, qk_output) -> None:
    for arg, x in (("q", q), ("k", k), ("v", v)):
        check_tensor(x, "attention", arg)
        if x.ndim != 4:
            raise TEShapeError(f"attention: {arg} has shape {x.shape}; q, k and v "
                               "are (batch, heads, sequence, head size)")
    if not _e.is_float(q.dtype) or not q.dtype == k.dtype == v.dtype:
        raise TEDTypeError(f"attention: q, k and v are {q.dtype}, {k.dtype}, {v.dtype}; they "
                           "must share one float dtype")
    (b, hq, s, _), (_, hkv, t, _) = q.shape, k.shape
    if k.shape[0] != b or k.shape[:3] != v.shape[:3] or q.shape[3] != k.shape[3]:
        raise TEShapeError(f"attention: q {q.shape}, k {k.shape} and v {v.shape} do not fit: "
                           "they need the same batch, k and v the same heads and keys, q and k "
                           "the same head size")
    if hq % hkv:
        raise TEShapeError(f"attention: {hq} query heads do not group evenly onto {hkv} "
                           "key/value heads (q's heads must be a multiple of k's). Instead: "
                           "give a multiple of the key/value heads as query heads")
    if mask is not None:
        if mask.shape[-1] > t:
            raise TEShapeError(f"attention: the mask covers {mask.shape[-1]} "
                               f"keys but there are only {t}. Instead: give a mask of at most "
                               f"{t} keys (the keys after its end are masked)")
        broadcast_shapes("attention (the mask's leading axes)", mask.shape[:-1], (b, hq, s))
    if valid_keys is not None and (valid_keys.shape != (b,) or valid_keys.dtype != "int64"):
        raise TEShapeError(f"attention: the valid-key counts are {valid_keys.shape} "
                           f"{valid_keys.dtype}; give int64 of shape ({b},), one per batch row")
    if qk_output not in (None,) + QK_OUTPUTS:
        raise TEAttributeError(f"attention: qk_output={qk_output!r}; give None or one of "
                               f"{QK_OUTPUTS}")


def attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
              valid_keys: Tensor | None = None, scale: float | None = None,
              is_causal: bool = False, past_length: int = 0, softcap: float = 0.0,
              softmax_precision: str | None = None, left_window_size: int = -1,
              right_window_size: int = -1, qk_output: str | None = None,
              name: str = "attention"):
    """``softmax((q s)(k s)^T + bias) @ v`` with ``s = sqrt(scale)``, per head.

    ``mask``: bool (True attends) or of q's dtype (added), its leading axes broadcasting to
    (B, Hq, S), its last axis covering the first keys (later keys are masked).
    ``valid_keys``: int64 (B,), the keys each batch row really has. Query ``i`` sits at
    position ``i + offset`` (``offset = past_length``, or ``valid_keys[b] - S``); it may
    attend key ``j <= i + offset`` when ``is_causal``, and keys within ``left_window_size``
    before / ``right_window_size`` after its position (-1: no limit). ``softcap > 0``
    squashes the scores into ``(-softcap, softcap)`` with tanh. A row that may attend no key
    gives zeros. ``qk_output`` (``"scores"``, ``"biased"`` or ``"probs"``) returns that
    intermediate too, as ``(y, it)``.
    """
    _check(q, k, v, mask, valid_keys, qk_output)
    dtype = q.dtype
    root = scale_root(scale, q.shape[3], dtype)
    scores = grouped_matmul(mul(q, root, name=f"{name}_q"), mul(k, root, name=f"{name}_k"),
                            transpose_b=True, name=f"{name}_scores")
    if softcap > 0:
        cap = in_dtype(softcap, dtype)
        scores = mul(tanh(div(scores, cap, name=f"{name}_capped"), name=f"{name}_tanh"), cap,
                     name=f"{name}_softcap")
    bias = _bias(scores.shape, dtype, mask, valid_keys, is_causal, past_length,
                 left_window_size, right_window_size, name)
    biased = add(scores, bias, name=f"{name}_biased")
    precision = softmax_precision or dtype
    wide = biased if precision == dtype else cast(biased, precision, name=f"{name}_wide")
    p = _zero_masked_rows(softmax(wide, name=f"{name}_softmax"), bias, name)
    if precision != dtype:
        p = cast(p, dtype, name=f"{name}_p")
    y = grouped_matmul(p, v, name=name)
    if qk_output is None:
        return y
    return y, {"scores": scores, "biased": biased, "probs": p}[qk_output]


def _rounded(v: _e.PrimExpr, dtype: str) -> _e.PrimExpr:
    # each product is rounded to the storage dtype before the sum, as ONNX's reference does
    return _e.cast(v.dtype, _e.cast(dtype, v))


def rotary_half(shape, rotary_dim: int) -> int:
    """Half the features ``rotary_dim`` (0: all of them) rotates of an x of ``shape``
    (B, H, S, D), checked: rotary_embedding's check of x and its rotary dimension, which the
    graph op shares."""
    if len(shape) != 4:
        raise TEShapeError(f"rotary_embedding: x has shape {tuple(shape)}; it must be (B, H, S, "
                           "D)")
    d = shape[3]
    r = rotary_dim or d
    if r % 2 or not 0 <= r <= d:
        raise TEAttributeError(f"rotary_embedding: the rotary dimension {rotary_dim} (0: the "
                               f"head size {d}) must be even, at most the head size {d}")
    return r // 2


def rotary_embedding(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False,
                     rotary_dim: int = 0, name: str = "rotary_embedding") -> Tensor:
    """``x`` (B, H, S, D) with its first ``rotary_dim`` features (0: all D) rotated pairwise
    by the angles whose cosines and sines ``cos`` and ``sin`` (B, S, rotary_dim / 2) give."""
    for arg, t in (("x", x), ("cos", cos), ("sin", sin)):
        check_tensor(t, "rotary_embedding", arg)
    if not _e.is_float(x.dtype) or not x.dtype == cos.dtype == sin.dtype:
        raise TEDTypeError(f"rotary_embedding: x, cos and sin are {x.dtype}, {cos.dtype}, "
                           f"{sin.dtype}; they must share one float dtype")
    half = rotary_half(x.shape, rotary_dim)
    (b, _, s, d), r = x.shape, 2 * half
    if cos.shape != (b, s, r // 2) or sin.shape != cos.shape:
        raise TEShapeError(f"rotary_embedding: cos {cos.shape} and sin {sin.shape} must be "
                           f"{(b, s, r // 2)}: (B, S, rotary_dim / 2)")

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
