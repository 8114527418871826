"""Search and records: tuning improves over trials, records round-trip and resume, and
mb.compile applies them (and skips a stale one with a warning)."""

import json

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.frontend import examples
from mlcbook.graph.interpret import main_function
from mlcbook.tune.space import Space
from mlcbook.tune.database import DEFAULT_TRACE, Database, Record, apply_best, workload_key
from mlcbook.tune.errors import DatabaseError, TuneArgumentError
from mlcbook.tune.measure import Measurer
from mlcbook.tune.search import tune
from mlcbook.tune.tasks import extract_tasks

from ._util import matmul


@pytest.fixture(scope="module")
def measurer():
    """One worker for the module's tuning runs (each would start its own)."""
    with Measurer() as m:
        yield m


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, measurer):
    path = tmp_path_factory.mktemp("tune") / "records.jsonl"
    f = matmul(64)
    return f, path, tune(f, 8, model="analytic", database=str(path), batch=4, progress=False,
                         warm_start=8,
                         population=4, steps=2, measurer=measurer)


def test_search_improves_over_trials(tuned):
    _, _, r = tuned
    curve = r.curve()
    assert len(curve) == 8 and curve[-1] is not None
    assert curve[-1] <= min(s for s in curve if s is not None)
    assert r.best_seconds == curve[-1]


def test_database_round_trip_and_resume(tuned, measurer):
    f, path, r = tuned
    db = Database(str(path))
    assert len(db) == 8 and db.best(workload_key(f)).seconds == r.best_seconds
    r2 = tune(f, 2, model="analytic", database=db, batch=2, progress=False, population=4,
              steps=2, measurer=measurer)
    assert len(db) == 10 and len(r2.history) == 10
    keys = [rec.key for rec in db.records()]
    assert len(set(keys)) == len(keys)  # nothing measured twice


def test_best_record_replays(tuned):
    from mlcbook.tune.space import Space
    f, path, _ = tuned
    db = Database(str(path))  # the resume test may have added a better record
    got = apply_best(f, db)
    assert mb.tir.structural_equal(got, Space(f).point(db.best(workload_key(f)).decisions).func)


def test_a_baseline_records_the_default_schedule_as_the_spaces_default_point(measurer):
    from mlcbook.graph.kernels.default_schedule import default_schedule
    from mlcbook.tune.space import Space
    f = matmul(16)
    db = Database()
    r = tune(f, 1, model="random", database=db, batch=1, progress=False, baseline=True,
             measurer=measurer)
    recs = db.records(workload_key(f))
    assert len(recs) == 2 and recs[0].decisions == Space(f).default_point().decisions
    replayed = mb.Trace.from_json(recs[0].trace).apply(f).func
    assert mb.tir.structural_equal(replayed, default_schedule(f))
    assert r.default_seconds == recs[0].seconds and len(r.history) == 1
    db.add(Record(recs[0].workload, recs[0].decisions, recs[0].trace, 1e-12))  # now fastest
    assert mb.tir.structural_equal(apply_best(f, db), default_schedule(f))
    r2 = tune(f, 1, model="random", database=db, batch=1, progress=False, baseline=True,
              measurer=measurer)
    assert len(db) == 4 and r2.default_seconds == 1e-12  # resumed: not measured again


def test_a_default_record_of_an_older_database_keeps_the_default_schedule():
    f = matmul(16)
    db = Database()
    db.add(Record(workload_key(f), {"C.rows": 0}, Space(f).sample(0).trace.as_json(), 1.0))
    assert apply_best(f, db) is not None
    db.add(Record(workload_key(f), {}, DEFAULT_TRACE, 1e-12))
    assert apply_best(f, db) is None


def test_a_broken_database_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text("not json\n")
    with pytest.raises(DatabaseError, match="line 1"):
        Database(str(p))


def test_bad_budget():
    with pytest.raises(TuneArgumentError, match="trials"):
        tune(matmul(8), -1)


