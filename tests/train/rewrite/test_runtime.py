"""The runtime on digits: rewrites mid-training, rollback, fork, the decision log."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.train.rewrite import prune, widen
from mlcbook.train.rewrite.policies import GrowOnPlateau, PruneDead, RollbackOnInstability
from mlcbook.train.rewrite.runtime import Runtime
from mlcbook.train.rewrite.triggers import Instability, Plateau

sklearn = pytest.importorskip("sklearn.datasets")


@pytest.fixture(scope="module")
def digits():
    return mb.train.digits_split(sklearn.load_digits())


def _runtime(digits, width=8, lr=0.01, **kw):
    (x, y), _ = digits
    trainer = mb.train.compile_step(mb.train.mlp((64, width, 10), batch=32),
                                    optimizer=mb.train.Adam(lr=lr),
                                    data=mb.train.Batches(x, y, 32, seed=0))
    return Runtime(trainer, **kw)


def _fresh_state(model, state):
    """What re-creating the optimizer does: every slot back to zero, step counters too."""
    return {k: np.zeros_like(v) for k, v in state.items()}


def _continue_after(rt, snap, rewrite, reset, steps=6):
    """From ``snap``, apply ``rewrite`` (its transported state, or fresh state if
    ``reset``) and run ``steps`` steps; the losses."""
    rt.restore(snap)

    def apply(m, state):
        r = rewrite(m, state)
        if reset:
            r.state = _fresh_state(r.model, r.state)
        return r
    rt.apply(apply)
    return rt.run(steps)


def test_rollback_across_a_rewrite_is_bit_identical(digits):
    rt = _runtime(digits)
    rt.run(30)
    snap = rt.snapshot()
    plain = rt.run(15)
    rt.restore(snap)
    rt.apply(lambda m, state: widen(m, "fc1", 12, state=state))
    rt.run(5)
    rt.restore(snap)
    assert rt.trainer.params["fc1.weight"].shape == (8, 64)
    assert rt.run(15) == plain
    assert [r["event"] for r in rt.log] == ["rollback", "manual", "rollback"]


def test_widening_under_adam_continues_and_fresh_state_does_not(digits):
    rt = _runtime(digits)
    rt.run(60)
    snap = rt.snapshot()
    reference = rt.run(6)              # the un-widened continuation on the same batches

    def widened(m, state):
        return widen(m, "fc1", 16, state=state, seed=0)
    kept, fresh = (_continue_after(rt, snap, widened, reset) for reset in (False, True))
    # tag exact: the first loss (before any update of the new model) is the old one's
    assert kept[0] == pytest.approx(reference[0], abs=1e-5)
    assert fresh[0] == pytest.approx(reference[0], abs=1e-5)
    # transported moments keep following the old trajectory; fresh Adam state takes
    # sign-like steps of size lr on every weight and leaves it
    kept_gap = np.abs(np.subtract(kept, reference))[1:].mean()
    fresh_gap = np.abs(np.subtract(fresh, reference))[1:].mean()
    assert fresh_gap > 2 * kept_gap, (kept_gap, fresh_gap)
    assert rt.log[-1]["tag"] == "exact" and rt.log[-1]["params_after"] > \
        rt.log[-1]["params_before"]


def test_pruning_under_adam_continues_and_fresh_state_does_not(digits):
    """Units that no input activates are pruned mid-run (tag semantic: their outgoing
    weights are not zero, but on this data they add nothing). With the moments transported
    (pruned slots vanish, the others kept) the run continues as if nothing happened;
    re-creating the optimizer leaves the trajectory."""
    rt = _runtime(digits)
    rt.trainer.params["fc1.bias"][[2, 6]] = -100.0       # two units that never fire
    rt.run(60)
    snap = rt.snapshot()
    reference = rt.run(6)

    def pruned(m, state):
        return prune(m, "fc1", state=state, remove=[2, 6])
    kept, fresh = (_continue_after(rt, snap, pruned, reset) for reset in (False, True))
    assert rt.log[-1]["tag"] == "semantic" and rt.log[-1]["to"] == 6
    # the removed units were silent on the data: no loss jump at the rewrite
    assert kept[0] == pytest.approx(reference[0], abs=1e-5)
    assert fresh[0] == pytest.approx(reference[0], abs=1e-5)
    kept_gap = np.abs(np.subtract(kept, reference))[1:].max()
    fresh_gap = np.abs(np.subtract(fresh, reference))[1:].mean()
    assert kept_gap < 1e-4 and fresh_gap > 10 * kept_gap, (kept_gap, fresh_gap)


def test_rollback_on_injected_instability_skips_the_bad_batches(digits):
    rt = _runtime(digits, snapshot_every=10,
                  policies=[RollbackOnInstability(Instability(factor=3.0, warmup=5))])
    rt.run(25)
    rt.trainer.params["fc1.weight"] *= 50.0          # the injected blow-up
    rt.run(1)
    rec = rt.log[-1]
    assert rec["event"] == "instability" and rec["restored_step"] == 20
    assert rec["skipped_batches"] == 6
    assert np.abs(rt.trainer.params["fc1.weight"]).max() < 5
    assert all(np.isfinite(rt.run(5)))


def test_grow_on_plateau_widens_and_logs(digits):
    rt = _runtime(digits, width=4, lr=0.003,
                  policies=[GrowOnPlateau("fc1", max_width=8,
                                          plateau=Plateau(patience=0, threshold=0.5))])
    rt.run(3 * 44 + 1)
    grown = [r for r in rt.log if r["event"] == "plateau"]
    assert grown and grown[0]["action"] == "widen" and grown[0]["to"] == 8
    assert rt.trainer.params["fc1.weight"].shape == (8, 64)


def test_prune_dead_removes_units_that_never_fire(digits):
    (x, _), _ = digits
    rt = _runtime(digits, policies=[PruneDead("fc1", "relu1", x[:32])])
    rt.trainer.params["fc1.bias"][[1, 5]] = -100.0     # two units that can never fire
    rt.run(45)
    rec = [r for r in rt.log if r["event"] == "dead_units"][0]
    dead = rec["observed"]["dead"]
    assert {1, 5} <= set(dead) and rec["to"] == 8 - len(dead)
    assert rt.trainer.params["fc1.weight"].shape == (8 - len(dead), 64)


def test_fork_keeps_the_better_branch(digits):
    rt = _runtime(digits)
    rt.run(20)
    kept = rt.fork({"stay": lambda r: None,
                    "wider": lambda r: r.apply(lambda m, state: widen(m, "fc1", 12,
                                                                      state=state))}, 10)
    rec = rt.log[-1]
    scores = rec["observed"]["scores"]
    assert rec["event"] == "keep" and kept == min(scores, key=scores.get)
    assert rt.trainer.params["fc1.weight"].shape[0] == (12 if kept == "wider" else 8)
