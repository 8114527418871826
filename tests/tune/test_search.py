"""The search's state and warm start: each point's features computed once per search, and
the first round starting from the prior (analytic) model's best points."""

import itertools
import random

import pytest

from mlcbook.grading.ch07 import row_sum
from mlcbook.tune import search as search_mod
from mlcbook.tune.cost_model import AnalyticModel
from mlcbook.tune.measure import MeasureResult
from mlcbook.tune.search import Scorer, TaskSearch, propose
from mlcbook.tune.space import Space

from ._util import matmul


def _parallel_and_unroll(knobs, name, space):
    """A tiny space of 2 x 4 points: the row loop in parallel or not, the reduce loop's
    unrolled part 1, 2, 4 or 8 (hints: serial, not unrolled, the analytic model's worst)."""
    sch = knobs.sch
    i, j = sch.get_loops(sch.get_block(name))
    if knobs.choice(f"{name}.parallel", [0, 1], hint=0):
        sch.parallel(i)
    j0, j1 = sch.split(j, [None, knobs.choice(f"{name}.unroll", [1, 2, 4, 8], hint=1)])
    sch.unroll(j1)


def _tiny_space():
    return Space(row_sum(64, 64), rules={"row_reduction": _parallel_and_unroll})


def test_the_first_round_holds_the_analytic_models_best_point():
    space = _tiny_space()
    every = [space.point({"S.parallel": p, "S.unroll": u})
             for p, u in itertools.product([0, 1], [0, 1, 2, 3])]
    scores = Scorer(AnalyticModel()).scores(every)
    best = every[int(scores.argmax())]
    assert best.decisions == {"S.parallel": 1, "S.unroll": 3}  # two threads, 8 unrolled
    # no annealing steps: the pick can only come from the warm-start pool
    picks = propose(space, Scorer(AnalyticModel()), [], set(), random.Random(0), 1,
                    epsilon=0.0, steps=0, warm_start=32)
    assert [p.key for p in picks] == [best.key]


class _FakeMeasurer:
    """Times every candidate at 1 ms: enough to drive the search without building it."""

    def measure(self, jobs):
        return [MeasureResult(1e-3) for _ in jobs]


def test_a_search_computes_each_points_features_once(monkeypatch):
    calls = []

    def counted(func):
        calls.append(func)
        return features(func)

    features = search_mod.features
    monkeypatch.setattr(search_mod, "features", counted)
    space = _tiny_space()
    task = TaskSearch(space.func, space=space, model="analytic", warm_start=4, population=2,
                      steps=1)
    for _ in range(3):
        assert task.step(_FakeMeasurer(), 1) == 1
    assert len(task.result.history) == 3
    assert len(calls) == len(task.scorer)  # one per distinct point, ever seen


def test_a_bad_warm_start_is_refused():
    from mlcbook.tune.errors import TuneArgumentError
    with pytest.raises(TuneArgumentError, match="warm_start"):
        TaskSearch(matmul(8), warm_start=-1)


def test_a_model_tuning_stops_when_its_seconds_run_out():
    from mlcbook.frontend import examples
    from mlcbook.tune.tasks import tune_model
    import mlcbook as mb
    mod = mb.from_onnx(examples.mlp(batch=4))
    assert tune_model(mod, 100, seconds=1e-9, progress=False) == {}  # no batch started


def test_a_bad_seconds_budget_is_refused():
    from mlcbook.tune.errors import TuneArgumentError
    from mlcbook.tune.tasks import tune_model
    with pytest.raises(TuneArgumentError, match="seconds"):
        tune_model(None, 1, seconds=0, progress=False)


class _Recorder(_FakeMeasurer):
    def __init__(self):
        self.programs = []

    def measure(self, jobs):
        self.programs += [j.program for j in jobs]
        return super().measure(jobs)


@pytest.mark.parametrize("model", ["analytic", "random"])
def test_a_fresh_search_measures_the_default_point_and_its_neighbours_first(model):
    import mlcbook as mb
    space = _tiny_space()
    rec = _Recorder()
    task = TaskSearch(space.func, space=space, model=model, warm_start=4, population=2,
                      steps=1, epsilon=0.0)
    first = [space.default_point()] + space.neighbours(space.default_point())
    assert len(first) == 5   # the other parallel choice, the three other unrolls
    task.step(rec, 4)   # half of a round for the neighbourhood, half for the model
    same = [mb.tir.structural_equal(a, b.func) for a, b in zip(rec.programs, first[:2])]
    # random search stays random: its first picks are draws, not the default's neighbourhood
    assert all(same) if model == "analytic" else not all(same)
    if model == "analytic":
        task.step(rec, 4)
        task.step(rec, 2)
        measured = {r.key for r in task.db.records(task.result.workload)}
        assert {p.key for p in first} <= measured


class _OneFast(_Recorder):
    """1 ms for every program but ``fast`` (0.5 ms)."""

    def __init__(self, fast):
        super().__init__()
        self.fast = fast

    def measure(self, jobs):
        import mlcbook as mb
        self.programs += [j.program for j in jobs]
        return [MeasureResult(5e-4 if mb.tir.structural_equal(j.program, self.fast) else 1e-3)
                for j in jobs]


def test_the_walk_from_the_default_goes_on_from_the_best_neighbour():
    import mlcbook as mb
    space = _tiny_space()
    task = TaskSearch(space.func, space=space, model="analytic", warm_start=4, population=2,
                      steps=1, epsilon=0.0)
    first = [space.default_point()] + space.neighbours(space.default_point())
    rec = _OneFast(first[1].func)
    for _ in range(len(first)):   # rounds of one: the neighbourhood only
        task.step(rec, 1)
    assert task.result.best.key == first[1].key
    measured = {r.key for r in task.db.records(task.result.workload)}
    after = [q for q in space.neighbours(first[1]) if q.key not in measured]
    task.step(rec, 1)
    assert after and mb.tir.structural_equal(rec.programs[-1], after[0].func)
