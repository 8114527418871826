"""Scaled dot-product attention, the graph op ``attention`` (ONNX's ``Attention`` on
``(batch, heads, sequence, head size)`` tensors), legalized to :func:`te.ops.attention`.

    >>> get("attention").infer_type([TensorType((2, 8, 4, 16)), TensorType((2, 2, 6, 16)),
    ...                              TensorType((2, 2, 6, 32))], {"is_causal": 1})
    Tensor((2, 8, 4, 32), "float32")

Inputs: ``q`` (B, Hq, S, D), ``k`` (B, Hkv, T, D), ``v`` (B, Hkv, T, Dv); then, when
``has_mask=1``, the mask: bool (True attends) or of q's dtype (added to the scores), whose
leading axes broadcast to (B, Hq, S) and whose last axis covers the first keys (the keys
past its end are masked); then, optionally, the number of valid keys of each batch row
(int64, shape (B,)). With fewer key/value heads than query heads (grouped-query
attention), query head ``h`` reads key/value head ``h // (Hq // Hkv)``.

Every step is computed in q's dtype, rounded as ONNX's reference rounds it::

    s      = sqrt(scale), in q's dtype                 (scale defaults to 1 / sqrt(D))
    scores = (q * s) @ (k * s)^T
    scores = softcap * tanh(scores / softcap)          when softcap > 0
    biased = scores + bias                             (mask; causal, window, padding: -inf)
    p      = softmax(biased) in softmax_precision      (rows whose bias is all -inf: 0)
    y      = p @ v

The causal and sliding-window masks are aligned to the end of the keys: query ``i`` sits at
position ``i + offset``, with ``offset = past_length`` (the keys cached before this block)
or, given the valid-key counts ``n``, ``n[b] - S``. It attends key ``j`` when ``j <= i +
offset`` (causal), ``i + offset - j <= left_window_size`` and ``j - i - offset <=
right_window_size`` (a window size of -1 leaves that side open) and ``j < n[b]``.

``num_outputs=2`` adds the scores as a second output, (B, Hq, S, T), chosen by
``qk_matmul_output_mode``: 0 or 1 the (softcapped) scores, 2 the biased scores, 3 the
probabilities ``p``.
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError, OpDTypeError, OpShapeError
from ..te.ops.attention import attention as te_attention
from ..te.ops.attention import scale_root
from ._infer import FLOATS, broadcast_shapes, require_dtype, same_dtype
from .registry import OpKind, register, register_legalization
from .types import TensorType, TupleType

_ATTRS = {"scale": None, "is_causal": 0, "past_length": 0, "softcap": 0.0, "has_mask": 0,
          "softmax_precision": None, "left_window_size": -1, "right_window_size": -1,
          "num_outputs": 1, "qk_matmul_output_mode": 0}
#: the second output of each qk_matmul_output_mode, as te.ops.attention names it (ONNX's
#: reference gives the softcapped scores for modes 0 and 1)
_QK_OUTPUT = {0: "scores", 1: "scores", 2: "biased", 3: "probs"}


def _parts(types_or_values, has_mask: int):
    """(q, k, v, mask or None, valid-key counts or None) from the op's inputs."""
    q, k, v, *rest = types_or_values
    mask = rest.pop(0) if has_mask and rest else None
    return q, k, v, mask, (rest[0] if rest else None)


# --- shape and dtype inference ------------------------------------------------------------------
def _check_attrs(attrs) -> None:
    for name in ("left_window_size", "right_window_size"):
        if attrs[name] < -1:
            raise OpAttributeError(f"attention: {name}={attrs[name]}; give -1 (no bound on "
                                   "that side) or a number of keys >= 0")
    if attrs["past_length"] < 0:
        raise OpAttributeError(f"attention: past_length={attrs['past_length']} must be >= 0")
    if attrs["num_outputs"] not in (1, 2):
        raise OpAttributeError(f"attention: num_outputs={attrs['num_outputs']}; give 1 (y) or "
                               "2 (y and the scores chosen by qk_matmul_output_mode)")
    if attrs["qk_matmul_output_mode"] not in (0, 1, 2, 3):
        raise OpAttributeError(f"attention: qk_matmul_output_mode="
                               f"{attrs['qk_matmul_output_mode']} is not 0, 1, 2 or 3")
    if attrs.get("softmax_precision") not in (None,) + FLOATS:
        raise OpAttributeError(f"attention: softmax_precision={attrs['softmax_precision']!r};"
                               f" give one of {', '.join(FLOATS)}")


