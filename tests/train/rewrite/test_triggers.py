import math

import pytest

from mlcbook.errors import RewriteError
from mlcbook.train.rewrite.triggers import EpochBoundary, Instability, Plateau, Warmup


def _reference_plateau(values, patience, threshold, mode, cooldown):
    """ReduceLROnPlateau's bookkeeping (mode='min'), written out: the steps it reduces at."""
    best, bad, cool, fired = math.inf, 0, 0, []
    for i, a in enumerate(values):
        better = a < best * (1 - threshold) if mode == "rel" else a < best - threshold
        if better:
            best, bad = a, 0
        else:
            bad += 1
        if cool > 0:
            cool, bad = cool - 1, 0
        if bad > patience:
            fired.append(i)
            cool, bad = cooldown, 0
    return fired


@pytest.mark.parametrize("mode,threshold", [("rel", 1e-2), ("abs", 0.05)])
@pytest.mark.parametrize("cooldown", [0, 2])
def test_plateau_fires_where_reduce_lr_on_plateau_would(mode, threshold, cooldown):
    values = [1.0, 0.9, 0.895, 0.9, 0.89, 0.7, 0.7, 0.69, 0.7, 0.71, 0.7, 0.7, 0.7, 0.6, 0.6]
    t = Plateau(patience=2, threshold=threshold, threshold_mode=mode, cooldown=cooldown)
    got = [i for i, v in enumerate(values) if t.update(v)]
    assert got == _reference_plateau(values, 2, threshold, mode, cooldown)
    assert got


def test_plateau_rejects_unknown_mode():
    with pytest.raises(RewriteError, match="threshold_mode"):
        Plateau(threshold_mode="max")


def test_warmup_fires_once():
    t = Warmup(3)
    assert [t.update(s) for s in range(6)] == [False, False, False, True, False, False]


def test_epoch_boundary_fires_when_the_epoch_changes():
    t = EpochBoundary(every=2)
    assert [t.update(e) for e in (0, 0, 1, 1, 2, 2, 3, 4)] == [
        False, False, False, False, True, False, False, True]


def test_instability_on_spike_and_on_nan():
    t = Instability(factor=2.0, warmup=2)
    assert not any(t.update(v) for v in (1.0, 1.0, 0.9, 0.95))
    assert t.update(5.0)
    assert Instability().update(float("nan"))
