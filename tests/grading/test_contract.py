"""What every chapter's exercises promise, read from the grading registry rather than listed
per chapter: the solution notebook defines each answer the registry names and earns full
points on several seeds; the student notebook's stub earns zero, "not implemented"; graded
whole, the student notebook reports every exercise that way, and no cell fails for any other
reason than a stub raising.

Each chapter's own test file (``test_chNN.py``) adds the plausible wrong answers."""

from __future__ import annotations

import pytest

import mlcbook.grading as grading
from mlcbook import book
from mlcbook.grading.grade import grade_notebook

from .conftest import solution, stub

CHAPTERS = [c for c in book.chapters() if c.solutions.is_file()]

#: What each chapter is worth: an exercise dropped or re-weighted by accident shows up here.
POINTS = {1: 10, 2: 10, 3: 9, 4: 10, 5: 11, 6: 7, 7: 7, 8: 7, 9: 8, 10: 8, 11: 7}

#: Points by measured speed against numpy: full points are the machine's business, so
#: test_ch04 checks only that the solution is correct and timed.
SPEED_GRADED = {"04.matmul_speed"}

EXERCISES = [e for c in CHAPTERS for e in grading.exercises(c.prefix)]


def test_every_written_chapter_has_its_points():
    assert {c.number: sum(e.points for e in grading.exercises(c.prefix))
            for c in CHAPTERS} == POINTS


@pytest.mark.parametrize("ex", [e for e in EXERCISES if e.id not in SPEED_GRADED],
                         ids=lambda e: e.id)
def test_solution_earns_full_points(ex):
    for seed in (None, 1):
        result = grading.check(ex.id, solution(ex.chapter)[ex.answer], seed=seed)
        assert result.passed and result.points == result.max_points > 0, str(result)


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.id)
def test_stub_earns_zero_not_implemented(ex):
    result = grading.check(ex.id, stub(ex.chapter)[ex.answer])
    assert result.points == 0
    assert result.message.startswith("not implemented:"), result.message
    assert "NotImplementedError" in result.message


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda c: f"chapter{c.number:02d}")
def test_student_notebook_grades_every_exercise_as_not_implemented(chapter):
    report = grade_notebook(chapter.exercises)
    assert all(e.ename == "NotImplementedError" for e in report.cell_errors), \
        [str(e) for e in report.cell_errors]
    assert [r.exercise for r in report.results] == [e.id for e in grading.exercises(chapter.prefix)]
    assert all(r.points == 0 and r.message.startswith("not implemented:")
               for r in report.results), [str(r) for r in report.results]
