"""Student notebooks are generated from the solved ones and committed in sync."""

from __future__ import annotations

import nbformat
import pytest

from mlcbook import book
from mlcbook.errors import GradingError
from mlcbook.grading.make_student import make_student, render, student_notebook, student_source


def test_solution_region_becomes_a_stub_at_its_indentation():
    source = ("# NBVAL_CHECK_OUTPUT\n"
              "def f(x):\n"
              "    ### BEGIN SOLUTION\n"
              "    y = x + 1\n"
              "    return y\n"
              "    ### END SOLUTION\n"
              "print(f)")
    assert student_source(source) == "def f(x):\n    raise NotImplementedError\nprint(f)"


@pytest.mark.parametrize("source, message", [
    ("### BEGIN SOLUTION\nx = 1", "line 1: ### BEGIN SOLUTION is never closed"),
    ("x = 1\n### END SOLUTION", "line 2: ### END SOLUTION without a ### BEGIN SOLUTION"),
    ("### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
     "line 2: ### BEGIN SOLUTION inside another solution region"),
])
def test_unbalanced_markers_are_errors(source, message):
    with pytest.raises(GradingError, match=message):
        student_source(source, "ex.ipynb, cell 3")


def test_outputs_are_cleared_and_the_solution_left_alone():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "### BEGIN SOLUTION\nx = 1\n### END SOLUTION", execution_count=4,
        outputs=[nbformat.v4.new_output("stream", text="hi")])])
    student = student_notebook(nb)
    assert student.cells[0].outputs == [] and student.cells[0].execution_count is None
    assert student.cells[0].source == "raise NotImplementedError"
    assert nb.cells[0].source.startswith("### BEGIN")


@pytest.mark.parametrize("chapter", [c for c in book.chapters() if c.solutions.is_file()],
                         ids=lambda c: f"chapter{c.number:02d}")
def test_committed_student_notebook_is_in_sync(chapter):
    assert make_student(chapter.solutions, chapter.exercises, check=True), (
        f"{chapter.exercises} is out of date with {chapter.solutions}; "
        "run `mlcbook book make-student`")
    expected = render(student_notebook(nbformat.read(chapter.solutions, as_version=4)))
    assert "### BEGIN SOLUTION" not in expected
