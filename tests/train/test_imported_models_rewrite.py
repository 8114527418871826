"""Issue 32's judgement on rewrites: a MatMul-built MLP and the held-out ViT block (class
token by Expand or Tile, two-head attention, LayerNorm, MLP) imported from ONNX for
training are widened (hidden units, heads, the residual stream) and deepened with their
float64 outputs unchanged to 1e-10, and keep training when rewritten mid-run."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.graph.expr import Call, Constant, Function, Var
from mlcbook.graph.interpret import interpret
from mlcbook.ops.types import Attrs, TensorType
from mlcbook.train.rewrite import Runtime, coupled_group, deepen, widen

from . import _imported_models as I

sklearn = pytest.importorskip("sklearn.datasets")

MODELS = {"mlp": I.mlp, "vit": I.vit, "vit_tile": lambda: I.vit(class_token="tile"),
          "vit_fused": lambda: I.vit(fused=True)}
# (model, layer, new width): hidden units, whole heads (named by the reshape splitting them
# off), the residual stream through the class token's concat (every unit replicated alike,
# as LayerNorm needs for exactness)
WIDEN = [("mlp", "fc1.mm", 37), ("vit", "fc1.mm", 45), ("vit", "q.r", 3), ("vit", "v.r", 4),
         ("vit", "embed.mm", 32), ("vit_tile", "embed.mm", 32), ("vit_tile", "o.mm", 32),
         ("vit_fused", "att_q_heads", 3), ("vit_fused", "att_v_heads", 4),
         ("vit_fused", "embed.mm", 32), ("vit_fused", "fc1.mm", 40)]
DEEPEN = [("mlp", "relu1"), ("vit", "res1"), ("vit", "res2"), ("vit", "att.m"),
          ("vit", "cls_out"), ("vit_tile", "pos_add"), ("vit_fused", "att_y"),
          ("vit_fused", "res1")]


def _float64(name, batch=4):
    return I.float64(mb.from_onnx(MODELS[name](), batch_size=batch, training=True)["main"])


def _images(batch=4):
    return np.random.default_rng(0).random((batch, 1, 8, 8))


@pytest.mark.parametrize("name,layer,width", WIDEN, ids=[f"{m}-{k}" for m, k, _ in WIDEN])
def test_widening_keeps_the_float64_outputs(name, layer, width):
    f, x = _float64(name), _images()
    r = widen(f, layer, width, seed=0, noise=0.2)
    assert r.tag == "exact" and coupled_group(r.model, layer).units == width
    np.testing.assert_allclose(interpret(r.model, x), interpret(f, x), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name,at", DEEPEN, ids=[f"{m}-{k}" for m, k in DEEPEN])
def test_deepening_keeps_the_float64_outputs(name, at):
    f, x = _float64(name), _images()
    r = deepen(f, at, hidden=8)
    assert r.tag == "exact" and len(r.model.weights) == len(f.weights) + 4
    np.testing.assert_allclose(interpret(r.model, x), interpret(f, x), rtol=0, atol=1e-10)


def test_the_stream_group_takes_in_the_class_token_and_the_positions():
    g = coupled_group(_float64("vit"), "embed.mm")
    slices = {(s.param, s.axis, s.kind) for s in g.slices}
    assert {("cls", 2, "source"), ("pos", 1, "source"), ("o.w", 1, "source"),
            ("fc2.b", 0, "source"), ("q.w", 0, "sink"), ("head.w", 0, "sink")} <= slices
    assert ("cls_b", 2, 0, 1, (4, 1, 16)) in g.reshapes       # the expand's static shape


def _tokens(make_tail):
    """x (2, 3, 4) -> matmul by weight w ('fc') -> ``make_tail(h)`` -> matmul by w2 -> mean
    over the tokens."""
    rng = np.random.default_rng(1)
    x = Var("x", TensorType((2, 3, 4), "float64"))
    h = Call("matmul", (x, Constant(rng.random((4, 4)), "w")), Attrs(), "fc")
    t = make_tail(h)
    y = Call("matmul", (t, Constant(rng.random((t.shape[-1], 3)), "w2")), Attrs(), "out")
    return Function((x,), Call("mean", (y,), Attrs(axes=(1,), keepdims=0), "pool"), "tokens")


def test_a_class_token_tiled_along_the_units_cannot_be_followed():
    def tail(h):      # a (1, 1, 2) token repeated twice along the units, then prepended
        tok = Call("tile", (Constant(np.ones((1, 1, 2)), "tok"),), Attrs(repeats=(2, 1, 2)),
                   "tok_b")
        return Call("concat", (tok, h), Attrs(axis=1), "prepend")
    with pytest.raises(RewriteError, match=r"the units of layer 'fc' are added to the output "
                                           r"of tile 'tok_b'; following a group back through "
                                           r"it is not supported\. Instead"):
        coupled_group(_tokens(tail), "fc")


def test_units_gathered_along_their_own_axis_cannot_be_followed():
    def tail(h):
        return Call("gather", (h, Constant(np.array([0, 2]))), Attrs(axis=2), "pick")
    with pytest.raises(RewriteError, match=r"flow into gather 'pick', whose coupling is "
                                           r"unknown\. Instead: .*gather on other axes"):
        coupled_group(_tokens(tail), "fc")


def test_units_gathered_along_another_axis_are_followed():
    def tail(h):
        return Call("gather", (h, Constant(np.array([0, 2]))), Attrs(axis=1), "pick")
    f = _tokens(tail)
    assert {(s.param, s.axis) for s in coupled_group(f, "fc").slices} == {("w", 1), ("w2", 0)}
    x = np.random.default_rng(2).random((2, 3, 4))
    np.testing.assert_allclose(interpret(widen(f, "fc", 9, seed=0).model, x), interpret(f, x),
                               rtol=0, atol=1e-12)


def _grouped_query(kv_heads):
    """x (2, 3, 8) -> q projection 'fc' split into 4 heads of 2, k and v into
    ``kv_heads`` -> fused attention -> heads merged -> output projection -> mean."""
    rng = np.random.default_rng(3)
    x = Var("x", TensorType((2, 3, 8), "float64"))

    def heads(name, n):
        p = Call("matmul", (x, Constant(rng.random((8, 2 * n)), f"{name}.w")), Attrs(), name)
        r = Call("reshape", (p,), Attrs(shape=(2, 3, n, 2)), f"{name}.r")
        return Call("transpose", (r,), Attrs(perm=(0, 2, 1, 3)), f"{name}.h")
    att = Call("attention", (heads("q", 4), heads("k", kv_heads), heads("v", kv_heads)),
               Attrs(), "att")
    merged = Call("reshape", (Call("transpose", (att,), Attrs(perm=(0, 2, 1, 3)), "att.t"),),
                  Attrs(shape=(2, 3, 8)), "att.m")
    y = Call("matmul", (merged, Constant(rng.random((8, 3)), "o.w")), Attrs(), "o")
    return Function((x,), Call("mean", (y,), Attrs(axes=(1,), keepdims=0), "pool"), "gqa")


def test_heads_of_fused_attention_widen_exactly():
    f, x = _grouped_query(4), np.random.default_rng(4).random((2, 3, 8))
    r = widen(f, "k.r", 6, seed=0, noise=0.1)
    assert r.tag == "exact" and r.model.weights["v.w"].shape == (8, 12)
    np.testing.assert_allclose(interpret(r.model, x), interpret(f, x), rtol=0, atol=1e-10)


def test_heads_shared_by_grouped_query_attention_cannot_be_widened_alone():
    with pytest.raises(RewriteError, match=r"attention 'att' shares key/value heads among "
                                           r"query heads, or masks each head apart.*Instead"):
        coupled_group(_grouped_query(2), "q.r")


@pytest.fixture(scope="module")
def digits():
    return mb.train.digits_split(sklearn.load_digits(), image=True)


def _composed(*rewrites):
    """One rewrite doing ``rewrites`` in turn, each exact (one recompile for them all)."""
    def run(model, state):
        for rewrite in rewrites:
            r = rewrite(model, state)
            assert r.tag == "exact", r.summary(model)
            model, state = r.model, r.state
        return r
    return run


@pytest.mark.parametrize("name,rewrite", [
    ("mlp", _composed(lambda m, s: widen(m, "fc1.mm", 40, state=s, seed=0, noise=0.1),
                      lambda m, s: deepen(m, "relu1", state=s, hidden=16))),
    ("vit", _composed(lambda m, s: widen(m, "q.r", 3, state=s, seed=0, noise=0.1),
                      lambda m, s: widen(m, "embed.mm", 32, state=s, seed=0, noise=0.1),
                      lambda m, s: deepen(m, "res2", state=s, hidden=16)))],
    ids=["mlp", "vit"])
def test_a_model_rewritten_mid_training_keeps_its_outputs_and_keeps_learning(
        name, rewrite, digits):
    (x, y), (x_test, y_test) = digits
    mod = mb.from_onnx(MODELS[name](), batch_size=I.BATCH, training=True)
    trainer = mb.train.compile_step(mod, "cross_entropy", mb.train.Adam(lr=0.01),
                                    data=mb.train.Batches(x, y, I.BATCH, seed=0))
    rt = Runtime(trainer)
    before = rt.run(40)
    old, accuracy = rt.trainer.predict(x_test), rt.trainer.accuracy(x_test, y_test)
    rt.apply(lambda model, state: rewrite(model, state))
    np.testing.assert_allclose(rt.trainer.predict(x_test), old, rtol=0, atol=1e-4)
    after = rt.run(40)
    assert np.mean(after[-10:]) < np.mean(before[-10:])
    assert rt.trainer.accuracy(x_test, y_test) >= accuracy
