"""Every chapter-10 exercise: the solution earns full points, the stub and plausible wrong
answers zero."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook.grading as grading
from mlcbook import book
from mlcbook.grading.grade import grade_notebook

from .conftest import notebook_functions

EXERCISES = {
    "10.widen_moments": "widen_moments",
    "10.plateau": "plateau_steps",
    "10.fix_widen": "fixed_widen",
}


@pytest.fixture(scope="module")
def solution10() -> dict:
    return notebook_functions(book.chapter(10).solutions, definitions_only=True)


@pytest.fixture(scope="module")
def stub10() -> dict:
    return notebook_functions(book.chapter(10).exercises, definitions_only=True)


def test_chapter_has_these_exercises():
    assert [e.id for e in grading.exercises("10.")] == list(EXERCISES)
    assert sum(e.points for e in grading.exercises("10.")) == 8


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_solution_earns_full_points(solution10, exercise_id):
    for seed in (None, 1, 2):
        result = grading.check(exercise_id, solution10[EXERCISES[exercise_id]], seed=seed)
        assert result.passed and result.points == result.max_points > 0, str(result)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_stub_earns_zero_not_implemented(stub10, exercise_id):
    result = grading.check(exercise_id, stub10[EXERCISES[exercise_id]])
    assert result.points == 0
    assert result.message.startswith("not implemented:")


def _swapped_rule(state, mapping):
    """The rule with incoming and outgoing swapped: divide the outgoing moments."""
    c = np.bincount(mapping)[mapping].astype(np.float64)
    out = {}
    for name in ("w1", "b1"):
        out[f"{name}.m"], out[f"{name}.v"] = state[f"{name}.m"][mapping], \
            state[f"{name}.v"][mapping]
    out["w2.m"] = state["w2.m"][:, mapping] / c
    out["w2.v"] = state["w2.v"][:, mapping] / c ** 2
    return out


def _copy_everything(state, mapping):
    return {k: (v[:, mapping] if k.startswith("w2") else v[mapping]) for k, v in state.items()}


@pytest.mark.parametrize("wrong", [_swapped_rule, _copy_everything])
def test_wrong_moment_transports_earn_zero(wrong):
    assert grading.check("10.widen_moments", wrong).points == 0


def _plateau_without_cooldown(values, patience, threshold, cooldown):
    best, bad, fired = float("inf"), 0, []
    for i, a in enumerate(values):
        if a < best * (1 - threshold):
            best, bad = a, 0
        else:
            bad += 1
        if bad > patience:
            fired.append(i)
            bad = 0
    return fired


def _plateau_at_patience(values, patience, threshold, cooldown):
    best, bad, cool, fired = float("inf"), 0, 0, []
    for i, a in enumerate(values):
        if a < best * (1 - threshold):
            best, bad = a, 0
        else:
            bad += 1
        if cool > 0:
            cool, bad = cool - 1, 0
        if bad >= patience:
            fired.append(i)
            cool, bad = cooldown, 0
    return fired


@pytest.mark.parametrize("wrong", [_plateau_without_cooldown, _plateau_at_patience])
def test_wrong_plateaus_earn_zero(wrong):
    assert grading.check("10.plateau", wrong).points == 0


def test_the_broken_widen_earns_zero(solution10):
    def broken(w1, b1, w2, mapping):
        return w1[mapping], b1[mapping], w2[:, mapping]
    result = grading.check("10.fix_widen", broken)
    assert result.points == 0 and "output" in result.message


def test_student_notebook_grades_every_exercise_as_not_implemented():
    report = grade_notebook(book.chapter(10).exercises)
    assert report.cell_errors == [], [str(e) for e in report.cell_errors]
    assert [r.exercise for r in report.results] == list(EXERCISES)
    assert all(r.points == 0 and r.message.startswith("not implemented:")
               for r in report.results), [str(r) for r in report.results]
