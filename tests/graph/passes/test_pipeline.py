import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import GraphError
from mlcbook.graph.memory.plan import Plan
from mlcbook.graph.passes import OPTIONS, PIPELINE, Pass, PassContext, optimize

from .._models import MODELS, inputs, model, random_graph


@pytest.mark.parametrize("name", sorted(MODELS))
def test_each_pass_alone_and_the_pipeline_keep_the_meaning(name):
    f = model(name)
    x = inputs(f)
    want = mb.graph.interpret(f, *x)
    for p in PIPELINE:
        np.testing.assert_allclose(mb.graph.interpret(p(f), *x), want, rtol=1e-4, atol=1e-5,
                                   err_msg=p.name)
    for level in (1, 2, 3):
        np.testing.assert_allclose(mb.graph.interpret(optimize(f, level), *x), want,
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("seed", range(12))
def test_the_pipeline_keeps_the_meaning_of_random_graphs(seed):
    f = random_graph(seed)
    x = inputs(f, seed)
    got, want = mb.graph.interpret(optimize(f, 3), *x), mb.graph.interpret(f, *x)
    for g, w in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_opt_level_0_runs_no_pass():
    f = model("cnn_bn")
    ctx = PassContext()
    assert optimize(f, 0, ctx) is f and ctx.timings == []


def test_the_context_times_prints_and_dumps_every_pass(tmp_path, capsys):
    ctx = PassContext(verbose=True, dump_dir=tmp_path)
    optimize(model("cnn_bn"), 3, ctx)
    names = [p.name for p in PIPELINE]
    assert [t[0] for t in ctx.timings] == names
    out = capsys.readouterr().out
    assert "fold_batch_norm" in out and "calls ->" in out
    files = sorted(p.name for p in tmp_path.iterdir())
    k = names.index("fold_batch_norm")
    assert files[k] == f"{k + 1:02d}_fold_batch_norm.txt" and len(files) == len(names)
    assert "batch_norm" not in (tmp_path / files[k]).read_text().split("owner")[-1]
    assert "fold_constants" in ctx.report()


def test_a_bad_opt_level_is_refused():
    with pytest.raises(GraphError, match="opt_level must be 0, 1, 2 or 3, got 5"):
        optimize(model("mlp"), 5)


def test_a_pass_that_returns_something_else_is_named():
    bad = Pass("broken", lambda f: None, 1)
    with pytest.raises(GraphError, match="pass 'broken' returned NoneType"):
        PassContext().run(bad, model("mlp"))


def test_a_step_runs_from_its_opt_level_below_until_and_while_its_option_is_on():
    step = Pass("step", lambda f: f, 2, until=3, option="concat_in_place")
    on, off = {"concat_in_place": True}, {"concat_in_place": False}
    assert [step.runs(level, on) for level in (1, 2, 3)] == [False, True, False]
    assert not step.runs(2, off)


def test_the_context_fills_in_the_default_options():
    assert PassContext().options == OPTIONS
    assert PassContext(options={"pad_border_loops": False}).options == \
        dict(OPTIONS, pad_border_loops=False)


def test_a_step_that_makes_the_wrong_thing_is_named():
    bad = Pass("broken", lambda m: m, 0, makes=Plan)
    with pytest.raises(GraphError, match="pass 'broken' returned IRModule, not a Plan"):
        PassContext().run(bad, mb.graph.IRModule({"main": model("mlp")}))
