"""Rollback that ends: snapshots hold only finite values, a restore does not push good
snapshots out of the ring, repeated failure stops with an error, and the observers and
triggers are rewound with the model."""

from dataclasses import dataclass

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.train.rewrite.policies import RollbackOnInstability
from mlcbook.train.rewrite.runtime import Runtime
from mlcbook.train.rewrite.triggers import Instability

sklearn = pytest.importorskip("sklearn.datasets")


@pytest.fixture(scope="module")
def digits():
    return mb.train.digits_split(sklearn.load_digits())


def _runtime(digits, **kw):
    (x, y), _ = digits
    trainer = mb.train.compile_step(mb.train.mlp((64, 8, 10), batch=32),
                                    optimizer=mb.train.Adam(lr=0.01),
                                    data=mb.train.Batches(x, y, 32, seed=0))
    return Runtime(trainer, **kw)


@dataclass
class Poison:
    """A policy that puts a NaN into ``fc1.weight`` whenever the run reaches step ``at``."""

    at: int

    def step(self, rt, loss):  # policies run after each training step
        if rt.step_count == self.at:
            rt.trainer.params["fc1.weight"][0, 0] = np.nan


@pytest.mark.parametrize("group", ["params", "state"])
def test_a_nan_at_a_snapshot_step_is_not_snapshotted_and_rollback_recovers(digits, group):
    rt = _runtime(digits, snapshot_every=10, policies=[RollbackOnInstability()])
    rt.run(20)
    # the NaN arrives at step 20, a snapshot step (a parameter, or an Adam moment)
    values = getattr(rt.trainer, group)
    values[next(k for k, v in values.items() if v.size > 1)].flat[0] = np.nan
    losses = rt.run(20)
    events = [r["event"] for r in rt.log]
    # step 20 is a snapshot step; its state holds the NaN, so no snapshot is taken there
    assert events[:2] == ["snapshot_skipped", "instability"], events
    assert rt.log[1]["restored_step"] == 10
    assert all(s.finite for s in rt.ring.items)
    assert np.isfinite(losses[-10:]).all()
    assert all(np.isfinite(v).all() for v in rt.trainer.params.values())


def test_snapshot_by_hand_refuses_a_state_that_is_not_finite(digits):
    rt = _runtime(digits)
    rt.run(3)
    rt.trainer.params["fc2.bias"][0] = np.inf
    with pytest.raises(RewriteError, match=r"step 3: .*NaN or an infinity.*Instead: restore"):
        rt.snapshot()
    assert len(rt.ring) == 0


@pytest.mark.parametrize("skip", [True, False])
def test_a_run_that_fails_after_every_rollback_stops_with_an_error(digits, skip):
    # the poison comes back after every rollback: restoring can never get past step 25
    rt = _runtime(digits, snapshot_every=10, max_rollbacks=3,
                  policies=[Poison(25), RollbackOnInstability(skip=skip)])
    with pytest.raises(RewriteError, match=r"rolled back to the snapshot of step 20 3 times "
                                           r"and failed again at step 26.*Instead: lower the "
                                           r"learning rate"):
        rt.run(200)
    assert [r["event"] for r in rt.log] == ["instability"] * 3


def test_a_restore_does_not_push_good_snapshots_out_of_the_ring(digits):
    rt = _runtime(digits, ring=3, snapshot_every=10)
    rt.run(31)                                       # snapshots of steps 0, 10, 20, 30
    assert [s.step for s in rt.ring.items] == [10, 20, 30]
    for _ in range(3):                               # back to 20 and through it again
        rt.restore(rt.ring.latest(before_step=20))
        rt.run(5)
    assert [s.step for s in rt.ring.items] == [10, 30, 20]


def test_rollback_rewinds_the_loss_statistics_and_the_triggers(digits):
    trigger = Instability(factor=3.0, warmup=5)
    rt = _runtime(digits, snapshot_every=10, policies=[RollbackOnInstability(trigger)])
    rt.run(20)                                       # the snapshot of step 20 sees this
    window, ema, seen, average = (list(rt.loss_stats.window), rt.loss_stats.ema,
                                  trigger.seen, trigger.average)
    rt.run(5)
    rt.trainer.params["fc1.weight"] *= 50.0          # a loss spike at step 26
    rt.run(1)
    assert rt.log[-1]["event"] == "instability" and rt.log[-1]["restored_step"] == 20
    stats, rewound = rt.loss_stats, rt.policies[0].trigger
    assert list(stats.window) == window and stats.ema == ema
    assert max(stats.window) < 3 * np.median(window)     # the spike is forgotten
    assert (rewound.seen, rewound.average) == (seen, average)


def test_max_rollbacks_must_be_a_positive_integer(digits):
    with pytest.raises(RewriteError, match="max_rollbacks must be an integer of at least 1, "
                                           "got 0"):
        _runtime(digits, max_rollbacks=0)


def _poison(rt):
    rt.trainer.params["fc1.weight"][:] = np.nan


def test_a_fork_branch_that_ends_in_nan_loses_and_the_ring_keeps_only_the_winner(digits):
    # the NaN branch ran last: its end once became the ring's newest snapshot (and a
    # snapshot() that raised), so the next rollback went to the losing branch
    rt = _runtime(digits, snapshot_every=10)
    rt.run(10)
    assert rt.fork({"good": lambda r: None, "nan": _poison}, steps=5) == "good"
    assert rt.log[-1]["observed"]["scores"]["nan"] == np.inf
    assert all(np.isfinite(v).all() for v in rt.trainer.params.values())
    assert rt.ring.latest().step == 15 and rt.ring.latest().finite


def test_a_fork_whose_every_branch_ends_in_nan_goes_back_and_says_so(digits):
    rt = _runtime(digits, snapshot_every=10)
    rt.run(10)
    with pytest.raises(RewriteError, match=r"fork: every branch \(nan, also_nan\) ended with a "
                                           r"loss or a state that is not finite.*back at step "
                                           r"10\. Instead: try gentler branches"):
        rt.fork({"nan": _poison, "also_nan": _poison}, steps=5)
    assert rt.step_count == 10
    assert all(np.isfinite(v).all() for v in rt.trainer.params.values())
