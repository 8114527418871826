"""``rotary_embedding``: rotary position embedding (ONNX's ``RotaryEmbedding`` on
(batch, heads, sequence, head size) tensors, with the cosines and sines already looked up
per token), legalized to :func:`mlcbook.te.ops.rotary.rotary_embedding`.

    >>> get("rotary_embedding").infer_type([TensorType((1, 2, 3, 8)), TensorType((1, 3, 4)),
    ...                                     TensorType((1, 3, 4))], {})
    Tensor((1, 2, 3, 8), "float32")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpAttributeError, OpShapeError
from ..te.ops.rotary import rotary_embedding as te_rotary_embedding
from ._infer import FLOATS, require_dtype, same_dtype
from .registry import OpKind, register, register_legalization


def _rotary_dim(attrs, head_size: int) -> int:
    r = attrs["rotary_embedding_dim"] or head_size
    if r % 2 or not 0 < r <= head_size:
        raise OpAttributeError(f"rotary_embedding: rotary_embedding_dim={r} must be even and "
                               f"at most the head size {head_size} (0: all of it)")
    return r


def _infer(types, attrs):
    x, cos, sin = types
    same_dtype("rotary_embedding", types)
    require_dtype("rotary_embedding", x, FLOATS)
    if x.ndim != 4:
        raise OpShapeError(f"rotary_embedding: x {x.shape} must be 4-D (batch, heads, "
                           "sequence, head size)")
    r = _rotary_dim(attrs, x.shape[3])
    want = (x.shape[0], x.shape[2], r // 2)
    if cos.shape != want or sin.shape != want:
        raise OpShapeError(f"rotary_embedding: cos {cos.shape} and sin {sin.shape} must be "
                           f"{want}: (batch, sequence, rotary_embedding_dim / 2)")
    return x


def _reference(x, cos, sin, interleaved=0, rotary_embedding_dim=0):
    r = rotary_embedding_dim or x.shape[3]
    c, s = cos[:, None], sin[:, None]                    # (B, 1, S, R / 2): every head
    if interleaved:
        a, b = x[..., 0:r:2], x[..., 1:r:2]
    else:
        a, b = x[..., :r // 2], x[..., r // 2:r]
    first, second = c * a - s * b, s * a + c * b
    rotated = (np.stack([first, second], axis=-1).reshape(first.shape[:-1] + (r,))
               if interleaved else np.concatenate([first, second], axis=-1))
    return np.concatenate([rotated, x[..., r:]], axis=-1)


register("rotary_embedding", kind=OpKind.OUT_ELEMWISE_FUSABLE, infer=_infer,
         reference=_reference, attrs={"interleaved": 0, "rotary_embedding_dim": 0},
         num_inputs=(3, 3),
         doc="rotate feature pairs of each head by the angles whose cos and sin (B, S, R/2) "
             "are given (RoPE); interleaved pairs (2e, 2e+1), else (d, d + R/2)")


@register_legalization("rotary_embedding")
def _legalize(ins, attrs, out_type):
    x, cos, sin = ins
    return te_rotary_embedding(x, cos, sin, bool(attrs["interleaved"]),
                               _rotary_dim(attrs, x.shape[3]), name="rotary_embedding")
