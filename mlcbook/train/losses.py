"""Losses as graph expressions: softmax cross-entropy (through ``log_softmax``, so large
logits do not overflow) and mean squared error. Both return a scalar (shape ``()``).

    >>> loss = cross_entropy(logits, labels)     # logits (N, C) float, labels (N,) int
    >>> loss = mse(pred, target)
"""

from __future__ import annotations

import numpy as np

from ..errors import TrainingError
from ..graph.expr import Constant, Expr
from .graph_math import as_float, call, reshape, scalar


def cross_entropy(logits: Expr, labels: Expr) -> Expr:
    """Mean over the batch of ``-log softmax(logits)[label]``; ``labels`` are class indices."""
    if len(logits.shape) != 2:
        raise TrainingError(f"cross_entropy: logits must be (batch, classes), got {logits.shape}")
    n, classes = logits.shape
    if labels.shape != (n,) or labels.dtype not in ("int32", "int64"):
        raise TrainingError(f"cross_entropy: labels must be ({n},) int32 or int64 class "
                            f"indices, got {labels.type}")
    onehot = as_float(call("equal", reshape(labels, (n, 1)),
                           Constant(np.arange(classes, dtype=labels.dtype).reshape(1, classes))),
                      logits.dtype)
    picked = call("sum", call("mul", onehot, call("log_softmax", logits, axis=1)), keepdims=0)
    return call("mul", picked, scalar(-1.0 / n, logits.dtype))


def mse(pred: Expr, target: Expr) -> Expr:
    """Mean of ``(pred - target) ** 2`` over all elements."""
    if pred.shape != target.shape:
        raise TrainingError(f"mse: prediction {pred.shape} and target {target.shape} differ")
    d = call("sub", pred, target)
    return call("mean", call("mul", d, d), keepdims=0)


LOSSES = {"cross_entropy": cross_entropy, "mse": mse}


def get_loss(name: str):
    """The loss called ``name``."""
    if name not in LOSSES:
        raise TrainingError(f"no loss named {name!r}; the losses are: {', '.join(LOSSES)}")
    return LOSSES[name]


__all__ = ["cross_entropy", "mse", "get_loss", "LOSSES"]
