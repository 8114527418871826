"""The transformer ops, declared once from their te computes: scaled dot-product attention,
``attention`` (ONNX's ``Attention`` on ``(batch, heads, sequence, head size)`` tensors,
:func:`te.ops.attention`), and rotary position embedding, ``rotary_embedding`` (ONNX's
``RotaryEmbedding`` on such tensors with the cosines and sines already looked up per token,
:func:`te.ops.rotary_embedding`; it exports as ONNX's 4-D form without positions, which it
is).

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

from ..errors import OpAttributeError, OpDTypeError, OpShapeError
from ..te.ops.attention import attention as te_attention
from ..te.ops.attention import rotary_embedding as te_rotary_embedding
from ..te.ops.attention import rotary_half
from . import declare
from ._infer import FLOATS, require_dtype
from .registry import OpKind

_ATTRS = {"scale": None, "is_causal": 0, "past_length": 0, "softcap": 0.0, "has_mask": 0,
          "softmax_precision": None, "left_window_size": -1, "right_window_size": -1,
          "num_outputs": 1, "qk_matmul_output_mode": 0}
#: the second output of each qk_matmul_output_mode, as te.ops.attention names it (ONNX's
#: reference gives the softcapped scores for modes 0 and 1)
_QK_OUTPUT = {0: "scores", 1: "scores", 2: "biased", 3: "probs"}


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


def _attention_check(types, attrs):
    """The attributes, the number of inputs, the mask's dtype and a low-bit query (the compute
    checks the shapes and that q, k and v share one float dtype)."""
    _check_attrs(attrs)
    n_in = 3 + attrs["has_mask"]
    if len(types) not in (n_in, n_in + 1):
        raise OpShapeError(f"attention: {len(types)} inputs with has_mask={attrs['has_mask']};"
                           f" give q, k, v{', the mask' if attrs['has_mask'] else ''} and "
                           "optionally the valid-key counts")
    dtype = types[0].dtype
    require_dtype("attention", types[0], FLOATS, "query")
    if attrs["has_mask"]:
        mask = types[3]
        if mask.dtype not in ("bool", dtype) or not 1 <= mask.ndim <= 4:
            raise OpDTypeError(f"attention: the mask {mask} must be bool or {dtype} (q's dtype)"
                               " with 1 to 4 axes")
    if len(types) > n_in and attrs["past_length"]:
        raise OpAttributeError("attention: valid-key counts and past_length do not combine"
                               " (ONNX allows nonpad_kv_seqlen only without past_key). "
                               "Instead: count the cached keys in the valid-key counts")


def _attention(q, k, v, *rest, has_mask, scale=None, is_causal, past_length, softcap,
               softmax_precision=None, left_window_size, right_window_size, num_outputs,
               qk_matmul_output_mode, name):
    mask = rest[0] if has_mask else None
    counts = rest[has_mask] if len(rest) > has_mask else None
    return te_attention(
        q, k, v, mask, counts, scale=scale, is_causal=bool(is_causal), past_length=past_length,
        softcap=softcap, softmax_precision=softmax_precision, left_window_size=left_window_size,
        right_window_size=right_window_size, name=name,
        qk_output=_QK_OUTPUT[qk_matmul_output_mode] if num_outputs == 2 else None)


def _onnx_places(attrs, n):
    # ONNX's mask is its input 3, the valid-key counts (nonpad_kv_seqlen) input 6 and the
    # scores (qk_matmul_output) output 3, after the cache's inputs and outputs
    ins = (0, 1, 2, 3)[:3 + attrs["has_mask"]]
    return ins + (6,) * (n - len(ins)), (0, 3)[:attrs["num_outputs"]]


# (the import of ONNX's 3-D form and of the key/value cache is written out:
# mlcbook.frontend.onnx_attention)
_ONNX = declare.OnnxAttrs(
    dtypes=("softmax_precision",), places=_onnx_places,
    # the window sizes came with opset 25, the valid-key counts with 24
    export=lambda attrs, types, opset: {a: None for a in ("left_window_size",
                                                          "right_window_size") if attrs[a] < 0},
    since=lambda attrs, types: 24 if len(types) > 3 + attrs["has_mask"] else 23,
    local={"has_mask": None, "num_outputs": None,
           "past_length": "keys cached before this block, which ONNX's Attention takes as "
                          "inputs of their own (past_key, past_value). Instead: export the "
                          "attention of the whole keys (past_length=0)"})

declare.op("attention", _attention, kind=OpKind.OUT_ELEMWISE_FUSABLE, attrs=_ATTRS,
           num_inputs=(3, 5), check=_attention_check, onnx="Attention", onnx_attrs=_ONNX,
           doc="softmax((q s)(k s)^T + bias) v on (batch, heads, sequence, head size) tensors, "
               "with masks, causal and window limits, softcap and grouped-query heads (ONNX "
               "Attention)")


# --- rotary embedding ---------------------------------------------------------------------------
def _rotary_check(types, attrs):
    declare.same_dtype_in("rotary_embedding", FLOATS)(types, attrs)   # an empty x too
    if types[0].ndim == 4:
        rotary_half(types[0].shape, attrs["rotary_embedding_dim"])


def _rotary(x, cos, sin, *, interleaved, rotary_embedding_dim, name):
    return te_rotary_embedding(x, cos, sin, bool(interleaved), rotary_embedding_dim, name=name)


# ONNX's node also takes 3-D inputs and position ids: its converter handles those
# (mlcbook.frontend.onnx_attention)
declare.op("rotary_embedding", _rotary, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           attrs={"interleaved": 0, "rotary_embedding_dim": 0}, num_inputs=(3, 3),
           check=_rotary_check, onnx="RotaryEmbedding",
           empty=declare.empty_output(lambda types, attrs: types[0].shape),
           doc="rotate feature pairs of each head by the angles whose cos and sin (B, S, R/2) "
               "are given (RoPE); interleaved pairs (2e, 2e+1), else (d, d + R/2)")
