"""Widening: exact outputs, gradients that equal the transported old ones, and one
optimizer step of the widened model equal to the transported step of the old one."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.train.rewrite import weight_arrays, widen

from . import _models as M

CASES = [(M.mlp, "fc1"), (M.mlp, "fc2"), (M.cnn, "conv1"), (M.cnn, "conv2"),
         (M.residual, "fc1"), (M.residual, "fca"), (M.batch_norm_cnn, "conv1"),
         (M.layer_norm, "fc1")]
IDS = [f"{m.__name__}-{layer}" for m, layer in CASES]


def _width(func, layer, factor=2):
    return factor * func.weights[f"{layer}.weight"].data.shape[0]


def _close(a: dict, b: dict, tol=1e-10):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].shape == b[k].shape, k
        np.testing.assert_allclose(a[k], b[k], rtol=0, atol=tol, err_msg=k)


@pytest.mark.parametrize("make,layer", CASES, ids=IDS)
@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_widen_keeps_the_outputs_in_float64(make, layer, noise):
    f = make()
    x = M.inputs(f)
    r = widen(f, layer, _width(f, layer), seed=1, noise=noise)
    assert r.tag == "exact"
    assert r.model.weights[f"{layer}.weight"].data.shape[0] == _width(f, layer)
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)


def test_noise_really_breaks_the_replicas_symmetry():
    f = M.mlp()
    plain = weight_arrays(widen(f, "fc1", 16, seed=1).model)["fc2.weight"]
    noisy = weight_arrays(widen(f, "fc1", 16, seed=1, noise=0.3).model)["fc2.weight"]
    assert np.abs(plain - noisy).max() > 1e-3


def test_uneven_replication_under_layer_norm_is_tagged_semantic():
    f = M.layer_norm()
    r = widen(f, "fc1", 5, replicate=[0])
    assert r.tag == "semantic"
    x = M.inputs(f)
    assert np.abs(M.run(r.model, x) - M.run(f, x)).max() > 1e-6


@pytest.mark.parametrize("make,layer", CASES, ids=IDS)
def test_new_gradient_is_the_transported_old_gradient(make, layer):
    f = make()
    x = M.inputs(f)
    # uneven replica counts, except under LayerNorm (exact only for uniform replication)
    width = _width(f, layer) if make is M.layer_norm else _width(f, layer, 3) - 1
    r = widen(f, layer, width, seed=2)
    assert r.tag == "exact"
    _close(M.gradients(r.model, x), r.like_gradient(M.gradients(f, x), 1))


OPTIMIZERS = {"sgd": (mb.train.SGD(lr=0.1), 1), "momentum": (mb.train.SGD(lr=0.1, momentum=0.9), 1),
              "adam": (mb.train.Adam(lr=0.01, eps=1e-30), 0)}


@pytest.mark.parametrize("make,layer", CASES[:6], ids=IDS[:6])
@pytest.mark.parametrize("opt", list(OPTIMIZERS))
def test_one_step_after_widening_equals_the_transported_step(make, layer, opt):
    """The state after a step is the transported old state after a step (moments follow
    the gradient); the update follows the gradient under SGD (power 1) and is copied under
    Adam (power 0: Adam's step does not see the gradient's scale)."""
    optimizer, power = OPTIMIZERS[opt]
    f0 = make()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, optimizer, x)
    width = _width(f, layer, 3) - 1
    r = widen(f, layer, width, state=state, seed=3)
    w_new, s_new = M.step(r.model, optimizer, r.state, x)
    w_old, s_old = M.step(f, optimizer, state, x)
    _close(s_new, widen(f, layer, width, state=s_old, seed=3).state)
    before_new, before_old = weight_arrays(r.model), weight_arrays(f)
    delta_new = {k: w_new[k] - before_new[k] for k in w_new}
    delta_old = {k: w_old[k] - before_old[k] for k in w_old}
    _close(delta_new, r.like_gradient(delta_old, power))


def test_adam_step_counter_is_kept():
    f, state = M.trained_state(M.mlp(), mb.train.Adam(lr=0.01), M.inputs(M.mlp()))
    r = widen(f, "fc1", 12, state=state)
    assert r.state["fc1.weight.step"] == state["fc1.weight.step"] == 3


def test_widen_must_grow():
    with pytest.raises(RewriteError, match="must be larger"):
        widen(M.mlp(), "fc1", 8)


def test_unknown_state_slot_is_refused():
    f = M.mlp()
    with pytest.raises(RewriteError, match="no transport rule"):
        widen(f, "fc1", 12, state={"fc1.weight.ema": np.zeros((8, 6))})
