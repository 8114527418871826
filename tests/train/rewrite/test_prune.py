import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.train.rewrite import importance_l2, prune, weight_arrays, with_weights

from . import _models as M


def test_prune_removes_the_least_important_units_of_the_whole_group():
    f = M.residual()
    score = importance_l2(f, "fc1")
    r = prune(f, "fc1", keep=5)
    assert r.tag == "semantic"
    assert r.detail["removed"] == sorted(np.argsort(score)[:3].tolist())
    w = r.model.weights
    assert w["fc1.weight"].data.shape == (5, 6) and w["fcb.weight"].data.shape == (5, 5)
    assert w["fca.weight"].data.shape == (5, 5) and w["fc3.weight"].data.shape == (3, 5)


def test_prune_cnn_channel_removes_its_flattened_block():
    r = prune(M.cnn(), "conv2", remove=[1])
    assert r.model.weights["fc.weight"].data.shape == (10, 48)
    old = weight_arrays(M.cnn())["fc.weight"]
    np.testing.assert_array_equal(r.model.weights["fc.weight"].data,
                                  np.delete(old, np.arange(16, 32), axis=1))


def _silence(f, layer, sink, units):
    """``f`` with the outgoing weights of ``units`` set to zero."""
    w = weight_arrays(f)[sink].copy()
    w[:, units] = 0
    return with_weights(f, {sink: w})


def test_pruning_silent_units_is_exact_with_sliced_gradients():
    f = _silence(M.mlp(), "fc1", "fc2.weight", [2, 5])
    x = M.inputs(f)
    r = prune(f, "fc1", remove=[2, 5])
    assert r.tag == "exact"
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)
    new, old = M.gradients(r.model, x), r.like_gradient(M.gradients(f, x), 1)
    for k in new:
        np.testing.assert_allclose(new[k], old[k], rtol=0, atol=1e-10, err_msg=k)


@pytest.mark.parametrize("optimizer", [mb.train.SGD(lr=0.1, momentum=0.9),
                                       mb.train.Adam(lr=0.01)], ids=["momentum", "adam"])
def test_pruned_slots_vanish_and_surviving_slots_step_as_before(optimizer):
    f0 = M.mlp()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, optimizer, x)
    f = _silence(f, "fc1", "fc2.weight", [0, 3])
    r = prune(f, "fc1", remove=[0, 3], state=state)
    keep = [1, 2, 4, 5, 6, 7]
    for slot in optimizer.slots:
        if slot != "step":
            np.testing.assert_array_equal(r.state[f"fc1.weight.{slot}"],
                                          state[f"fc1.weight.{slot}"][keep])
    w_new, s_new = M.step(r.model, optimizer, r.state, x)
    _, s_old = M.step(f, optimizer, state, x)
    expect = prune(f, "fc1", remove=[0, 3], state=s_old).state
    for k in s_new:
        np.testing.assert_allclose(s_new[k], expect[k], rtol=0, atol=1e-10, err_msg=k)


def test_prune_keep_out_of_range():
    with pytest.raises(RewriteError, match="keep=8 must be in 1..7"):
        prune(M.mlp(), "fc1", keep=8)
