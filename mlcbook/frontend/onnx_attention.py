"""The converters of ONNX's transformer ops: ``Attention`` (opsets 23 to 25) onto the graph
op ``attention``, and ``RotaryEmbedding`` onto ``rotary_embedding``.

    >>> CONVERTERS["Attention"].outputs      # Y, present_key, present_value, qk_matmul_output
    4

The graph op takes (batch, heads, sequence, head size) tensors; the converter brings the
3-D form (batch, sequence, heads * head size, with ``q_num_heads``/``kv_num_heads``) into
it and back with reshapes and transposes, and appends the new keys and values to the cache
(``past_key``/``past_value``) with a concat, whose results are ``present_key`` and
``present_value``. Every attribute of the operator is supported. RotaryEmbedding looks the
cosines and sines of each token up with a gather when ``position_ids`` are given.
"""

from __future__ import annotations

from ..errors import OpAttributeError, OpShapeError
from ..graph.expr import TupleGetItem
from .onnx_context import onnx_dtype
from .onnx_ops import CONVERTERS, converter, guard_dtype

_ATTRS = ("is_causal", "kv_num_heads", "q_num_heads", "qk_matmul_output_mode", "scale",
          "softcap", "softmax_precision", "left_window_size", "right_window_size")


def _heads_first(cx, x, heads: int | None, what: str, attr: str):
    """(B, L, heads * size) -> (B, heads, L, size)."""
    b, length, hidden = x.shape
    if not heads or hidden % heads:
        raise OpAttributeError(
            f"{cx.node.op_type}: the 3-D {what} has {hidden} features, which {attr}={heads} "
            f"does not divide. Instead: give {attr} (a 3-D input needs it) dividing {hidden}")
    split = cx.call("reshape", x, shape=(b, length, heads, hidden // heads),
                    suffix=f"_{what}_heads")
    return cx.call("transpose", split, perm=(0, 2, 1, 3), suffix=f"_{what}_heads_first")


def _optional(ins, k):
    return ins[k] if k < len(ins) else None


@converter("Attention", attrs=_ATTRS, outputs=4)
@guard_dtype
def _attention(cx, ins, attrs):
    q, k, v = ins[:3]
    mask, past_k, past_v, counts = (_optional(ins, i) for i in (3, 4, 5, 6))
    rank = len(q.shape)
    if rank == 3:
        q = _heads_first(cx, q, attrs.get("q_num_heads"), "q", "q_num_heads")
        k = _heads_first(cx, k, attrs.get("kv_num_heads"), "k", "kv_num_heads")
        v = _heads_first(cx, v, attrs.get("kv_num_heads"), "v", "kv_num_heads")
    elif "q_num_heads" in attrs or "kv_num_heads" in attrs:
        raise OpAttributeError("Attention: q_num_heads and kv_num_heads are for 3-D inputs "
                               f"only; this one's Q is {rank}-D {tuple(q.shape)}. Instead: "
                               "leave them out (the 4-D shapes give the heads)")
    if (past_k is None) != (past_v is None):
        raise OpShapeError("Attention: past_key and past_value come together, but only one "
                           "is given. Instead: give both or neither")
    past = 0
    if past_k is not None:
        if counts is not None:
            raise OpShapeError("Attention: nonpad_kv_seqlen cannot be combined with past_key "
                               "and past_value (ONNX's rule). Instead: give one kind of cache")
        past = past_k.shape[2]
        k = cx.call("concat", past_k, k, axis=2, suffix="_present_key")
        v = cx.call("concat", past_v, v, axis=2, suffix="_present_value")
    with_qk = len(cx.node.output) > 3 and bool(cx.node.output[3])
    precision = attrs.get("softmax_precision")
    args = [q, k, v] + [x for x in (mask, counts) if x is not None]
    out = cx.call("attention", *args, scale=attrs.get("scale"),
                  is_causal=attrs.get("is_causal", 0), past_length=past,
                  softcap=attrs.get("softcap", 0.0), has_mask=int(mask is not None),
                  softmax_precision=None if precision is None else
                  onnx_dtype(precision, "softmax_precision"),
                  left_window_size=attrs.get("left_window_size", -1),
                  right_window_size=attrs.get("right_window_size", -1),
                  num_outputs=2 if with_qk else 1,
                  qk_matmul_output_mode=attrs.get("qk_matmul_output_mode", 0), suffix="_sdpa")
    y, qk = (TupleGetItem(out, 0), TupleGetItem(out, 1)) if with_qk else (out, None)
    if rank == 3:
        y = _heads_last(cx, y, "y")
    return [y, k, v, qk]


def _heads_last(cx, x, what: str):
    """(B, heads, L, size) -> (B, L, heads * size)."""
    b, h, length, size = x.shape
    x = cx.call("transpose", x, perm=(0, 2, 1, 3), suffix=f"_{what}_heads_last")
    return cx.call("reshape", x, shape=(b, length, h * size), suffix=f"_{what}")


@converter("RotaryEmbedding", attrs=("interleaved", "rotary_embedding_dim", "num_heads"))
@guard_dtype
def _rotary_embedding(cx, ins, attrs):
    x, cos, sin = ins[:3]
    positions = _optional(ins, 3)
    rank = len(x.shape)
    if rank == 3:
        x = _heads_first(cx, x, attrs.get("num_heads"), "input", "num_heads")
    if positions is not None:
        cos = cx.call("gather", cos, positions, axis=0, suffix="_cos")
        sin = cx.call("gather", sin, positions, axis=0, suffix="_sin")
    y = cx.call("rotary_embedding", x, cos, sin, interleaved=attrs.get("interleaved", 0),
                rotary_embedding_dim=attrs.get("rotary_embedding_dim", 0), suffix="_rotate")
    return _heads_last(cx, y, "y") if rank == 3 else y


__all__ = ["CONVERTERS"]
