"""The training-aware runtime: train, observe, and at discrete points pause, rewrite the
model's IR, rebind the optimizer state, recompile and resume.

    >>> rt = Runtime(trainer, policies=[GrowOnPlateau("fc1", max_width=64)],
    ...              snapshot_every=50)
    >>> losses = rt.run(600)
    >>> rt.log                 # one record per decision: what was seen, what changed

Recompiling builds a new step for the rewritten IR; ``mb.compile`` caches kernels by the
structural hash of their loop IR, so only kernels whose shapes changed are compiled anew.
:meth:`Runtime.restore` rolls back to a snapshot bit for bit (optionally skipping the
batches since it), observers and triggers included (a loss spike after the snapshot is
forgotten); :meth:`Runtime.fork` runs branches from one snapshot and keeps the best.

Snapshots hold only finite values: at a snapshot step whose parameters or optimizer state
hold a NaN or an infinity, none is taken (the log says so). A rollback that keeps failing
stops: restoring the same snapshot more than ``max_rollbacks`` times raises RewriteError.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from typing import Callable

import numpy as np

from ...errors import RewriteError
from ..trainer import Trainer
from .observers import LossStats
from .rewrites import Rewritten
from .snapshots import Snapshot, SnapshotRing
from .transport import parameter_count


class Runtime:
    """Runs ``trainer`` (its ``data`` set) under ``policies`` (objects with
    ``step(runtime, loss) -> None``), keeping a ring of snapshots and a decision log."""

    def __init__(self, trainer: Trainer, policies=(), ring: int = 4,
                 snapshot_every: int | None = None, max_rollbacks: int = 3):
        if isinstance(max_rollbacks, bool) or not isinstance(max_rollbacks, int) \
                or max_rollbacks < 1:
            raise RewriteError(f"Runtime: max_rollbacks must be an integer of at least 1, got "
                               f"{max_rollbacks!r}; Instead: e.g. max_rollbacks=3")
        self.max_rollbacks = max_rollbacks
        # rollbacks to each snapshot step (forks and keeps are not rollbacks)
        self._rollbacks: Counter = Counter()
        self.trainer, self.policies = trainer, list(policies)
        self.ring, self.snapshot_every = SnapshotRing(ring), snapshot_every
        self.loss_stats = LossStats()
        self.log: list[dict] = []
        self.losses: list[float] = []
        self.widths: list[int] = []
        self._pending: dict | None = None
        # the compiled step of every structure this run has had, by its IR (a rollback to
        # a structure seen before rebinds its trainer instead of building a new one)
        self.compiled: dict[int, Trainer] = {id(trainer.model_ir): trainer}

    # --- the loop --------------------------------------------------------------------------
    @property
    def step_count(self) -> int:
        return self.trainer.step_count

    @property
    def epoch(self) -> int:
        return self.trainer.data.epoch

    def run(self, steps: int) -> list[float]:
        """``steps`` training steps, consulting the policies after each; the losses."""
        out = []
        for _ in range(steps):
            if self.snapshot_every and self.step_count % self.snapshot_every == 0:
                self._scheduled_snapshot()
            loss = self.trainer.step(*self.trainer.data.next())
            if self._pending is not None:
                self._pending["loss_after"] = loss
                self._pending = None
            self.loss_stats.update(loss)
            self.losses.append(loss)
            self.widths.append(parameter_count(self.trainer.model_ir))
            out.append(loss)
            for policy in self.policies:
                policy.step(self, loss)
        return out

    def record(self, event: str, **fields) -> dict:
        """Append a decision record (step, event, the loss statistics, ``fields``)."""
        rec = {"step": self.step_count, "event": event, **self.loss_stats.summary(), **fields}
        self.log.append(rec)
        return rec

    # --- rewriting -------------------------------------------------------------------------
    def current_model(self):
        """The model's IR with the current parameters as its weights."""
        return self.trainer.model()

    def apply(self, rewrite: Callable[..., Rewritten], event: str = "manual", **observed):
        """Pause, rewrite the current model (``rewrite(model, state=...) -> Rewritten``),
        rebind the transported optimizer state, recompile, resume."""
        old = self.trainer
        model = old.model()
        r = rewrite(model, state=old.state)
        t0 = time.perf_counter()
        # the trainer's own class: an interpreted trainer stays interpreted
        new = type(old)(r.model, old.loss, old.optimizer, old.data)
        new.load_state_dict({"step": old.step_count, "params": new.params, "state": r.state,
                             "data": None})
        self.trainer = new
        self.compiled[id(new.model_ir)] = new
        rec = self.record(event, action=r.kind, observed=observed, **r.summary(model),
                          recompile_seconds=round(time.perf_counter() - t0, 3))
        self._pending = rec
        return r

    # --- snapshots -------------------------------------------------------------------------
    def _take(self) -> Snapshot:
        snap = Snapshot.of(self.trainer)
        return Snapshot(snap.model, snap.state, self._observer_state())

    def snapshot(self) -> Snapshot:
        """Take a snapshot of the run now and keep it in the ring; a RewriteError if the
        parameters or optimizer state are not finite (nothing to come back to)."""
        snap = self._take()
        if not snap.finite:
            raise RewriteError(f"step {self.step_count}: the parameters or optimizer state "
                               "hold a NaN or an infinity, so this is no snapshot to roll back "
                               "to; Instead: restore an earlier one (runtime.ring.latest())")
        self.ring.push(snap)
        return snap

    def _scheduled_snapshot(self) -> None:
        # after a rollback this step may be in the ring already: push replaces it
        snap = self._take()
        if snap.finite:
            self.ring.push(snap)
        else:
            self.record("snapshot_skipped", reason="parameters or optimizer state not finite")

    def _observer_state(self):
        """Copies of the loss statistics and of every policy's fields (its triggers); numpy
        arrays (probe batches) are shared, not copied."""
        def fields(obj):
            state = dict(vars(obj))
            shared = {id(v): v for v in state.values() if isinstance(v, np.ndarray)}
            return copy.deepcopy(state, shared)
        return fields(self.loss_stats), [fields(p) for p in self.policies]

    def _rewind_observers(self, saved) -> None:
        if saved is None:
            return
        stats, policies = copy.deepcopy(saved)
        vars(self.loss_stats).update(stats)
        for policy, state in zip(self.policies, policies):
            vars(policy).update(state)

    def restore(self, snap: Snapshot | None = None, skip: int = 0, event: str = "rollback",
                **observed) -> None:
        """Continue from ``snap`` (default: the newest), skipping the next ``skip`` batches.

        A rollback (any ``event`` but a fork's) to the same snapshot more than
        ``max_rollbacks`` times raises RewriteError: the run diverges from it every time."""
        snap = snap or self.ring.latest()
        at = self.step_count
        if event not in ("fork", "keep"):
            self._rollbacks[snap.step] += 1
            if self._rollbacks[snap.step] > self.max_rollbacks:
                raise RewriteError(
                    f"training rolled back to the snapshot of step {snap.step} "
                    f"{self.max_rollbacks} times and failed again at step {at} ({event}); it "
                    "will not recover by itself. Instead: lower the learning rate, check the "
                    "batches after that step for NaN or extreme values, or restore an older "
                    "snapshot by hand (runtime.ring.items)")
        self.trainer = snap.restore(self.trainer, self.compiled)
        self.compiled[id(self.trainer.model_ir)] = self.trainer
        self._rewind_observers(snap.observers)
        for _ in range(skip):
            self.trainer.data.next()
        self.record(event, action="restore", restored_step=snap.step, from_step=at,
                    skipped_batches=skip, observed=observed)

    def fork(self, branches: dict[str, Callable[["Runtime"], None]], steps: int,
             score: Callable[["Runtime", list[float]], float] | None = None) -> str:
        """Run each branch (a function that changes the runtime, e.g. applies a rewrite) for
        ``steps`` steps from the same snapshot, on the same batches; keep the best (lowest
        ``score``; default the mean loss of the last half) and return its name. A branch that
        ends with a NaN or an infinity in its state, or a score that is not finite, loses;
        if every branch does, the run goes back to the start and a RewriteError says so."""
        start = self.snapshot()
        score = score or (lambda rt, losses: float(np.mean(losses[len(losses) // 2:])))
        results = {}
        for name, setup in branches.items():
            self.restore(start, event="fork", branch=name)
            setup(self)
            losses = self.run(steps)
            end = self._take()
            value = float(score(self, losses))
            results[name] = (value if end.finite and np.isfinite(value) else np.inf, end)
        scores = {k: v[0] for k, v in results.items()}
        best = min(results, key=lambda k: results[k][0])
        if not np.isfinite(results[best][0]):
            self.restore(start, event="keep", scores=scores, kept=None)
            raise RewriteError(f"fork: every branch ({', '.join(results)}) ended with a loss or "
                               f"a state that is not finite, after {steps} steps from step "
                               f"{start.step}; the run is back at step {start.step}. Instead: "
                               "try gentler branches (a lower learning rate, a smaller change)")
        self.ring.push(results[best][1])
        self.restore(results[best][1], event="keep", scores=scores, kept=best)
        return best


__all__ = ["Runtime"]
