import numpy as np
import pytest

import mlcbook as mb

from ._models import MODELS, inputs, model, random_graph


def _close(got, want):
    for g, w in zip(got if isinstance(got, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_at_every_opt_level_matches_the_reference(name, level):
    f = model(name)
    x = inputs(f)
    _close(mb.compile(f, opt_level=level)(*x), mb.graph.interpret(f, *x))


@pytest.mark.parametrize("seed", range(10))
def test_random_graphs_compile_to_what_the_reference_computes(seed):
    f = random_graph(seed)
    x = inputs(f, seed)
    _close(mb.compile(f)(*x), mb.graph.interpret(f, *x))


def test_fusion_launches_fewer_kernels_and_plans_less_memory():
    f = model("residual")
    plain, opt = mb.compile(f, opt_level=0), mb.compile(f, opt_level=3)
    assert opt.stats["calls"] < plain.stats["calls"] == opt.stats["ops"]
    assert opt.stats["arena_bytes"] < plain.stats["arena_bytes"] == plain.stats["unplanned_bytes"]
    assert [p for p, _ in opt.stats["passes"]][:3] == ["lower_qdq", "lower_integer_ops",
                                                      "fold_constants"]


def test_a_planned_executable_saves_and_loads(tmp_path):
    f = model("cnn_bn")
    exe = mb.compile(f)
    x = inputs(f)
    path = exe.save(tmp_path / "m.mlcb")
    np.testing.assert_array_equal(mb.load(path)(*x), exe(*x))


def test_dump_dir_writes_the_graph_after_each_pass(tmp_path):
    mb.compile(model("mlp"), dump_dir=tmp_path)
    assert (tmp_path / "03_fold_constants.txt").read_text().startswith("def main(")


def test_a_main_function_with_another_name_is_compiled_whole():
    x = mb.graph.Var("x", mb.graph.TensorType((4, 4)))
    f = mb.graph.Function([x], mb.graph.op.relu(mb.graph.op.exp(x)), name="loss_grad")
    a = np.ones((4, 4), "float32")
    np.testing.assert_allclose(mb.compile(f)(a), np.exp(a))


def test_a_fused_group_ending_in_a_0d_value():
    w = mb.graph.Var("w", mb.graph.TensorType((4,)))
    op = mb.graph.op
    f = mb.graph.Function([w], op.exp(op.sum(op.mul(w, w), keepdims=0)))
    a = np.arange(4, dtype="float32") / 4
    np.testing.assert_allclose(mb.compile(f)(a), np.exp(np.sum(a * a)), rtol=1e-6)
