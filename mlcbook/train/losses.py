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


def check_labels(loss: str, labels, classes: int) -> None:
    """Raise :class:`TrainingError` when ``labels`` (a batch's host array) cannot be the
    class indices that ``loss`` compares ``classes`` outputs with: the compiled loss would
    pick no class for them and train on a loss of 0, learning nothing.

        >>> check_labels("cross_entropy", np.array([0, 9]), classes=10)   # fine
    """
    if loss != "cross_entropy":
        return
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        raise TrainingError(f"cross_entropy: labels must be integer class indices, got "
                            f"dtype {labels.dtype}. Instead: pass labels.astype('int64')")
    bad = (labels < 0) | (labels >= classes)
    if bad.any():
        where = np.flatnonzero(bad.ravel())
        raise TrainingError(
            f"cross_entropy: {where.size} label(s) outside [0, {classes}), the first "
            f"{labels.ravel()[where[0]]} at row {where[0]}; the model has {classes} classes. "
            f"Instead: map the labels to 0..{classes - 1} (e.g. subtract the smallest "
            f"label), or give the model an output per class")


def get_loss(name: str):
    """The loss called ``name``."""
    if name not in LOSSES:
        raise TrainingError(f"no loss named {name!r}; the losses are: {', '.join(LOSSES)}")
    return LOSSES[name]


__all__ = ["cross_entropy", "mse", "get_loss", "check_labels", "LOSSES"]
