"""RigL as a masked variant: the mask in the IR, zero gradients of masked weights, drop and
regrow, and the state rule for regrown elements."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.train.rewrite import dense_gradient, mask_of, rigl, sparsify, weight_arrays
from mlcbook.train.rewrite import with_weights

from . import _models as M


def _sparse(density=0.3, make=M.mlp, layer="fc1", state=None):
    return sparsify(make(), layer, density, state=state)


@pytest.mark.parametrize("make,layer", [(M.mlp, "fc1"), (M.cnn, "conv2")])
def test_sparsify_masks_the_smallest_weights(make, layer):
    f = make()
    r = sparsify(f, layer, 0.3)
    w = weight_arrays(f)[f"{layer}.weight"]
    mask = mask_of(r.model, layer)
    assert r.tag == "semantic" and mask.sum() == round(0.3 * w.size)
    assert np.abs(w[mask == 1]).min() >= np.abs(w[mask == 0]).max()
    dense = with_weights(f, {f"{layer}.weight": w * mask})
    x = M.inputs(f)
    np.testing.assert_allclose(M.run(r.model, x), M.run(dense, x), rtol=0, atol=1e-10)


def test_masked_weights_get_no_gradient_and_sgd_steps_the_masked_dense_gradient():
    r = _sparse()
    x = M.inputs(r.model)
    mask = mask_of(r.model, "fc1")
    g = M.gradients(r.model, x)["fc1.weight"]
    assert not g[mask == 0].any() and g[mask == 1].any()
    dense = dense_gradient(r.model, "fc1", x, M.labels(r.model))
    np.testing.assert_allclose(g, dense * mask, rtol=0, atol=1e-10)
    opt = mb.train.SGD(lr=0.1)
    w, _ = M.step(r.model, opt, {}, x)
    before = weight_arrays(r.model)["fc1.weight"]
    np.testing.assert_allclose(w["fc1.weight"], before - 0.1 * dense * mask, rtol=0, atol=1e-10)


def test_rigl_drops_the_smallest_and_regrows_the_largest_gradients_at_zero():
    r = _sparse()
    x, y = M.inputs(r.model), M.labels(r.model)
    g = dense_gradient(r.model, "fc1", x, y)
    old_mask, w = mask_of(r.model, "fc1"), weight_arrays(r.model)["fc1.weight"]
    u = rigl(r.model, "fc1", 0.25, g)
    new_mask, w_new = mask_of(u.model, "fc1"), weight_arrays(u.model)["fc1.weight"]
    k = u.detail["grown"]
    assert k == round(0.25 * old_mask.sum()) and new_mask.sum() == old_mask.sum()
    dropped, grown = (old_mask == 1) & (new_mask == 0), (old_mask == 0) & (new_mask == 1)
    assert dropped.sum() == grown.sum() == k
    assert np.abs(w[dropped]).max() <= np.abs(w[(old_mask == 1) & ~dropped]).min()
    assert np.abs(g[grown]).min() >= np.abs(g[(old_mask == 0) & ~grown]).max()
    assert not w_new[grown].any() and u.tag == "semantic"


def test_regrowing_alone_is_exact():
    r = _sparse()
    w = weight_arrays(r.model)["fc1.weight"]
    mask = mask_of(r.model, "fc1")
    smallest = np.argsort(np.where(mask == 1, np.abs(w), np.inf).ravel())[:3]
    w.ravel()[smallest] = 0                       # the weights RigL will drop are zero
    f = with_weights(r.model, {"fc1.weight": w})
    x = M.inputs(f)
    u = rigl(f, "fc1", 3 / mask.sum(), dense_gradient(f, "fc1", x, M.labels(f)))
    assert u.tag == "exact"
    np.testing.assert_allclose(M.run(u.model, x), M.run(f, x), rtol=0, atol=1e-10)


def test_regrown_state_starts_from_the_squared_gradient_not_a_stale_zero():
    """Under an old step counter (bias correction ~1), a regrown element with zero moments
    would step ~3x the learning rate; with v = g**2 it steps at most (1 - beta1) x lr."""
    opt = mb.train.Adam(lr=0.01, eps=1e-30)
    r = _sparse()
    f = r.model
    x, y = M.inputs(f), M.labels(f)
    f, state = M.trained_state(f, opt, x)
    state = {k: (np.full_like(v, 500) if k.endswith(".step") else v) for k, v in state.items()}
    g = dense_gradient(f, "fc1", x, y)
    u = rigl(f, "fc1", 0.25, g, state=state)
    grown = (mask_of(f, "fc1") == 0) & (mask_of(u.model, "fc1") == 1)
    dropped = (mask_of(f, "fc1") == 1) & (mask_of(u.model, "fc1") == 0)
    kept = (mask_of(f, "fc1") == 1) & ~dropped
    s = u.state
    assert not s["fc1.weight.m"][grown | dropped].any() and not s["fc1.weight.v"][dropped].any()
    np.testing.assert_allclose(s["fc1.weight.v"][grown], g[grown] ** 2, rtol=1e-12)
    np.testing.assert_array_equal(s["fc1.weight.m"][kept], state["fc1.weight.m"][kept])
    w, _ = M.step(u.model, opt, s, x, lr=0.01)
    step = np.abs(w["fc1.weight"] - weight_arrays(u.model)["fc1.weight"])[grown]
    assert step.max() <= 0.1 * 0.01 * 1.001
    stale = dict(s, **{"fc1.weight.v": np.where(grown, 0.0, s["fc1.weight.v"])})
    w, _ = M.step(u.model, opt, stale, x, lr=0.01)
    stale_step = np.abs(w["fc1.weight"] - weight_arrays(u.model)["fc1.weight"])[grown]
    assert stale_step.min() > 1.5 * 0.01


def test_sparse_errors():
    with pytest.raises(RewriteError, match="density=0"):
        sparsify(M.mlp(), "fc1", 0)
    with pytest.raises(RewriteError, match="masked already"):
        sparsify(_sparse().model, "fc1", 0.5)
    with pytest.raises(RewriteError, match="has no mask"):
        rigl(M.mlp(), "fc1", 0.1, np.zeros((8, 6)))
    with pytest.raises(RewriteError, match=r"gradient has shape \(2,\)"):
        rigl(_sparse().model, "fc1", 0.1, np.zeros(2))
    with pytest.raises(RewriteError, match=r"'relu1' is not a layer \(a gemm, conv or matmul"):
        sparsify(M.mlp(), "relu1", 0.5)
