"""`mlcbook grade --csv`: a class of three student folders graded in one run, from outside
the clone, two notebooks at a time; a row per student, never a sum over students."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import nbformat
import pytest

import mlcbook.grading as grading
from mlcbook import book
from mlcbook.errors import GradingError
from mlcbook.grading.gradebook import submissions

IDS = [e.id for e in grading.exercises("01.")]
MM_RELU = grading.get("01.lnumpy_mm_relu").points


def _carol(solution, path):
    """The solution, then a wrong lnumpy_mm_relu (no relu), then a cell that never ends."""
    nb = nbformat.read(solution, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "def lnumpy_mm_relu(A, B, C):\n"
        "    C[:] = A @ B\n"))
    nb.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(600)"))
    nbformat.write(nb, path)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    chapter = book.chapter(1)
    tmp = tmp_path_factory.mktemp("class")
    for student in ("alice", "bob", "carol"):
        (tmp / "class" / student).mkdir(parents=True)
    shutil.copy(chapter.solutions, tmp / "class" / "alice" / chapter.solutions.name)
    shutil.copy(chapter.exercises, tmp / "class" / "bob" / chapter.exercises.name)
    _carol(chapter.solutions, tmp / "class" / "carol" / chapter.solutions.name)
    proc = subprocess.run([sys.executable, "-m", "mlcbook", "grade", "class", "--csv",
                           "grades.csv", "--json", "grades.json", "--jobs", "2",
                           "--timeout", "20", "--seed", "4242"],
                          cwd=tmp, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with open(tmp / "grades.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    return proc.stdout, rows, json.loads((tmp / "grades.json").read_text())


def test_a_row_per_student_with_their_own_totals(graded):
    _, rows, _ = graded
    assert [r["student"] for r in rows] == ["alice", "bob", "carol"]
    totals = {r["student"]: int(r["total"]) for r in rows}
    assert totals == {"alice": 10, "bob": 0, "carol": 10 - MM_RELU}
    for r in rows:
        assert sum(int(r[i]) for i in IDS) == int(r["total"]) and r["max_points"] == "10"


def test_a_column_per_exercise(graded):
    _, rows, data = graded
    assert list(rows[0])[1:1 + len(IDS)] == IDS
    assert rows[2]["01.lnumpy_mm_relu"] == "0" and rows[2]["01.lnumpy_mlp"] != "0"
    assert list(data["exercises"]) == IDS


def test_a_cell_timeout_is_reported_as_a_timeout(graded):
    stdout, rows, data = graded
    assert rows[0]["timeouts"] == "" and "timed out" in rows[2]["timeouts"], data["students"][2]
    carol = data["students"][2]
    assert carol["student"] == "carol" and carol["timeouts"]
    assert "timeouts:" in stdout


def test_the_json_has_the_same_rows_and_the_seed(graded):
    _, rows, data = graded
    assert data["seed"] == 4242
    assert [(s["student"], s["total"]) for s in data["students"]] == \
        [(r["student"], int(r["total"])) for r in rows]
    assert all(n["seed"] == 4242 for s in data["students"] for n in s["notebooks"])


def test_two_students_of_one_name_are_refused(tmp_path):
    for group in ("a", "b"):
        folder = tmp_path / group / "alice"
        folder.mkdir(parents=True)
        shutil.copy(book.chapter(1).exercises, folder / book.chapter(1).exercises.name)
    with pytest.raises(GradingError, match="two submissions are named 'alice'.*Instead"):
        submissions([tmp_path / "a", tmp_path / "b"])


def test_a_file_per_student_needs_the_chapter(tmp_path):
    path = tmp_path / "alice.ipynb"
    shutil.copy(book.chapter(1).exercises, path)
    with pytest.raises(GradingError, match="--chapter N"):
        submissions([path])
    assert submissions([path], chapter=1)[0].student == "alice"


def test_a_folder_without_notebooks_is_refused(tmp_path):
    with pytest.raises(GradingError, match="holds no exercise notebooks"):
        submissions([tmp_path])


def test_a_notebook_that_picks_its_own_seed_earns_nothing(tmp_path):
    from mlcbook.grading.grade import grade_notebook
    nb = nbformat.read(book.chapter(1).solutions, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(
        "import os\nos.environ['MLCBOOK_GRADE_SEED'] = '1'  # a seed where a guess passes"))
    path = tmp_path / book.chapter(1).solutions.name
    nbformat.write(nb, path)
    report = grade_notebook(path, seed=7, timeout=60)
    assert report.points == 0 and report.seed == 7
    assert all("did not draw its cases from this run's seed 7" in r.message
               for r in report.results), [str(r) for r in report.results]


def test_jobs_below_one_are_refused():
    from mlcbook.grading.grade import grade_many
    with pytest.raises(GradingError, match="--jobs must be a positive.*Instead"):
        grade_many([book.chapter(1).exercises], seed=1, jobs=0)


def test_a_missing_submission_is_refused(tmp_path):
    with pytest.raises(GradingError, match="nobody.*does not exist; Instead"):
        submissions([tmp_path / "nobody"])
