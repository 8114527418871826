"""Rewrites of imported MatMul+Add models (built with onnx.helper, and the project's MLP
exported by mb.to_onnx with its Gemms rewritten to MatMul+Add) and of a one-head attention
block: exact outputs in float64, transported gradients and optimizer state."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.train.rewrite import coupled_group, deepen, prune, split, weight_arrays, widen
from mlcbook.train.rewrite import with_weights

from . import _models as M
from . import _onnx_models as O
from .test_widen import OPTIMIZERS, _close

CASES = [(O.matmul_mlp, "mm1"), (O.matmul_mlp, "mm2"), (O.weight_left, "mm1"),
         (O.batched, "mm1"), (O.exported_mlp, "fc1.mm"), (O.exported_mlp, "fc2.mm"),
         (O.attention, "v.mm"), (O.einsum_mlp, "e1_matmul"),
         (O.einsum_transposed, "e1_matmul")]
IDS = [f"{m.__name__}-{layer}" for m, layer in CASES]


def _units(f, layer):
    return coupled_group(f, layer).units


@pytest.mark.parametrize("make,layer", CASES, ids=IDS)
@pytest.mark.parametrize("noise", [0.0, 0.3])
def test_widen_keeps_the_outputs_in_float64(make, layer, noise):
    f = make()
    x = M.inputs(f)
    r = widen(f, layer, 2 * _units(f, layer) + 1, seed=1, noise=noise)
    assert r.tag == "exact"
    assert _units(r.model, layer) == 2 * _units(f, layer) + 1
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)


@pytest.mark.parametrize("make,layer", CASES, ids=IDS)
def test_new_gradient_is_the_transported_old_gradient(make, layer):
    f = make()
    x = M.inputs(f)
    r = widen(f, layer, 3 * _units(f, layer) - 1, seed=2)
    _close(M.gradients(r.model, x), r.like_gradient(M.gradients(f, x), 1))


@pytest.mark.parametrize("make,layer", CASES[:5], ids=IDS[:5])
@pytest.mark.parametrize("opt", ["momentum", "adam"])
def test_one_step_after_widening_equals_the_transported_step(make, layer, opt):
    optimizer, power = OPTIMIZERS[opt]
    f0 = make()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, optimizer, x)
    width = 3 * _units(f, layer) - 1
    r = widen(f, layer, width, state=state, seed=3)
    w_new, s_new = M.step(r.model, optimizer, r.state, x)
    w_old, s_old = M.step(f, optimizer, state, x)
    _close(s_new, widen(f, layer, width, state=s_old, seed=3).state)
    before_new, before_old = weight_arrays(r.model), weight_arrays(f)
    _close({k: w_new[k] - before_new[k] for k in w_new},
           r.like_gradient({k: w_old[k] - before_old[k] for k in w_old}, power))


@pytest.mark.parametrize("make,layer", CASES, ids=IDS)
def test_split_is_exact(make, layer):
    f = make()
    x = M.inputs(f)
    r = split(f, layer, unit=1, ratio=0.3)
    assert r.tag == "exact" and _units(r.model, layer) == _units(f, layer) + 1
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)


@pytest.mark.parametrize("make,layer,sink,axis", [
    (O.matmul_mlp, "mm1", "w2", 0), (O.weight_left, "mm1", "w2", 1),
    (O.attention, "v.mm", "wo", 0)], ids=["right", "left", "attention"])
def test_pruning_silent_units_is_exact_and_slices_the_state(make, layer, sink, axis):
    f0 = make()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, mb.train.Adam(lr=0.01), x)
    w = weight_arrays(f)[sink]
    np.moveaxis(w, axis, 0)[[0, 2]] = 0
    f = with_weights(f, {sink: w})
    r = prune(f, layer, remove=[0, 2], state=state)
    assert r.tag == "exact" and _units(r.model, layer) == _units(f, layer) - 2
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)
    source = coupled_group(f, layer).params("source")[0]
    ax = coupled_group(f, layer).slices[0].axis
    keep = np.setdiff1d(np.arange(_units(f, layer)), [0, 2])
    np.testing.assert_array_equal(r.state[f"{source}.m"],
                                  np.take(state[f"{source}.m"], keep, axis=ax))


def test_einsum_projections_couple_through_their_reshapes_and_transposed_weights():
    g = coupled_group(O.einsum_transposed(), "e1_matmul")
    assert {(s.param, s.axis, s.kind) for s in g.slices} == {
        ("w1", 0, "source"), ("b1", 0, "source"), ("w2", 1, "sink")}
    assert [r[0] for r in g.reshapes] == ["e1_y_reshape", "e2_a_reshape"]
    shapes = {c.name: c.type.shape for c in widen(O.einsum_mlp(), "e1_matmul", 11).model.calls()}
    assert shapes["e1_y_reshape"] == (2, 4, 11) and shapes["e2_a_reshape"] == (8, 11)


def test_bias_of_a_left_weight_is_coupled_on_its_broadcast_axis():
    g = coupled_group(O.weight_left(), "mm1")
    assert {(s.param, s.axis, s.kind) for s in g.slices} == {
        ("w1", 0, "source"), ("b1", 0, "source"), ("w2", 1, "sink")}


def test_value_projection_flows_through_the_attention_product_to_the_output_projection():
    g = coupled_group(O.attention(), "v.mm")
    assert {(s.param, s.axis, s.kind) for s in g.slices} == {
        ("wv", 1, "source"), ("bv", 0, "source"), ("wo", 0, "sink")}


@pytest.mark.parametrize("make,at", [(O.matmul_mlp, "relu1"), (O.batched, "relu1"),
                                     (O.attention, "att"), (O.attention, "o.add")])
def test_the_block_deepen_adds_to_an_imported_model_can_be_widened(make, at):
    f = make()
    x = M.inputs(f)
    r = deepen(f, at, hidden=5)
    names = {c.name for c in r.model.calls()}
    inner = f"{at}.res.a.mm" if f"{at}.res.a.mm" in names else f"{at}.res.a"
    wide = widen(r.model, inner, 9, seed=0, noise=0.2)
    np.testing.assert_allclose(M.run(wide.model, x), M.run(f, x), rtol=0, atol=1e-10)


def test_deepened_token_block_trains():
    f = deepen(O.batched(), "relu1").model
    x = M.inputs(f)
    grads = M.gradients(f, x)
    assert np.abs(grads["relu1.res.b.weight"]).max() > 0
    assert np.abs(grads["relu1.res.a.weight"]).max() == 0


# a transformer block: the residual stream (under LayerNorm: exact when every unit is
# replicated alike), whole attention heads (named by the reshape that splits them off),
# the MLP's hidden units
BLOCK = [("embed.mm", 8), ("q.r", 4), ("v.r", 3), ("fc1.mm", 9)]


@pytest.mark.parametrize("layer,width", BLOCK, ids=[b[0] for b in BLOCK])
def test_transformer_block_widens_exactly(layer, width):
    f = O.transformer()
    x = M.inputs(f)
    r = widen(f, layer, width, seed=0, noise=0.2)
    assert r.tag == "exact" and _units(r.model, layer) == width
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)
    r = widen(f, layer, width, seed=0)              # without noise the replicas' gradients
    _close(M.gradients(r.model, x), r.like_gradient(M.gradients(f, x), 1))   # are the old


def test_widening_heads_keeps_whole_heads_and_resizes_the_reshapes():
    f = O.transformer()
    g = coupled_group(f, "k.r")
    assert g.units == 2 and {(s.param, s.block) for s in g.slices} == {
        (p, 2) for p in ("wq", "bq", "wk", "bk", "wv", "bv", "wo")}
    r = widen(f, "k.r", 3, replicate=[1])
    shapes = {c.name: c.type.shape for c in r.model.calls()}
    assert shapes["q.r"] == (2, 3, 3, 2) and shapes["att.m"] == (2, 3, 6)
    wq, old = weight_arrays(r.model)["wq"], weight_arrays(f)["wq"]
    np.testing.assert_array_equal(wq[:, 4:], old[:, 2:])        # head 1's columns, again


def test_uneven_stream_widening_under_layer_norm_is_semantic():
    f = O.transformer()
    assert widen(f, "embed.mm", 5, replicate=[0]).tag == "semantic"


def test_transformer_block_after_rewrites_steps_like_the_transported_one():
    optimizer, _ = OPTIMIZERS["adam"]
    f0 = O.transformer()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, optimizer, x)
    r = widen(f, "q.r", 3, state=state, seed=1)
    _, s_new = M.step(r.model, optimizer, r.state, x)
    _, s_old = M.step(f, optimizer, state, x)
    _close(s_new, widen(f, "q.r", 3, state=s_old, seed=1).state)


@pytest.mark.parametrize("how", ["split", "prune"])
def test_heads_split_exactly_and_prune_silent_heads_exactly(how):
    f = O.transformer()
    x = M.inputs(f)
    if how == "prune":
        wo = weight_arrays(f)["wo"]
        wo[2:4] = 0                                       # head 1 says nothing
        f = with_weights(f, {"wo": wo})
    r = split(f, "v.r", unit=0, ratio=0.3) if how == "split" else prune(f, "v.r", remove=[1])
    assert r.tag == "exact"
    np.testing.assert_allclose(M.run(r.model, x), M.run(f, x), rtol=0, atol=1e-10)


def test_a_deepened_transformer_blocks_stream_still_widens_exactly():
    f = O.transformer()
    x = M.inputs(f)
    wide = widen(deepen(f, "res2", hidden=5).model, "embed.mm", 8, seed=0)
    assert wide.tag == "exact"
    np.testing.assert_allclose(M.run(wide.model, x), M.run(f, x), rtol=0, atol=1e-10)


def test_a_compiled_imported_matmul_mlp_is_widened_mid_training_and_keeps_learning():
    sklearn = pytest.importorskip("sklearn.datasets")
    (x, y), _ = mb.train.digits_split(sklearn.load_digits())
    f = O.digits_mlp()
    trainer = mb.train.compile_step(f, optimizer=mb.train.Adam(lr=0.01),
                                    data=mb.train.Batches(x, y, 32, seed=0))
    rt = mb.train.rewrite.Runtime(trainer)
    before = rt.run(30)
    model = rt.current_model()
    rt.apply(lambda m, state: widen(m, "fc1.mm", 16, state=state, seed=0))
    assert rt.log[-1]["tag"] == "exact" and rt.trainer.params["fc1.w"].shape == (64, 16)
    np.testing.assert_allclose(M.run(rt.current_model(), x[:32]), M.run(model, x[:32]),
                               rtol=0, atol=1e-5)
    after = rt.run(30)
    assert np.mean(after[-10:]) < np.mean(before[:10]) - 0.5


def test_splitting_a_head_with_an_offset_moves_the_whole_heads_apart():
    f = O.transformer()
    r = split(f, "v.r", unit=0, ratio=0.5, offset=0.1, seed=0)
    assert r.tag == "epsilon"
    wv = weight_arrays(r.model)["wv"]
    d = wv[:, 0:2] - weight_arrays(f)["wv"][:, 0:2]
    np.testing.assert_allclose(wv[:, 4:6], weight_arrays(f)["wv"][:, 0:2] - d, atol=1e-12)
    assert np.abs(d).min() > 0                       # every feature of head 0 moved
