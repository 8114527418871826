"""`mlcbook grade` grades every exercise on its own: in each exercise notebook, leaving any one
exercise as the stub (or raising in it) costs that exercise's points and no other's."""

from __future__ import annotations

import copy

import nbformat
import pytest

from mlcbook import book
from mlcbook.grading import exercises
from mlcbook.grading.grade import format_table, grade
from mlcbook.grading.make_student import BEGIN, student_source

CHAPTERS = [c for c in book.chapters() if c.solutions.is_file()]


def _answer_cell(nb, answer: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if c.cell_type == "code"
                and f"def {answer}(" in c.source and BEGIN in c.source)


def _variant(chapter, tmp_path, name: str, edit) -> str:
    nb = copy.deepcopy(nbformat.read(chapter.solutions, as_version=4))
    edit(nb)
    path = tmp_path / f"{chapter.number:02d}_{name}.ipynb"
    nbformat.write(nb, path)
    return str(path)


def _skip(answer: str):
    def edit(nb):
        cell = nb.cells[_answer_cell(nb, answer)]
        cell.source = student_source(cell.source)
    return edit


@pytest.fixture(scope="module", params=CHAPTERS, ids=lambda c: f"chapter{c.number:02d}")
def skipped_in_turn(request, tmp_path_factory):
    """Each exercise of the chapter left as the stub in turn: one graded report per exercise."""
    chapter = request.param
    tmp = tmp_path_factory.mktemp(f"skip{chapter.number:02d}")
    expected = exercises(chapter.prefix)
    paths = [_variant(chapter, tmp, f"skip_{ex.answer}", _skip(ex.answer)) for ex in expected]
    return expected, grade(paths, timeout=120)


#: exercises whose points depend on measured speed (graded with grading.compare.Partial)
SPEED_GRADED = {"04.matmul_speed"}


def test_skipping_one_exercise_leaves_every_other_its_full_points(skipped_in_turn):
    expected, reports = skipped_in_turn
    for skipped, report in zip(expected, reports):
        scores = {r.exercise: r for r in report.results}
        assert [r.exercise for r in report.results] == [e.id for e in expected]
        stub = scores[skipped.id]
        assert stub.points == 0 and stub.message.startswith("not implemented:"), str(stub)
        for ex in expected:
            if ex is not skipped and ex.id in SPEED_GRADED:
                # points for speed depend on this machine: skipping another exercise must
                # not take them away, but the full speed points are not this test's business
                assert scores[ex.id].points > 0, f"with {skipped.id} skipped: {scores[ex.id]}"
            elif ex is not skipped:
                assert scores[ex.id].points == ex.points, (
                    f"with {skipped.id} skipped: {scores[ex.id]}")


def _illegal_schedule(nb):
    cell = nb.cells[_answer_cell(nb, "schedule_bmm_relu")]
    cell.source = ("def schedule_bmm_relu(sch):\n"
                   "    b, i, j, k = sch.get_loops(sch.get_block('Y'))\n"
                   "    sch.vectorize(k)\n")


@pytest.fixture(scope="module")
def illegal_step(tmp_path_factory):
    chapter = book.chapter(3)
    path = _variant(chapter, tmp_path_factory.mktemp("illegal"), "illegal_step", _illegal_schedule)
    (report,) = grade([path], timeout=120)
    return report


def test_an_illegal_step_in_one_exercise_costs_only_that_exercise(illegal_step):
    scores = {r.exercise: r for r in illegal_step.results}
    assert scores["03.bmm_relu_target"].points == 0
    assert scores["03.bmm_relu_target"].message.startswith(
        "schedule_bmm_relu was refused by the schedule: [MLC-S004] cannot vectorize loop k")
    assert scores["03.stochastic"].points == 2, str(scores["03.stochastic"])
    assert illegal_step.points == 9 - 3
    assert [e.label for e in illegal_step.cell_errors] == [
        "In [10] (Exercise 3 — `bmm_relu` to a given program)"]


def test_a_multi_line_message_keeps_its_indentation_and_is_printed_once(illegal_step):
    message = next(r.message for r in illegal_step.results if r.exercise == "03.bmm_relu_target")
    table = format_table([illegal_step])
    lines = message.split("\n")
    assert len(lines) > 2, message
    marked = [line for line in lines if "# <-- here" in line]
    assert len(marked) == 1, message
    # every later line of the message appears in the table with its own indentation intact
    for line in lines[1:]:
        if line.strip():
            assert any(row.endswith(line.rstrip()) for row in table.split("\n")), line
    assert table.count(marked[0].strip()) == 1


def _never_ends(nb):
    cell = nb.cells[_answer_cell(nb, "lnumpy_mm_relu")]
    cell.source = "def lnumpy_mm_relu(A, B, C):\n    while True:\n        pass\n"


def test_an_answer_that_never_returns_is_stopped_and_costs_only_its_points(tmp_path):
    path = _variant(book.chapter(1), tmp_path, "never_ends", _never_ends)
    (report,) = grade([path], timeout=20)
    scores = {r.exercise: r for r in report.results}
    assert scores["01.lnumpy_mm_relu"].points == 0
    assert scores["01.lnumpy_mm_relu"].message == (
        "the check of lnumpy_mm_relu ran longer than 20 s and was stopped; look for a loop "
        "that never ends")
    assert report.points == 10 - 1, [str(r) for r in report.results]
