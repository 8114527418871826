"""Rule-based policies: each watches the run through a trigger and decides a change.

- :class:`GrowOnPlateau`: when the epoch loss plateaus, widen a layer (Net2WiderNet);
- :class:`PruneDead`: at epoch boundaries, remove a layer's dead units (never active on a
  probe batch);
- :class:`RollbackOnInstability`: on a loss spike or non-finite loss, restore the newest
  snapshot and skip the batches since it.

A policy is any object with ``step(runtime, loss)``; it acts through ``runtime.apply``
and ``runtime.restore``, which log what they did.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .observers import unit_stats
from .rewrites import prune, widen
from .triggers import EpochBoundary, Instability, Plateau


class _EpochMean:
    """The mean loss of each finished epoch."""

    def __init__(self):
        self.epoch, self.losses = None, []

    def update(self, epoch: int, loss: float) -> float | None:
        done = None
        if self.epoch is not None and epoch != self.epoch and self.losses:
            done, self.losses = float(np.mean(self.losses)), []
        self.epoch = epoch
        self.losses.append(loss)
        return done


@dataclass
class GrowOnPlateau:
    """Widen ``layer`` by ``factor`` (up to ``max_width``) when the epoch-mean loss plateaus."""

    layer: str
    max_width: int
    factor: float = 2.0
    noise: float = 0.0
    plateau: Plateau = field(default_factory=lambda: Plateau(patience=1, threshold=0.02))
    _epochs: _EpochMean = field(default_factory=_EpochMean, repr=False)

    def step(self, rt, loss: float) -> None:
        mean = self._epochs.update(rt.epoch, loss)
        if mean is None or not self.plateau.update(mean):
            return
        width = rt.trainer.params[f"{self.layer}.weight"].shape[0]
        new = min(self.max_width, int(round(width * self.factor)))
        if new <= width:
            rt.record("plateau", action="none", reason=f"{self.layer} at max width {width}")
            return
        rt.apply(lambda m, state: widen(m, self.layer, new, state=state, noise=self.noise,
                                        seed=rt.step_count),
                 event="plateau", epoch_loss=mean, best=self.plateau.best)


@dataclass
class PruneDead:
    """At each epoch boundary, prune the units of ``layer`` that ``activation`` (its relu)
    never turns on for the probe batch ``x``."""

    layer: str
    activation: str
    x: np.ndarray
    min_width: int = 1
    trigger: EpochBoundary = field(default_factory=EpochBoundary)

    def step(self, rt, loss: float) -> None:
        if not self.trigger.update(rt.epoch):
            return
        dead = unit_stats(rt.current_model(), self.x)[self.activation]["dead"]
        width = rt.trainer.params[f"{self.layer}.weight"].shape[0]
        if not dead or width - len(dead) < self.min_width:
            return
        rt.apply(lambda m, state: prune(m, self.layer, state=state, remove=dead),
                 event="dead_units", dead=dead)


@dataclass
class RollbackOnInstability:
    """On instability, restore the newest snapshot; with ``skip``, the batches between it
    and the spike are skipped once."""

    trigger: Instability = field(default_factory=Instability)
    skip: bool = True

    def step(self, rt, loss: float) -> None:
        if not self.trigger.update(loss):
            return
        snap = rt.ring.latest()
        skip = rt.step_count - snap.step if self.skip else 0
        rt.restore(snap, skip=skip, event="instability", loss=loss)


__all__ = ["GrowOnPlateau", "PruneDead", "RollbackOnInstability"]
