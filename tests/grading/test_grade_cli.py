"""`mlcbook grade` end to end: one run over four notebooks (one kernel start each)."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest

from mlcbook import book

IDS = ["01.lnumpy_mm_relu", "01.lnumpy_bmm", "01.lnumpy_softmax", "01.lnumpy_conv2d",
       "01.lnumpy_mlp"]


def _with_failing_cell(solution, at: int, path):
    nb = nbformat.read(solution, as_version=4)
    nb.cells.insert(at, nbformat.v4.new_code_cell('raise ValueError("broken on purpose")'))
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    chapter = book.chapter(1)
    tmp = tmp_path_factory.mktemp("grade")
    solved_nb = nbformat.read(chapter.solutions, as_version=4)
    first_check = next(i for i, c in enumerate(solved_nb.cells)
                       if c.cell_type == "code" and "mb.grading.check(" in c.source)
    notebooks = [
        chapter.solutions,
        chapter.exercises,
        _with_failing_cell(chapter.solutions, 2, tmp / "01_raises_in_second_code_cell.ipynb"),
        _with_failing_cell(chapter.solutions, first_check + 1, tmp / "01_raises_later.ipynb"),
    ]
    out = tmp / "scores.json"
    proc = subprocess.run([sys.executable, "-m", "mlcbook", "grade", *map(str, notebooks),
                           "--json", str(out), "--timeout", "60"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(out.read_text())


def _scores(report):
    return {e["exercise"]: (e["points"], e["max_points"]) for e in report["exercises"]}


def test_solved_notebook_gets_full_points(graded):
    stdout, data = graded
    solved = data["notebooks"][0]
    assert [e["exercise"] for e in solved["exercises"]] == IDS
    assert solved["points"] == solved["max_points"] == 10 and solved["cell_errors"] == []
    assert solved["chapter"] == 1 and solved["chapter_title"] == "Tensors and tensor functions"
    assert "  ok 01.lnumpy_conv2d     3/3  matches the reference conv2d" in stdout
    assert "  total                 10/10" in stdout


def test_unsolved_notebook_gets_zeros_not_implemented(graded):
    stdout, data = graded
    unsolved = data["notebooks"][1]
    assert unsolved["points"] == 0 and unsolved["max_points"] == 10
    assert unsolved["cell_errors"] == []
    assert all(e["message"].startswith("not implemented:") for e in unsolved["exercises"])
    assert "  -- 01.lnumpy_bmm        0/2  not implemented: lnumpy_bmm raised " in stdout


def test_a_cell_that_raises_costs_no_points_and_is_named_as_jupyter_shows_it(graded):
    stdout, data = graded
    broken = data["notebooks"][2]
    section = "Exercises — Chapter 1: Tensors and tensor functions"
    assert broken["cell_errors"] == [{"cell": f"In [2] ({section})", "ename": "ValueError",
                                      "evalue": "broken on purpose"}]
    assert _scores(broken) == {i: (p, p) for i, p in zip(IDS, [1, 2, 2, 3, 2])}
    assert f"  cell In [2] ({section}) raised ValueError: broken on purpose" in stdout


def test_a_cell_raising_inside_an_exercise_names_its_section(graded):
    _, data = graded
    later = data["notebooks"][3]
    assert later["points"] == 10
    assert later["cell_errors"][0]["cell"] == "In [4] (Exercise 1 — fused matmul + relu)"


def test_totals_over_all_notebooks(graded):
    stdout, data = graded
    assert (data["points"], data["max_points"]) == (30, 40)
    assert "overall: 30/40 points in 4 notebooks" in stdout


@pytest.mark.parametrize("timeout", ["-5", "0"])
def test_a_timeout_that_is_not_positive_is_refused(timeout):
    proc = subprocess.run([sys.executable, "-m", "mlcbook", "grade", str(book.chapter(1).exercises),
                           "--timeout", timeout], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "[MLC-B001]" in proc.stderr
    assert "--timeout must be a positive number of seconds" in proc.stderr
