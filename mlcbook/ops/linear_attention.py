"""``linear_attention``: ONNX's ``LinearAttention`` (opset 27), declared once from
:func:`mlcbook.te.ops.linear_attention.linear_attention`.

    >>> get("linear_attention").infer_type(
    ...     [TensorType((2, 4, 32)), TensorType((2, 4, 16)), TensorType((2, 4, 16))],
    ...     {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": "linear"})
    Tuple(Tensor((2, 4, 32), "float32"), Tensor((2, 2, 8, 8), "float32"))

Inputs, as ONNX's: ``query``, ``key``, ``value`` (B, T, heads * head size), then the ones
given among ``past_state`` (B, Hkv, d_k, d_v), ``decay`` and ``beta`` (which of the last two
a call has follows from ``update_rule``: decay for ``gated`` and ``gated_delta``, beta for
``delta`` and ``gated_delta``). Outputs: ``output`` (B, T, Hq * d_v) and ``present_state``.
``chunk_size`` is ONNX's hint for a chunked kernel; the result does not depend on it.
"""

from __future__ import annotations

from ..errors import OpAttributeError
from ..te.ops.linear_attention import delta, gated
from ..te.ops.linear_attention import linear_attention as te_linear_attention
from . import declare
from .registry import REQUIRED, OpKind


def _compute(query, key, value, *rest, q_num_heads, kv_num_heads, update_rule, scale,
             chunk_size, name):
    # the optional inputs a call has: the decay and beta its rule takes, after past_state
    past = rest[0] if len(rest) > gated(update_rule) + delta(update_rule) else None
    rates = list(rest[1:] if past is not None else rest)
    decay = rates.pop(0) if gated(update_rule) and rates else None
    beta = rates.pop(0) if delta(update_rule) and rates else None
    return te_linear_attention(query, key, value, past, decay, beta, q_num_heads=q_num_heads,
                               kv_num_heads=kv_num_heads, update_rule=update_rule,
                               scale=scale, name=name)


def _check(types, attrs):
    if attrs["chunk_size"] < 1:
        raise OpAttributeError(f"linear_attention: chunk_size={attrs['chunk_size']}; Instead: "
                               "give a positive int (ONNX's default is 64)")
    rule = attrs["update_rule"]
    if rule in ("linear", "gated", "delta", "gated_delta"):
        taken = 3 + 1 + gated(rule) + delta(rule)
        if len(types) > taken:
            raise OpAttributeError(
                f"linear_attention: {len(types)} inputs given; update_rule={rule!r} takes at "
                f"most {taken} (query, key, value, past_state{', decay' if gated(rule) else ''}"
                f"{', beta' if delta(rule) else ''}); Instead: leave out the others")


def _places(attrs, n):
    """Where the call's inputs sit among ONNX's (past_state 3, decay 4, beta 5)."""
    rule = attrs["update_rule"]
    rates = [k for k, used in ((4, gated(rule)), (5, delta(rule))) if used]
    given = n - 3
    past = [3] if given > len(rates) else []
    return (0, 1, 2, *past, *rates[:given - len(past)]), None


declare.op("linear_attention", _compute, kind=OpKind.OPAQUE,
           attrs={"q_num_heads": REQUIRED, "kv_num_heads": REQUIRED,
                  "update_rule": "gated_delta", "scale": 0.0, "chunk_size": 64},
           num_inputs=(3, 6), check=_check, onnx="LinearAttention",
           onnx_attrs=declare.OnnxAttrs(outputs=2, places=_places, since=27),
           doc="linear attention: a recurrent (d_k, d_v) state per key/value head, "
               "updated by the rule linear, gated, delta or gated_delta")
