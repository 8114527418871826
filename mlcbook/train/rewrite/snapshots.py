"""Snapshots of a training run, kept in a ring: the model's IR (its structure may differ
from the current one after a rewrite), parameters, optimizer state, step number, and the
data iterator's position and random state. Restoring one continues bit for bit. A snapshot
may also carry the state of the runtime's observers and triggers (``observers``), rewound
with it.

    >>> ring = SnapshotRing(3)
    >>> ring.push(Snapshot.of(trainer))
    >>> ring.latest().step, ring.latest().finite
    (0, True)

The ring keeps one snapshot per step: pushing one of a step it already holds replaces it
(after a rollback the run passes the same steps again; their snapshots must not push the
older, good ones out).
"""

from __future__ import annotations

import copy
from collections import deque
from dataclasses import dataclass

import numpy as np

from ...errors import RewriteError
from ...graph.expr import Function
from ..trainer import Trainer


@dataclass(frozen=True)
class Snapshot:
    """Everything a continuation of a :class:`~mlcbook.train.Trainer` needs."""

    model: Function
    state: dict
    #: what the runtime's observers and triggers knew at this step (opaque here)
    observers: object = None

    @property
    def step(self) -> int:
        return self.state["step"]

    @property
    def finite(self) -> bool:
        """Whether every parameter, optimizer-state and buffer value is finite: a snapshot
        with a NaN or an infinity in it is no place to roll back to."""
        return all(np.isfinite(v).all() for group in ("params", "state", "buffers")
                   for v in self.state.get(group, {}).values()
                   if isinstance(v, np.ndarray) and v.dtype.kind in "fc")

    @staticmethod
    def of(trainer: Trainer) -> "Snapshot":
        return Snapshot(trainer.model_ir, copy.deepcopy(trainer.state_dict()))

    def restore(self, trainer: Trainer, compiled: dict | None = None) -> Trainer:
        """A trainer continuing from this snapshot: ``trainer`` itself if it has the same
        structure, else the one in ``compiled`` (``{id(model IR): trainer}``) for the
        snapshot's IR, else a new one compiled from it (its kernels come from the compile
        cache when that structure was compiled before)."""
        if trainer.model_ir is not self.model:
            trainer = (compiled or {}).get(id(self.model)) or \
                type(trainer)(self.model, trainer.loss, trainer.optimizer, trainer.data)
        trainer.load_state_dict(copy.deepcopy(self.state))
        return trainer


class SnapshotRing:
    """The last ``capacity`` snapshots (the oldest drops out)."""

    def __init__(self, capacity: int = 4):
        if capacity < 1:
            raise RewriteError(f"SnapshotRing: capacity must be at least 1, got {capacity}")
        self.items: deque[Snapshot] = deque(maxlen=capacity)

    def push(self, snap: Snapshot) -> None:
        """Keep ``snap`` as the newest; one of the same step is replaced, not kept twice."""
        for old in [s for s in self.items if s.step == snap.step]:
            self.items.remove(old)
        self.items.append(snap)

    def latest(self, before_step: int | None = None) -> Snapshot:
        """The newest snapshot (taken at or before ``before_step`` if given)."""
        for snap in reversed(self.items):
            if before_step is None or snap.step <= before_step:
                return snap
        raise RewriteError("no snapshot to restore. Instead: take one with runtime.snapshot() "
                           "or set snapshot_every")

    def __len__(self) -> int:
        return len(self.items)


__all__ = ["Snapshot", "SnapshotRing"]