def _infer(types, attrs):
    _check_attrs(attrs)
    n_in = 3 + attrs["has_mask"]
    if len(types) not in (n_in, n_in + 1):
        raise OpShapeError(f"attention: {len(types)} inputs with has_mask={attrs['has_mask']};"
                           f" give q, k, v{', the mask' if attrs['has_mask'] else ''} and "
                           "optionally the valid-key counts")
    q, k, v, mask, counts = _parts(types, attrs["has_mask"])
    dtype = same_dtype("attention", (q, k, v))
    require_dtype("attention", q, FLOATS, "query")
    if not q.ndim == k.ndim == v.ndim == 4:
        raise OpShapeError(f"attention: q, k and v must be 4-D (batch, heads, sequence, head "
                           f"size); got {q.shape}, {k.shape} and {v.shape}")
    (b, hq, s, d), (_, hkv, t, _), dv = q.shape, k.shape, v.shape[3]
    if k.shape[0] != b or v.shape[0] != b or v.shape[1:3] != (hkv, t) or k.shape[3] != d:
        raise OpShapeError(f"attention: q {q.shape}, k {k.shape} and v {v.shape} disagree: they "
                           "need the same batch, k and v the same heads and sequence, q and k "
                           "the same head size")
    if hq % hkv:
        raise OpShapeError(f"attention: {hq} query heads do not group evenly onto {hkv} "
                           "key/value heads. Instead: give a multiple of the key/value heads "
                           "as query heads")
    if mask is not None:
        if mask.dtype not in ("bool", dtype) or not 1 <= mask.ndim <= 4:
            raise OpDTypeError(f"attention: the mask {mask} must be bool or {dtype} (q's dtype)"
                               " with 1 to 4 axes")
        if mask.shape[-1] > t:
            raise OpShapeError(f"attention: the mask covers {mask.shape[-1]} keys but there "
                               f"are only {t}. Instead: give a mask of at most {t} keys (the "
                               "keys after its end are masked)")
        broadcast_shapes("attention (the mask's leading axes)", mask.shape[:-1], (b, hq, s))
    if counts is not None:
        if counts.dtype != "int64" or counts.shape != (b,):
            raise OpShapeError(f"attention: the valid-key counts must be int64 of shape ({b},)"
                               f" (one per batch row); got {counts}")
        if attrs["past_length"]:
            raise OpAttributeError("attention: valid-key counts and past_length do not combine"
                                   " (ONNX allows nonpad_kv_seqlen only without past_key). "
                                   "Instead: count the cached keys in the valid-key counts")
    y = TensorType((b, hq, s, dv), dtype)
    if attrs["num_outputs"] == 1:
        return y
    return TupleType((y, TensorType((b, hq, s, t), dtype)))


# --- numpy reference ----------------------------------------------------------------------------
def _allowed(shape, counts, attrs):
    """Where query i may attend key j by the causal, window and padding rules: (B, 1, S, T)."""
    b, _, s, t = shape
    offset = (attrs["past_length"] if counts is None
              else counts.astype(np.int64).reshape(b, 1, 1, 1) - s)
    pos = np.arange(s).reshape(1, 1, s, 1) + offset
    j = np.arange(t)
    ok = np.ones((b, 1, s, t), bool)
    if attrs["is_causal"]:
        ok &= j <= pos
    if attrs["left_window_size"] >= 0:
        ok &= pos - j <= attrs["left_window_size"]
    if attrs["right_window_size"] >= 0:
        ok &= j - pos <= attrs["right_window_size"]
    if counts is not None:
        ok &= j < counts.reshape(b, 1, 1, 1)
    return ok


def _bias_ref(shape, dtype, mask, counts, attrs):
    neg_inf = np.array(-np.inf, dtype)
    bias = np.where(_allowed(shape, counts, attrs), np.array(0, dtype), neg_inf)
    if mask is not None:
        widths = [(0, 0)] * (mask.ndim - 1) + [(0, shape[3] - mask.shape[-1])]
        if mask.dtype == np.bool_:
            mask = np.where(np.pad(mask, widths), np.array(0, dtype), neg_inf)
        else:
            mask = np.pad(mask, widths, constant_values=-np.inf)
        bias = mask + bias
    return np.broadcast_to(bias, shape)


def _softmax_ref(x):
    top = x.max(axis=-1, keepdims=True)
    e = np.exp(x - np.where(np.isneginf(top), 0, top).astype(x.dtype))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total).astype(x.dtype)


def _attention_ref(*args, **attrs):
    attrs = dict(_ATTRS, **attrs)
    q, k, v, mask, counts = _parts(args, attrs["has_mask"])
    dtype, rep = q.dtype, q.shape[1] // k.shape[1]
    k, v = np.repeat(k, rep, axis=1), np.repeat(v, rep, axis=1)
    root = dtype.type(scale_root(attrs["scale"], q.shape[3], dtype.name))
    # ml_dtypes' bfloat16 matmul returns float32: round products back as the graph does
    scores = ((q * root) @ (np.swapaxes(k, 2, 3) * root)).astype(dtype)
    if attrs["softcap"] > 0:
        cap = dtype.type(attrs["softcap"])
        scores = np.tanh(scores / cap) * cap
    bias = _bias_ref(scores.shape, dtype, mask, counts, attrs)
    biased = scores + bias
    p = _softmax_ref(biased.astype(attrs["softmax_precision"] or dtype))
    p = np.where(np.isneginf(bias.max(axis=-1, keepdims=True)), np.zeros((), p.dtype), p)
    p = p.astype(dtype)
    y = (p @ v).astype(dtype)
    if attrs["num_outputs"] == 1:
        return y
    return y, {"scores": scores, "biased": biased, "probs": p}[
        _QK_OUTPUT[attrs["qk_matmul_output_mode"]]]


register("attention", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_infer, reference=_attention_ref,
         attrs=_ATTRS, num_inputs=(3, 5),
         doc="softmax((q s)(k s)^T + bias) v on (batch, heads, sequence, head size) tensors, "
             "with masks, causal and window limits, softcap and grouped-query heads (ONNX "
             "Attention)")


# --- legalization -------------------------------------------------------------------------------


@register_legalization("attention")
def _legalize(ins, attrs, out_type):
    q, k, v, mask, counts = _parts(ins, attrs["has_mask"])
    return te_attention(
        q, k, v, mask, counts, scale=attrs.get("scale"), is_causal=bool(attrs["is_causal"]),
        past_length=attrs["past_length"], softcap=attrs["softcap"],
        softmax_precision=attrs.get("softmax_precision"),
        left_window_size=attrs["left_window_size"], right_window_size=attrs["right_window_size"],
        qk_output=_QK_OUTPUT[attrs["qk_matmul_output_mode"]] if attrs["num_outputs"] == 2
        else None)