def test_compile_applies_records_and_skips_a_stale_one(tmp_path, measurer):
    mod = mb.from_onnx(examples.mlp(batch=4))
    tasks = extract_tasks(mod)
    db = Database(str(tmp_path / "r.jsonl"))
    tune(tasks[0].func, 1, model="random", database=db, batch=1, progress=False,
         measurer=measurer)
    exe = mb.compile(mod, tuning_records=str(tmp_path / "r.jsonl"))
    assert exe.stats["tuned_kernels"] == 1
    graph = main_function(mod)[0]
    inputs = [np.random.default_rng(0).standard_normal(p.type.shape).astype(p.type.dtype)
              for p in graph.params]
    want = mb.graph.interpret(graph, *inputs)
    np.testing.assert_allclose(exe(*inputs), want, rtol=1e-4, atol=1e-4)
    # a record whose trace no longer fits its kernel
    best = db.best(tasks[0].workload)
    trace = json.loads(json.dumps(best.trace))
    for inst in trace["insts"]:
        if inst["kind"] == "sample_perfect_tile":
            inst["decision"] = [7, 11]
        elif inst["kind"] == "sample_categorical":
            inst["decision"] = 99
    stale = tmp_path / "stale.jsonl"
    rec = dict(best.__dict__, trace=trace, seconds=1e-9)
    stale.write_text(json.dumps(rec) + "\n")
    with pytest.warns(UserWarning, match="no longer applies"):
        exe = mb.compile(mod, tuning_records=str(stale))
    assert exe.stats["tuned_kernels"] == 0
    np.testing.assert_allclose(exe(*inputs), want, rtol=1e-4, atol=1e-4)


def test_compile_with_missing_records_file():
    with pytest.raises(DatabaseError, match="no tuning records"):
        mb.compile(mb.from_onnx(examples.mlp(batch=1)), tuning_records="/nonexistent.jsonl")


def _maybe_parallel_reduce(knobs, name, space):
    """A rule whose choice 1 is illegal: the reduce loop in parallel."""
    i, j = knobs.sch.get_loops(knobs.sch.get_block(name))
    if knobs.choice(f"{name}.parallel", [0, 1]):
        knobs.sch.parallel(j)


def test_proposals_are_unchecked_but_the_picks_are_legal():
    import random

    from mlcbook.errors import ScheduleError
    from mlcbook.grading.ch07 import row_sum
    from mlcbook.tune.cost_model import AnalyticModel
    from mlcbook.tune.search import Scorer, propose
    from mlcbook.tune.space import Space
    space = Space(row_sum(16, 8), rules={"row_reduction": _maybe_parallel_reduce})
    illegal = space.point({"S.parallel": 1}, checks=False)  # a proposal may be illegal...
    with pytest.raises(ScheduleError, match="reduc"):
        space.point(illegal.decisions)                     # ...but is never picked
    picks = propose(space, Scorer(AnalyticModel()), [], set(), random.Random(0), 2, 0.0, 4, 2)
    assert [p.decisions for p in picks] == [{"S.parallel": 0}]


def test_a_point_measured_several_times_counts_with_its_median():
    db = Database(None)
    for decisions, seconds in (({"a": 0}, 1.0), ({"a": 1}, 1.5), ({"a": 0}, 2.0),
                               ({"a": 0}, 2.5)):
        db.add(Record("w", decisions, {}, seconds))
    best = db.best("w")
    assert best.decisions == {"a": 1} and best.seconds == 1.5


class _Lucky:
    """A worker whose first measurement of the program ``lucky`` is fast, later ones slow;
    every other program takes 1.1 ms."""

    def __init__(self, lucky):
        self.lucky, self.seen = lucky, 0

    def __call__(self, job):
        from mlcbook.tune.measure import MeasureResult
        if mb.tir.structural_equal(job.program, self.lucky):
            self.seen += 1
            return MeasureResult(1e-3 if self.seen == 1 else 2e-3)
        return MeasureResult(1.1e-3)


def test_confirming_measures_the_best_points_again_and_keeps_the_fastest_median():
    import concurrent.futures as cf

    from mlcbook.tune.search import TaskSearch
    f = matmul(16)
    search = TaskSearch(f, model="random")
    p, q = search.space.sample(0), search.space.sample(1)
    worker = _Lucky(p.func)
    with cf.ThreadPoolExecutor(1) as pool:
        m = Measurer(executor=pool, worker=worker)
        for point in (p, q):
            search._learn(point, m.measure([mb.tune.measure.Job.of(f, point.func)])[0].seconds)
        assert search.result.best is p
        search.confirm(m, top=2)
    assert search.result.best is q and search.result.best_seconds == pytest.approx(1.1e-3)
    assert worker.seen == 3 and len(search.db) == 4
    assert search.db.best(search.result.workload).decisions == q.decisions


def test_confirm_must_be_a_count():
    with pytest.raises(TuneArgumentError, match="confirm must be a non-negative int"):
        tune(matmul(16), 1, confirm=-1)


def test_tune_model_confirm_must_be_a_count():
    from mlcbook.tune.tasks import tune_model
    with pytest.raises(TuneArgumentError, match="confirm must be a non-negative int"):
        tune_model(mb.from_onnx(examples.mlp(batch=1)), 1, confirm=1.5)
