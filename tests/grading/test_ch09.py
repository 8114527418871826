"""Every chapter-9 exercise: the solution earns full points, the stub and plausible wrong
answers zero, and grading leaves the library's gradient rules as they were."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook import book
from mlcbook.grading.grade import grade_notebook
from mlcbook.graph import Constant, op
from mlcbook.train.graph_math import unbroadcast

from .conftest import notebook_functions

EXERCISES = {
    "09.div_gradient": "div_rule",
    "09.momentum_sgd": "momentum_update",
    "09.fix_softmax_gradient": "fixed_softmax_rule",
}


@pytest.fixture(scope="module")
def solution9() -> dict:
    return notebook_functions(book.chapter(9).solutions, definitions_only=True)


@pytest.fixture(scope="module")
def stub9() -> dict:
    return notebook_functions(book.chapter(9).exercises, definitions_only=True)


def test_chapter_has_these_exercises():
    assert [e.id for e in grading.exercises("09.")] == list(EXERCISES)
    assert sum(e.points for e in grading.exercises("09.")) == 8


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_solution_earns_full_points(solution9, exercise_id):
    for seed in (None, 1, 2):
        result = grading.check(exercise_id, solution9[EXERCISES[exercise_id]], seed=seed)
        assert result.passed and result.points == result.max_points > 0, str(result)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_stub_earns_zero_not_implemented(stub9, exercise_id):
    result = grading.check(exercise_id, stub9[EXERCISES[exercise_id]])
    assert result.points == 0
    assert result.message.startswith("not implemented:")


def test_student_notebook_grades_every_exercise_as_not_implemented():
    report = grade_notebook(book.chapter(9).exercises)
    assert report.cell_errors == [], [str(e) for e in report.cell_errors]
    assert [r.exercise for r in report.results] == list(EXERCISES)
    assert all(r.points == 0 and r.message.startswith("not implemented:")
               for r in report.results), [str(r) for r in report.results]


def _zero(exercise_id, answer):
    result = grading.check(exercise_id, answer)
    assert result.points == 0, str(result)
    assert "internal error" not in result.message, result.message
    return result.message


def test_div_without_unbroadcast_gets_zero():
    def rule(c, g):
        a, b = c.args
        return op.div(g, b), op.neg(op.div(op.mul(g, c), b))
    _zero("09.div_gradient", rule)


def test_div_with_wrong_sign_gets_zero():
    def rule(c, g):
        a, b = c.args
        return unbroadcast(op.div(g, b), a.shape), unbroadcast(op.div(op.mul(g, c), b), b.shape)
    assert "values differ" in _zero("09.div_gradient", rule)


def test_grading_restores_the_library_rule():
    before = mb.train.gradient_rule("div")
    _zero("09.div_gradient", lambda c, g: (g, g))
    assert mb.train.gradient_rule("div") is before


def test_momentum_with_old_buffer_gets_zero():
    def update(p, g, buf, lr, mu):
        new_buf = op.add(op.mul(Constant(np.array(mu)), buf), g)
        return op.sub(p, op.mul(Constant(np.array(lr)), buf)), new_buf
    _zero("09.momentum_sgd", update)


def test_momentum_without_gradient_in_buffer_gets_zero():
    def update(p, g, buf, lr, mu):
        new_buf = op.mul(Constant(np.array(mu)), buf)
        return op.sub(p, op.mul(Constant(np.array(lr)), op.add(new_buf, g))), new_buf
    assert "mu * buf + g" in _zero("09.momentum_sgd", update)


def test_momentum_returning_one_value_gets_zero():
    assert "pair" in _zero("09.momentum_sgd", lambda p, g, buf, lr, mu: p)


def test_the_broken_softmax_rule_gets_zero():
    def broken(c, g):
        return (op.mul(c, op.sub(g, op.sum(g, axes=(c.attrs["axis"],), keepdims=1))),)
    _zero("09.fix_softmax_gradient", broken)


def test_softmax_rule_ignoring_axis_gets_zero():
    def rule(c, g):
        return (op.mul(c, op.sub(g, op.sum(op.mul(g, c), axes=(-1,), keepdims=1))),)
    _zero("09.fix_softmax_gradient", rule)
