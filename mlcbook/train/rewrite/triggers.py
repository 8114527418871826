"""Triggers: *when* the runtime may change the model. Each is fed once per step and says
whether it fires now.

- :class:`EpochBoundary`: at the first step of every ``every``-th epoch;
- :class:`Warmup`: once, after ``steps`` steps;
- :class:`Plateau`: the loss stopped improving, with ``patience``, ``threshold``,
  ``threshold_mode`` and ``cooldown`` meaning what they mean in PyTorch's
  ``ReduceLROnPlateau`` (mode ``min``): a value is *better* if it is below
  ``best * (1 - threshold)`` (``rel``) or ``best - threshold`` (``abs``); after more than
  ``patience`` non-better values in a row it fires, then ignores ``cooldown`` values;
- :class:`Instability`: the loss is not finite, or above ``factor`` times its moving average.

    >>> t = Plateau(patience=2)
    >>> [t.update(v) for v in (1.0, 0.9, 0.9, 0.9, 0.9)]
    [False, False, False, False, True]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...errors import RewriteError


@dataclass
class EpochBoundary:
    every: int = 1
    _last: int = field(default=0, repr=False)

    def update(self, epoch: int) -> bool:
        if epoch != self._last and epoch % self.every == 0:
            self._last = epoch
            return True
        self._last = epoch
        return False


@dataclass
class Warmup:
    steps: int
    _fired: bool = field(default=False, repr=False)

    def update(self, step: int) -> bool:
        if not self._fired and step >= self.steps:
            self._fired = True
            return True
        return False


@dataclass
class Plateau:
    patience: int = 10
    threshold: float = 1e-4
    threshold_mode: str = "rel"
    cooldown: int = 0
    best: float = math.inf
    bad: int = 0
    cooldown_counter: int = 0

    def __post_init__(self):
        if self.threshold_mode not in ("rel", "abs"):
            raise RewriteError(f"Plateau: threshold_mode must be 'rel' or 'abs', got "
                               f"{self.threshold_mode!r}")

    def _better(self, a: float) -> bool:
        if self.threshold_mode == "rel":
            return a < self.best * (1 - self.threshold)
        return a < self.best - self.threshold

    def update(self, value: float) -> bool:
        if self._better(value):
            self.best, self.bad = value, 0
        else:
            self.bad += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.bad = 0
        if self.bad > self.patience:
            self.cooldown_counter, self.bad = self.cooldown, 0
            return True
        return False

    def reset_best(self) -> None:
        """Forget the best value (after a rewrite changed what the loss can reach)."""
        self.best, self.bad = math.inf, 0


@dataclass
class Instability:
    factor: float = 3.0
    momentum: float = 0.9
    warmup: int = 5
    average: float | None = None
    seen: int = 0

    def update(self, loss: float) -> bool:
        if not math.isfinite(loss):
            return True
        self.seen += 1
        if self.average is not None and self.seen > self.warmup and \
                loss > self.factor * self.average:
            return True
        self.average = loss if self.average is None else \
            self.momentum * self.average + (1 - self.momentum) * loss
        return False


__all__ = ["EpochBoundary", "Warmup", "Plateau", "Instability"]
