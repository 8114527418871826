"""Observers: what the runtime measures about training.

- :class:`LossStats`: the last loss, its exponential moving average and the mean/std of
  a recent window;
- :func:`unit_stats`: per unit of a hidden layer, on a probe batch, the mean activation
  and the fraction of rows where it is active (> 0); a unit active nowhere is *dead*;
- :func:`gradient_norms`: the L2 norm of each parameter's gradient on a probe batch.

Unit and gradient statistics run the graph interpreter on a probe batch (cheap for the
small models of the course, and only at decision points).

    >>> stats = unit_stats(trainer.model(), x_probe)
    >>> stats["relu1"]["dead"]                 # indices of dead units of relu1
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ...graph.expr import Call, Function, Tuple, Var
from ...graph.interpret import interpret
from ...ops.types import TensorType
from ..autodiff import grad
from ..losses import get_loss


class LossStats:
    """Running statistics of the training loss."""

    def __init__(self, window: int = 20, momentum: float = 0.9):
        self.window, self.momentum = deque(maxlen=window), momentum
        self.last, self.ema, self.steps = None, None, 0

    def update(self, loss: float) -> None:
        self.last, self.steps = loss, self.steps + 1
        self.window.append(loss)
        if np.isfinite(loss):
            self.ema = loss if self.ema is None else \
                self.momentum * self.ema + (1 - self.momentum) * loss

    def summary(self) -> dict:
        """The last loss, its moving average and the window's mean and spread (None while
        the window is empty, e.g. right after a rollback rewound it)."""
        w = np.array(self.window)
        return {"loss": self.last, "ema": self.ema,
                "window_mean": float(w.mean()) if w.size else None,
                "window_std": float(w.std()) if w.size else None}


def unit_stats(model: Function, x: np.ndarray) -> dict[str, dict]:
    """Per relu call of ``model``: ``mean`` activation and ``active`` fraction per unit
    (axis 1, averaged over the other axes) and the ``dead`` units (active nowhere)."""
    relus = [c for c in model.calls() if isinstance(c, Call) and c.op == "relu"]
    if not relus:
        return {}
    probe = Function(model.params, Tuple(list(relus)), model.name + "_probe")
    outs = interpret(probe, x)
    stats = {}
    for call, a in zip(relus, outs):
        axes = tuple(k for k in range(a.ndim) if k != 1)
        active = (a > 0).mean(axis=axes)
        stats[call.name] = {"mean": a.mean(axis=axes), "active": active,
                            "dead": np.nonzero(active == 0)[0].tolist()}
    return stats


def gradient_norms(model: Function, loss: str, x: np.ndarray, y: np.ndarray) -> dict:
    """``{parameter: ||d loss / d parameter||}`` on the batch ``(x, y)``."""
    labels = Var("labels", labels_type(loss, model))
    fn = Function(model.params + (labels,), get_loss(loss)(model.body, labels), "loss")
    names = list(model.weights)
    outs = interpret(grad(fn, names), x, y)
    return {n: float(np.linalg.norm(g)) for n, g in zip(names, outs[1:])}


def labels_type(loss: str, model: Function) -> TensorType:
    """The type of the labels ``loss`` compares ``model``'s output with."""
    if loss == "cross_entropy":
        return TensorType(model.ret_type.shape[:1], "int64")
    return model.ret_type


__all__ = ["LossStats", "unit_stats", "gradient_norms", "labels_type"]
