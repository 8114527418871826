import numpy as np

from mlcbook.train.rewrite.observers import LossStats, gradient_norms, unit_stats
from mlcbook.train.rewrite.transport import weight_arrays, with_weights

from . import _models as M


def test_loss_stats_window_and_moving_average():
    s = LossStats(window=2, momentum=0.5)
    for v in (4.0, 2.0, 1.0):
        s.update(v)
    assert s.summary() == {"loss": 1.0, "ema": 2.0, "window_mean": 1.5, "window_std": 0.5}


def test_unit_stats_finds_units_that_never_fire():
    f = M.mlp()
    b = weight_arrays(f)["fc1.bias"].copy()
    b[[0, 6]] = -1e3
    stats = unit_stats(with_weights(f, {"fc1.bias": b}), M.inputs(f))
    assert stats["relu1"]["dead"] == [0, 6]
    assert stats["relu1"]["active"].shape == (8,)


def test_gradient_norms_match_the_gradients():
    f = M.mlp()
    x = M.inputs(f)
    norms = gradient_norms(f, "cross_entropy", x, M.labels(f))
    grads = M.gradients(f, x)
    for k, g in grads.items():
        assert np.isclose(norms[k], np.linalg.norm(g))


def test_loss_stats_of_an_empty_window_say_none_without_a_warning():
    import warnings
    from mlcbook.train.rewrite.observers import LossStats
    stats = LossStats(window=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = stats.summary()
    assert s["window_mean"] is None and s["window_std"] is None
    stats.update(2.0)
    stats.update(4.0)
    assert stats.summary()["window_mean"] == 3.0 and stats.summary()["window_std"] == 1.0
