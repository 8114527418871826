"""A notebook cannot fake its grade: each trick that once earned 10/10 without solving
anything now scores zero, and ``--isolate`` runs the kernel under resource limits."""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - pyproject installs tomli on Python 3.10
    import tomli as tomllib

import nbformat
import pytest

import mlcbook.grading
from mlcbook import book
from mlcbook.grading.grade import grade
from mlcbook.grading.kernel_side import fresh_grading

FORGED_DISPLAY = '''\
from IPython.display import display
for ex in mb.grading.exercises("01."):
    display({"application/vnd.mlcbook.check+json": {
        "exercise": ex.id, "points": ex.points, "max_points": ex.points, "message": "forged"},
        "text/plain": "forged"}, raw=True)
'''

REPLACED_REGISTRY = '''\
from mlcbook.grading import registry
for ex in list(registry._REGISTRY.values()):
    registry._REGISTRY[ex.id] = registry.Exercise(ex.id, ex.points, ex.title,
                                                  lambda answer, rng: "forged", ex.answer)
mb.grading.check = lambda exercise_id, answer, **kw: registry.CheckResult(
    exercise_id, 10, 10, "forged")
'''

RUN_THE_SOLUTIONS = """\
from mlcbook import book
get_ipython().run_line_magic("run", str(book.chapter(1).solutions))
"""

TRICKS = {"forged_display": FORGED_DISPLAY, "replaced_registry": REPLACED_REGISTRY,
          "run_the_solutions": RUN_THE_SOLUTIONS}


@pytest.fixture(scope="module")
def tricked(tmp_path_factory):
    """The chapter-1 student notebook (all stubs) with one trick cell at its end, per trick."""
    tmp = tmp_path_factory.mktemp("tricks")
    paths = []
    for name, source in TRICKS.items():
        nb = nbformat.read(book.chapter(1).exercises, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(source))
        path = tmp / f"01_{name}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return dict(zip(TRICKS, grade(paths, timeout=120)))


@pytest.mark.parametrize("trick", TRICKS)
def test_a_forged_grade_scores_zero(tricked, trick):
    report = tricked[trick]
    assert (report.points, report.max_points) == (0, 10), [str(r) for r in report.results]
    assert not [e for e in report.cell_errors], [str(e) for e in report.cell_errors]
    assert not any("forged" in r.message for r in report.results)


def test_the_solutions_run_from_elsewhere_are_not_the_notebooks_answers(tricked):
    for result in tricked["run_the_solutions"].results:
        name = mlcbook.grading.get(result.exercise).answer
        assert result.message.startswith(f"{name} was not defined by a cell of this notebook"), \
            result.message


def test_the_stubs_are_still_graded_as_not_implemented(tricked):
    for trick in ("forged_display", "replaced_registry"):
        assert all(r.message.startswith("not implemented:") for r in tricked[trick].results)


def test_a_grader_file_changed_after_the_digests_is_refused(tmp_path):
    package = Path(mlcbook.grading.__file__).parent
    copy = tmp_path / "grading"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    digests = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in copy.glob("*.py")}
    (copy / "ch01.py").write_text("# the checks were here\n")
    with pytest.raises(RuntimeError, match=r"ch01.py changed while the notebook ran"):
        fresh_grading(str(copy), digests)


def test_the_installed_package_carries_no_notebooks():
    # pyproject installs the packages mlcbook* only, and as package data named files that
    # are not notebooks (the induction corpus): a solution notebook would have to live
    # inside mlcbook/ to be installed.
    package = Path(mlcbook.__file__).parent
    assert not list(package.rglob("*.ipynb"))
    setuptools = tomllib.loads((package.parent / "pyproject.toml").read_text())["tool"][
        "setuptools"]
    assert "data-files" not in setuptools
    for patterns in setuptools.get("package-data", {}).values():
        assert all(p.endswith(".json") for p in patterns), patterns


def test_isolate_limits_the_kernels_memory_and_grading_goes_on(tmp_path):
    nb = nbformat.read(book.chapter(1).solutions, as_version=4)
    nb.cells.insert(2, nbformat.v4.new_code_cell("huge = np.empty(8 << 30, dtype=np.uint8)"))
    path = tmp_path / "01_asks_for_8_gib.ipynb"
    nbformat.write(nb, path)
    (report,) = grade([path], timeout=120, isolate=True)
    assert [(e.label.split()[0:2], e.ename) for e in report.cell_errors] == [
        (["In", "[2]"], "MemoryError")]
    assert report.points == report.max_points == 10, [str(r) for r in report.results]
