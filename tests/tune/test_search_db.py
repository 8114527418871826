"""Search and records: tuning improves over trials, records round-trip and resume, and
mb.compile applies them (and skips a stale one with a warning)."""

import json

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.frontend import examples
from mlcbook.graph.interpret import main_function
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


def test_a_baseline_records_the_default_schedule_which_compile_keeps_when_best(measurer):
    f = matmul(16)
    db = Database()
    r = tune(f, 1, model="random", database=db, batch=1, progress=False, baseline=True,
             measurer=measurer)
    recs = db.records(workload_key(f))
    assert [rec.trace == DEFAULT_TRACE for rec in recs] == [True, False]
    assert r.default_seconds == recs[0].seconds and len(r.history) == 1
    assert apply_best(f, db) is not None or recs[0].seconds < recs[1].seconds
    db.add(Record(recs[0].workload, {}, DEFAULT_TRACE, 1e-12))  # the default now fastest
    assert apply_best(f, db) is None
    r2 = tune(f, 1, model="random", database=db, batch=1, progress=False, baseline=True,
              measurer=measurer)
    assert len(db) == 4 and r2.default_seconds == 1e-12  # resumed: not measured again


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
