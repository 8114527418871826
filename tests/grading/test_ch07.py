"""Chapter 7's exercises: plausible wrong answers earn zero.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import math
import numpy as np
import pytest

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook.tune.features import features

from .conftest import zero


def _vector_share(func, weight, vector=lambda lp: lp.kind == "vectorized"):
    """The share of stores under a loop ``vector`` accepts (a vectorized one), each store
    counted ``weight(loops)`` times: a wrong answer's way of counting (the right one weighs
    by every loop's extent)."""
    from mlcbook.tir.functor import Visitor
    runs = {"vector": 0, "all": 0}

    class Count(Visitor):
        def __init__(self):
            self.loops = []

        def visit_For(self, node):
            self.loops.append(node)
            self.generic_visit(node)
            self.loops.pop()

        def visit_BufferStore(self, node):
            n = weight(self.loops)
            runs["all"] += n
            runs["vector"] += n * any(vector(lp) for lp in self.loops)

    for f in mb.lower(func).functions.values():
        Count().visit(f.body)
    return runs["vector"] / runs["all"]


def _unweighted_share(func):
    """Counts store statements, not how often they run: the plausible mistake."""
    return _vector_share(func, lambda loops: 1)


def _worst_point(space, budget, model):
    points = []
    for seed in range(budget):
        try:
            points.append(space.sample(seed))
        except mb.ScheduleError:
            pass
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
    assert message in zero(exercise_id, wrong)


# --- issue 31: holes a second student pass found ------------------------------------------------
def _innermost_weight_share(func):
    """Weights each store by the extent of its innermost loop only: another plausible slip."""
    return _vector_share(func, lambda loops: int(loops[-1].extent.value) if loops else 1)


def _search(seeds, count_rejected=True, use_model=True):
    def budget_search(space, budget, model):
        points, draws = [], 0
        for seed in seeds(budget):
            if count_rejected and draws == budget:
                break
            draws += 1
            try:
                points.append(space.sample(seed))
            except mb.ScheduleError:
                draws -= not count_rejected
            if not count_rejected and len(points) == budget:
                break
        if not use_model:
            return points[0]
        scores = model.predict(np.array([features(p.func) for p in points]))
        return points[int(np.argmax(scores))]
    return budget_search


def _row_rule(tile=True, parallel="decided", choices=(False, True)):
    def row_rule(knobs, name, space):
        sch = knobs.sch
        i, _ = sch.get_loops(sch.get_block(name))
        factors = knobs.tile(f"{name}.rows", i, 2, 16) if tile else [None, 8]
        outer, inner = sch.split(i, factors)
        if parallel == "always" or (parallel != "never" and knobs.choice(f"{name}.parallel",
                                                                         list(choices))):
            sch.parallel(inner if parallel == "inner" else outer)
    return row_rule


@pytest.mark.parametrize("exercise_id, wrong, message", [
    ("07.vector_share", _innermost_weight_share, "the share is"),
    ("07.budget_search", _search(lambda b: range(b), use_model=False), "asked the model about 0"),
    ("07.budget_search", _search(lambda b: ([1, 2] * b)[:b]), "more than once"),
    ("07.budget_search", _search(lambda b: range(10 * b), count_rejected=False),
     "every draw counts"),
    ("07.row_rule", _row_rule(parallel="always"), "all 16 points run in parallel"),
    ("07.row_rule", _row_rule(parallel="never"), "none of 16 points runs in parallel"),
    ("07.row_rule", _row_rule(tile=False), "the split of i is fixed"),
    ("07.row_rule", _row_rule(parallel="inner"), "runs an inner loop in parallel"),
])
def test_wrong_answers_of_a_second_pass_earn_zero(exercise_id, wrong, message):
    assert message in zero(exercise_id, wrong)


@pytest.mark.parametrize("choices", [(False, True), (0, 1)])
def test_a_row_rule_deciding_parallel_with_bools_or_ints_earns_full_marks(choices):
    result = grading.check("07.row_rule", _row_rule(choices=choices))
    assert result.passed, str(result)


def _tiles_the_reduce_loop(knobs, name, space):
    """Tiles j (the reduce loop) with the decision the exercise asks for i."""
    sch = knobs.sch
    i, j = sch.get_loops(sch.get_block(name))
    sch.split(j, knobs.tile(f"{name}.cols", j, 2, 16))
    if knobs.choice(f"{name}.parallel", [False, True]):
        sch.parallel(i)


def test_a_row_rule_that_tiles_the_reduce_loop_instead_of_i_earns_zero():
    assert "tile the spatial loop i the same way" in zero("07.row_rule", _tiles_the_reduce_loop)


def test_a_row_rule_tiling_i_in_three_parts_earns_full_marks():
    def row_rule(knobs, name, space):
        sch = knobs.sch
        i, _ = sch.get_loops(sch.get_block(name))
        outer, _, _ = sch.split(i, knobs.tile(f"{name}.rows", i, 3, 16))
        if knobs.choice(f"{name}.parallel", [False, True]):
            sch.parallel(outer)
    result = grading.check("07.row_rule", row_rule)
    assert result.passed, str(result)


def test_a_share_that_counts_parallel_and_unrolled_loops_as_vector_earns_zero():
    def any_annotated_loop(func):
        return _vector_share(func, lambda loops: math.prod(int(lp.extent.value) for lp in loops),
                             vector=lambda lp: lp.kind != "serial")
    assert "the share is 0.0000" in zero("07.vector_share", any_annotated_loop)
