"""Every chapter-7 exercise: the solution earns full points, the stub and a plausible wrong
answer zero."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook import book
from mlcbook.tune.features import features

from .conftest import notebook_functions

EXERCISES = {
    "07.vector_share": "vector_share",
    "07.budget_search": "budget_search",
    "07.row_rule": "row_rule",
}


@pytest.fixture(scope="module")
def solution7() -> dict:
    return notebook_functions(book.chapter(7).solutions, definitions_only=True)


@pytest.fixture(scope="module")
def stub7() -> dict:
    return notebook_functions(book.chapter(7).exercises, definitions_only=True)


def test_chapter_has_these_exercises():
    assert [e.id for e in grading.exercises("07.")] == list(EXERCISES)
    assert sum(e.points for e in grading.exercises("07.")) == 7


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_solution_earns_full_points(solution7, exercise_id):
    for seed in (None, 1):
        result = grading.check(exercise_id, solution7[EXERCISES[exercise_id]], seed=seed)
        assert result.passed and result.points == result.max_points > 0, str(result)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_stub_earns_zero_not_implemented(stub7, exercise_id):
    result = grading.check(exercise_id, stub7[EXERCISES[exercise_id]])
    assert result.points == 0
    assert result.message.startswith("not implemented:")


def _unweighted_share(func):
    """Counts store statements, not how often they run: the plausible mistake."""
    from mlcbook.tir.functor import Visitor
    counts = {"vector": 0, "all": 0}

    class Count(Visitor):
        def __init__(self):
            self.loops = []

        def visit_For(self, node):
            self.loops.append(node)
            self.generic_visit(node)
            self.loops.pop()

        def visit_BufferStore(self, node):
            counts["all"] += 1
            counts["vector"] += any(lp.kind == "vectorized" for lp in self.loops)

    for f in mb.lower(func).functions.values():
        Count().visit(f.body)
    return counts["vector"] / counts["all"]


def _worst_point(space, budget, model):
    points = [space.sample(seed) for seed in range(budget)]
    scores = model.predict(np.array([features(p.func) for p in points]))
    return points[int(np.argmin(scores))]  # the sign mistake: lowest score


def _parallel_reduce_rule(knobs, name, space):
    sch = knobs.sch
    i, j = sch.get_loops(sch.get_block(name))
    if knobs.choice(f"{name}.parallel", [0, 1]):
        sch.parallel(j)  # the reduce loop: refused by the schedule


def _no_knob_rule(knobs, name, space):
    sch = knobs.sch
    i, _ = sch.get_loops(sch.get_block(name))
    sch.parallel(i)


@pytest.mark.parametrize("exercise_id, wrong, message", [
    ("07.vector_share", _unweighted_share, "the share is"),
    ("07.budget_search", _worst_point, "another point drawn scores"),
    ("07.row_rule", _parallel_reduce_rule, "was rejected"),
    ("07.row_rule", _no_knob_rule, "should make at least one"),
])
def test_plausible_wrong_answers_earn_zero(exercise_id, wrong, message):
    result = grading.check(exercise_id, wrong, seed=3)
    assert result.points == 0 and message in result.message, str(result)
