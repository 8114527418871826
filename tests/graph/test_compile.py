import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import GraphError

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


def _big_pad_conv():
    rng = np.random.default_rng(0)
    x = mb.graph.Var("x", mb.graph.TensorType((1, 16, 48, 48)))
    w = mb.graph.Constant((rng.standard_normal((16, 16, 3, 3)) * 0.1).astype("float32"))
    return mb.graph.Function([x], mb.graph.op.conv(x, w, pads=(1, 1, 1, 1)))


def test_every_step_after_the_graph_passes_is_timed_and_written_out(tmp_path):
    exe = mb.compile(model("residual"), dump_dir=tmp_path)
    names = [p for p, _ in exe.stats["passes"]]
    assert names[-5:] == ["fuse_ops", "alias_outputs", "elide_concats", "plan_memory",
                          "schedule_kernels"]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == len(names)
    fused = (tmp_path / files[names.index("fuse_ops")]).read_text()
    assert 'call_tir("fused_conv' in fused
    planned = (tmp_path / files[names.index("plan_memory")]).read_text()
    assert planned.startswith("step 0: ") and " @ " in planned


def test_below_opt_level_2_each_op_is_legalized_and_no_arena_is_planned():
    exe = mb.compile(model("residual"), opt_level=1)
    names = [p for p, _ in exe.stats["passes"]]
    assert "legalize" in names and "fuse_ops" not in names and "plan_memory" not in names
    assert not exe.plan.offsets


def test_pad_border_loops_is_an_option_of_the_compile():
    f = _big_pad_conv()
    cut, fused = mb.compile(f), mb.compile(f, options={"pad_border_loops": False})
    assert str(cut.kernels["conv_nchwc"].lowered) != str(fused.kernels["conv_nchwc"].lowered)
    assert str(cut.kernels["to_blocked"].lowered) == str(fused.kernels["to_blocked"].lowered)
    x = inputs(f)
    _close(fused(*x), mb.graph.interpret(f, *x))


def test_two_level_sums_is_an_option_of_the_compile():
    """A long mean sums in two levels (into partial sums first), unless the option turns it
    off; both compute the mean."""
    x = mb.graph.Var("x", mb.graph.TensorType((2, 1 << 15)))
    f = mb.graph.Function([x], mb.graph.op.mean(x, axes=(1,)))
    two, one = mb.compile(f), mb.compile(f, options={"two_level_sums": False})
    scripts = [str(exe.kernels["mean"].lowered) for exe in (two, one)]
    assert "mean_sum_rf" in scripts[0] and "mean_sum_rf" not in scripts[1]
    a = np.random.default_rng(0).random((2, 1 << 15), np.float32)
    for exe in (two, one):
        np.testing.assert_allclose(exe(a)[:, 0], a.astype(np.float64).mean(axis=1), rtol=1e-5)


def test_an_unknown_option_is_named():
    with pytest.raises(GraphError, match="unknown compile option.*'concat_in_placee'.*"
                                            "Instead: use one of concat_in_place"):
        mb.compile(model("mlp"), options={"concat_in_placee": False})


def test_the_cyclic_collector_is_paused_while_a_compile_works(monkeypatch):
    import gc
    import importlib
    compile_module = importlib.import_module("mlcbook.graph.compile")  # (not mb.compile)
    seen, make_plan = [], compile_module.make_plan

    def planning(*args):
        seen.append(gc.isenabled())
        return make_plan(*args)
    monkeypatch.setattr(compile_module, "make_plan", planning)
    mb.compile(model("residual"))
    assert seen == [False] and gc.isenabled()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_compile_leaves_the_collector_as_it_found_it(enabled):
    import gc
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        mb.compile(model("residual"))
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
