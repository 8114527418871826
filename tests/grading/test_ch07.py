"""Chapter 7's exercises: plausible wrong answers earn zero.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook.tune.features import features


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
