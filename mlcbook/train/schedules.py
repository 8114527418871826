"""Learning-rate schedules: the rate as a function of the step number (0 for the first
step). The trainer evaluates one per step and feeds it to the compiled step as its ``lr``.

    >>> Warmup(Cosine(0.1, total_steps=1000), warmup_steps=100)(50)
    0.051
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ..errors import TrainingError


class Schedule:
    """Base of schedules: ``schedule(step) -> float``; ``to_json`` / :func:`schedule_from_json`."""

    def __call__(self, step: int) -> float:
        raise NotImplementedError

    def to_json(self) -> dict:
        out = {"kind": type(self).__name__}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.to_json() if isinstance(v, Schedule) else v
        return out


@dataclass(frozen=True)
class ConstantLR(Schedule):
    """The same rate every step."""

    lr: float

    def __call__(self, step: int) -> float:
        return float(self.lr)


@dataclass(frozen=True)
class StepLR(Schedule):
    """``lr * gamma ** (step // step_size)``."""

    lr: float
    step_size: int
    gamma: float = 0.1

    def __call__(self, step: int) -> float:
        return float(self.lr * self.gamma ** (step // self.step_size))


@dataclass(frozen=True)
class Cosine(Schedule):
    """From ``lr`` down to ``min_lr`` along half a cosine over ``total_steps``, then flat."""

    lr: float
    total_steps: int
    min_lr: float = 0.0

    def __call__(self, step: int) -> float:
        t = min(step, self.total_steps) / self.total_steps
        return float(self.min_lr + 0.5 * (self.lr - self.min_lr) * (1 + math.cos(math.pi * t)))


@dataclass(frozen=True)
class Warmup(Schedule):
    """A linear ramp from 0 over ``warmup_steps``, then ``schedule`` (counted from 0 there)."""

    schedule: Schedule
    warmup_steps: int

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return float(self.schedule(0) * (step + 1) / self.warmup_steps)
        return self.schedule(step - self.warmup_steps)


_KINDS = {c.__name__: c for c in (ConstantLR, StepLR, Cosine, Warmup)}


def as_schedule(lr) -> Schedule:
    """``lr`` as a schedule: numbers become :class:`ConstantLR`."""
    if isinstance(lr, Schedule):
        return lr
    if isinstance(lr, (int, float)) and not isinstance(lr, bool):
        return ConstantLR(float(lr))
    raise TrainingError(f"a learning rate must be a number or a schedule (mb.train.Cosine, "
                        f"StepLR, Warmup, ConstantLR), got {lr!r}")


def schedule_from_json(d: dict) -> Schedule:
    """The schedule :meth:`Schedule.to_json` described."""
    d = dict(d)
    kind = _KINDS.get(d.pop("kind", None))
    if kind is None:
        raise TrainingError(f"unknown schedule in checkpoint: {d!r}")
    if kind is Warmup:
        d["schedule"] = schedule_from_json(d["schedule"])
    return kind(**d)


__all__ = ["Schedule", "ConstantLR", "StepLR", "Cosine", "Warmup", "as_schedule",
           "schedule_from_json"]
