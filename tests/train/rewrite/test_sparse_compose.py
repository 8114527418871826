"""Rewrites compose with sparsity: after ``sparsify`` on one layer, widen, split and prune
of that layer or any other stay exact, and the mask moves with its weight."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.train.rewrite import coupled_group, dense_gradient, mask_of, parameters, prune
from mlcbook.train.rewrite import rigl, sparsify, split, weight_arrays, widen

from . import _models as M
from . import _onnx_models as O
from .test_widen import _close

# (model, masked layer, its weight, rewritten layer)
CASES = [(M.mlp, "fc1", "fc1.weight", "fc2"), (M.mlp, "fc2", "fc2.weight", "fc1"),
         (M.mlp, "fc1", "fc1.weight", "fc1"), (M.cnn, "conv2", "conv2.weight", "conv1"),
         (O.matmul_mlp, "mm2", "w2", "mm1"), (O.matmul_mlp, "mm1", "w1", "mm1"),
         (O.weight_left, "mm2", "w2", "mm1"),
         (O.einsum_transposed, "e1_matmul", "w1", "e1_matmul")]
IDS = [f"{m.__name__}-{s}-then-{r}" for m, s, _, r in CASES]


def _masked(make, layer):
    return sparsify(make(), layer, 0.4).model


def test_a_masked_weight_keeps_its_layers_roles():
    f = _masked(M.mlp, "fc1")
    assert parameters(f)["fc1.weight"].roles == ("out", "in")
    assert parameters(_masked(O.matmul_mlp, "mm1"))["w1"].roles == ("in", "out")
    assert parameters(_masked(O.einsum_transposed, "e1_matmul"))["w1"].roles == ("out", "in")


@pytest.mark.parametrize("make,masked,weight,layer", CASES, ids=IDS)
@pytest.mark.parametrize("how", ["widen", "split"])
def test_widen_and_split_after_sparsify_are_exact_and_move_the_mask(make, masked, weight,
                                                                     layer, how):
    f = _masked(make, masked)
    x = M.inputs(f)
    r = (widen(f, layer, 11, seed=1, noise=0.3) if how == "widen"
         else split(f, layer, unit=1, ratio=0.3, offset=0.2))
    assert r.tag == ("epsilon" if how == "split" else "exact")
    mask, w = mask_of(r.model, masked), weight_arrays(r.model)[weight]
    assert mask.shape == w.shape and not w[mask == 0].any()
    assert mask.sum() >= mask_of(f, masked).sum()
    if how == "widen":
        np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)


@pytest.mark.parametrize("make,masked,weight,layer", CASES, ids=IDS)
def test_prune_after_sparsify_keeps_the_mask_of_the_kept_units(make, masked, weight, layer):
    f = _masked(make, masked)
    r = prune(f, layer, remove=[0])
    mask = mask_of(f, masked)
    for s in coupled_group(f, layer).slices:
        if s.param == weight:
            mask = np.delete(mask, np.arange(s.offset, s.offset + s.block), axis=s.axis)
    np.testing.assert_array_equal(mask_of(r.model, masked), mask)
    assert mask_of(r.model, masked).shape == weight_arrays(r.model)[weight].shape


def test_masked_elements_stay_without_gradient_or_state_after_widening():
    opt = mb.train.Adam(lr=0.01)
    f0 = _masked(O.matmul_mlp, "mm1")
    x = M.inputs(f0)
    f, state = M.trained_state(f0, opt, x)
    r = widen(f, "mm1", 13, state=state, seed=2)
    mask = mask_of(r.model, "mm1")
    assert not M.gradients(r.model, x)["w1"][mask == 0].any()
    assert not r.state["w1.m"][mask == 0].any() and not r.state["w1.v"][mask == 0].any()
    _, s_new = M.step(r.model, opt, r.state, x)
    _, s_old = M.step(f, opt, state, x)
    _close(s_new, widen(f, "mm1", 13, state=s_old, seed=2).state)


def test_rigl_runs_on_a_widened_masked_matmul_layer():
    r = widen(_masked(O.matmul_mlp, "mm1"), "mm1", 12, seed=0)
    x, y = M.inputs(r.model), M.labels(r.model)
    g = dense_gradient(r.model, "mm1", x, y)
    assert g.shape == (6, 12)
    u = rigl(r.model, "mm1", 0.25, g)
    assert mask_of(u.model, "mm1").sum() == mask_of(r.model, "mm1").sum()

