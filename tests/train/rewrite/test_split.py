"""Splitting a unit: exact outputs, transported gradients and optimizer steps, the
epsilon variant whose halves move apart."""

import numpy as np
import pytest

from mlcbook.errors import RewriteError
from mlcbook.train.rewrite import split, weight_arrays

from . import _models as M
from .test_widen import OPTIMIZERS, _close

CASES = [(M.mlp, "fc1"), (M.mlp, "fc2"), (M.cnn, "conv2"), (M.residual, "fc1"),
         (M.batch_norm_cnn, "conv1")]
IDS = [f"{m.__name__}-{layer}" for m, layer in CASES]


@pytest.mark.parametrize("make,layer", CASES, ids=IDS)
def test_split_keeps_the_outputs_in_float64(make, layer):
    f = make()
    x = M.inputs(f)
    r = split(f, layer, unit=1, ratio=0.3)
    n = f.weights[f"{layer}.weight"].data.shape[0]
    assert r.tag == "exact" and r.model.weights[f"{layer}.weight"].data.shape[0] == n + 1
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)


def test_the_halves_share_the_outgoing_weight():
    f = M.mlp()
    w = weight_arrays(split(f, "fc1", unit=2, ratio=0.25).model)["fc2.weight"]
    old = weight_arrays(f)["fc2.weight"]
    np.testing.assert_allclose(w[:, 2], 0.25 * old[:, 2], rtol=0, atol=1e-15)
    np.testing.assert_allclose(w[:, 8], 0.75 * old[:, 2], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(weight_arrays(split(f, "fc1", 2).model)["fc1.weight"][8],
                                  weight_arrays(f)["fc1.weight"][2])


@pytest.mark.parametrize("make,layer", CASES, ids=IDS)
def test_new_gradient_is_the_transported_old_gradient(make, layer):
    f = make()
    x = M.inputs(f)
    r = split(f, layer, unit=0, ratio=0.3)
    _close(M.gradients(r.model, x), r.like_gradient(M.gradients(f, x), 1))


@pytest.mark.parametrize("opt", list(OPTIMIZERS))
@pytest.mark.parametrize("make,layer", CASES[:3], ids=IDS[:3])
def test_one_step_after_splitting_equals_the_transported_step(make, layer, opt):
    optimizer, power = OPTIMIZERS[opt]
    f0 = make()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, optimizer, x)
    r = split(f, layer, unit=1, ratio=0.3, state=state)
    w_new, s_new = M.step(r.model, optimizer, r.state, x)
    w_old, s_old = M.step(f, optimizer, state, x)
    _close(s_new, split(f, layer, unit=1, ratio=0.3, state=s_old).state)
    before_new, before_old = weight_arrays(r.model), weight_arrays(f)
    _close({k: w_new[k] - before_new[k] for k in w_new},
           r.like_gradient({k: w_old[k] - before_old[k] for k in w_old}, power))


def test_split_with_an_offset_is_epsilon_and_second_order():
    f = M.mlp()
    x = M.inputs(f)
    r = split(f, "fc1", unit=3, offset=1e-4, seed=1)
    assert r.tag == "epsilon"
    w = weight_arrays(r.model)["fc1.weight"]
    assert np.abs(w[3] - w[8]).max() > 1e-5        # the halves really moved apart
    change = np.abs(M.run(r.model, x) - M.run(f, x)).max()
    assert change < 1e-7                             # ratio 0.5: the first order cancels


def test_split_under_layer_norm_is_tagged_semantic():
    f = M.layer_norm()
    r = split(f, "fc1", unit=0)
    assert r.tag == "semantic"
    x = M.inputs(f)
    assert np.abs(M.run(r.model, x) - M.run(f, x)).max() > 1e-6


def test_split_arguments():
    with pytest.raises(RewriteError, match="unit=8"):
        split(M.mlp(), "fc1", unit=8)
    with pytest.raises(RewriteError, match="ratio=1.0"):
        split(M.mlp(), "fc1", unit=0, ratio=1.0)
