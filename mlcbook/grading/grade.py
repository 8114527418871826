"""``mlcbook grade``: execute exercise notebooks and score every exercise they should contain.

The exercises a notebook should contain are the registered ones of its chapter, found from
the ``NN_`` prefix of its file name and ``book.toml`` (``exercises/02_loop_ir.ipynb`` ->
every id starting ``02.``)::

    >>> report = grade_notebook("exercises/solutions/01_tensors_and_tensor_functions.ipynb")
    >>> report.points, report.max_points
    (10, 10)

How a notebook is graded:

* Every cell runs, even after one raised or ran past ``timeout`` (then it is interrupted):
  an exercise left undone cannot stop the ones after it. The table lists each cell that
  raised as Jupyter labels it (``In [5] (Exercise 2 — ...)``).
* The check results the notebook displays are ignored: a cell can display anything. After
  the notebook's cells, the grader appends one cell per exercise, which loads the graders
  afresh from the package's files, verified by digest, and checks the notebook's answer
  (the global the exercise names, e.g. ``lnumpy_bmm``), defined by a cell of this notebook
  (:mod:`mlcbook.grading.kernel_side`). The verdict is accepted only from a file in a folder
  made after the notebook's cells ran, carrying a token drawn for this run.
* Each exercise is checked in its own cell, under its own timeout.

What this protects and what it does not (the threat model). It stops a notebook from
faking its score through the interfaces a notebook has: displaying a forged check result,
replacing entries of the grading registry or editing the checker files while it runs, and
answering with functions it did not define (such as the solution notebook's, run with
``%run``). It does not stop code written to attack the grader's process: the student's code
runs in the kernel with the grader's user rights, can read and write what that user can,
and runs in the same process as the checks (it could, for instance, patch numpy before they
run). Grade untrusted notebooks in a disposable container or account with no access to
anything of value; ``isolate=True`` (``mlcbook grade --isolate``) at least runs the kernel
under CPU-time, memory and file-size limits (:class:`~mlcbook.grading.execute.Limits`).
The solutions live in the repository's ``exercises/solutions/``, not in the installed package.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .. import book
from ..errors import GradingError
from .execute import (CURRENT_ENV, CellFailure, Limits, NotebookRun, execute_notebook,
                      read_notebook)
from .registry import Exercise, exercises
from .result import CheckResult

_CHAPTER_PREFIX = re.compile(r"^(\d\d)_")
#: A cell that only shows a check's verdict: ``mb.grading.check("01.x", f)`` and comments.
_CHECK_ONLY = re.compile(r"^(\s*#[^\n]*\n|\s*\n)*\s*mb\.grading\.check\([^()]*\)\s*$")
_PACKAGE_DIR = Path(__file__).resolve().parent
_KERNEL_SIDE = _PACKAGE_DIR / "kernel_side.py"


@dataclass
class NotebookReport:
    path: Path
    chapter: book.Chapter
    results: list[CheckResult]
    seconds: float
    #: Cells of the notebook that raised (the grader's own cells are not listed).
    cell_errors: list[CellFailure] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)

    @property
    def points(self) -> int:
        return sum(r.points for r in self.results)

    @property
    def max_points(self) -> int:
        return sum(r.max_points for r in self.results)

    def to_json(self) -> dict:
        return {
            "notebook": str(self.path),
            "chapter": self.chapter.number,
            "chapter_title": self.chapter.title,
            "points": self.points,
            "max_points": self.max_points,
            "seconds": round(self.seconds, 2),
            "cell_errors": [{"cell": e.label, "ename": e.ename, "evalue": e.evalue}
                            for e in self.cell_errors],
            "exercises": [dict(r.to_json(), title=self.titles.get(r.exercise, ""))
                          for r in self.results],
        }


def chapter_of(path: str | Path) -> book.Chapter:
    """The chapter an exercise notebook belongs to, from its ``NN_`` file-name prefix."""
    path = Path(path)
    match = _CHAPTER_PREFIX.match(path.name)
    if not match:
        raise GradingError(f"cannot tell which chapter {path.name} belongs to: exercise notebooks "
                           "are named NN_topic.ipynb after their chapter (e.g. "
                           "01_tensors_and_tensor_functions.ipynb); rename it")
    number = int(match.group(1))
    known = {c.number: c for c in book.chapters()}
    if number not in known:
        raise GradingError(f"{path.name}: the book has no chapter {number} "
                           f"(chapters {min(known)}..{max(known)})")
    return known[number]


#: sha256 of every file of the grading package, taken when this process loads the graders,
#: before it runs any notebook: a notebook that edits a grader file cannot change what the
#: checks of the next notebook are verified against.
_DIGESTS = {file.name: hashlib.sha256(file.read_bytes()).hexdigest()
            for file in sorted(_PACKAGE_DIR.glob("*.py"))}


def _grader_cell(ex: Exercise, digests: dict[str, str], cells: list[str], token: str,
                 out_path: Path, timeout: float) -> str:
    kwargs = dict(exercise_id=ex.id, answer_name=ex.answer, package_dir=str(_PACKAGE_DIR),
                  digests=digests, cells=cells, token=token, out_path=str(out_path),
                  timeout=timeout)
    # Only builtins and hashlib run before the verified file takes over.
    return (f"def _mlcbook_grade():\n"
            f"    import hashlib\n"
            f"    path = {str(_KERNEL_SIDE)!r}\n"
            f"    with open(path, 'rb') as file:\n"
            f"        source = file.read()\n"
            f"    if hashlib.sha256(source).hexdigest() != {digests[_KERNEL_SIDE.name]!r}:\n"
            f"        raise RuntimeError('the grader file ' + path + ' changed while the "
            f"notebook ran')\n"
            f"    grader = {{'__name__': 'mlcbook_grader'}}\n"
            f"    exec(compile(source, path, 'exec', dont_inherit=True), grader)\n"
            f"    grader['grade_answer'](**{kwargs!r})\n"
            f"_mlcbook_grade()\n"
            f"del _mlcbook_grade\n")


def grade_notebook(path: str | Path, *, timeout: float = 120, kernel_name: str = CURRENT_ENV,
                   isolate: bool | Limits = False) -> NotebookReport:
    """Execute one notebook in a fresh kernel and score each exercise of its chapter.

    ``isolate`` runs the kernel under :class:`Limits` (``True``: the default limits).
    """
    chapter = chapter_of(path)
    expected = exercises(chapter.prefix)
    if not expected:
        raise GradingError(f"chapter {chapter.number} ({chapter.title}) has no registered "
                           f"exercises, so {Path(path).name} cannot be graded")
    _check_timeout(timeout)
    digests = _DIGESTS
    original = read_notebook(path)
    nb = copy.deepcopy(original)
    cells = [c.source for c in original.cells if c.cell_type == "code"]
    for cell in nb.cells:
        # The notebook's own check cells only show the student a verdict; the grader checks
        # each answer once, below, so they need not run (chapter 4's timed check is slow).
        if cell.cell_type == "code" and _CHECK_ONLY.match(cell.source):
            cell.source = ""
    first_grader = len(nb.cells)
    token = secrets.token_hex(16)
    limits = Limits() if isolate is True else (isolate or None)
    with tempfile.TemporaryDirectory(prefix="mlcbook-grade-") as folder:
        # The verdicts' folder is named only in the grader's cells, which run after the
        # notebook's; a verdict must also carry this run's token.
        verdicts = Path(folder) / secrets.token_hex(8)
        nb.cells.extend(nbformat.v4.new_code_cell(
            _grader_cell(ex, digests, cells, token, verdicts / f"{i}.json", timeout))
            for i, ex in enumerate(expected))
        run = execute_notebook(path, timeout=timeout, kernel_name=kernel_name, notebook=nb,
                               keep_going=True, limits=limits)
        results = [_verdict(ex, verdicts / f"{i}.json", token, run, first_grader + i)
                   for i, ex in enumerate(expected)]
    cell_errors = [f for f in run.failures if f.index < first_grader]
    return NotebookReport(Path(path), chapter, results, run.seconds, cell_errors,
                          {ex.id: ex.title for ex in expected})


def _verdict(ex: Exercise, file: Path, token: str, run: NotebookRun,
             cell_index: int) -> CheckResult:
    """The verdict the grader cell ``cell_index`` wrote to ``file``, if it carries ``token``."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if (isinstance(data, dict) and data.get("token") == token and data.get("exercise") == ex.id
            and isinstance(data.get("points"), int) and isinstance(data.get("message"), str)):
        # The registry of this process, not the kernel, decides what an exercise is worth.
        return CheckResult(ex.id, min(max(data["points"], 0), ex.points), ex.points,
                           data["message"])
    if run.stopped is not None and run.stopped.index < cell_index:
        reason = f"not graded: {run.stopped}"
    else:
        failure = next((f for f in run.failures if f.index == cell_index), None)
        reason = "not graded: the grader's check did not finish" + (
            f" ({failure.error})" if failure else "")
    return CheckResult(ex.id, 0, ex.points, reason)


def _check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise GradingError(f"--timeout must be a positive number of seconds, got {timeout:g}; "
                           "it is how long one cell, or one exercise's check, may run")


def grade(paths: list[str | Path], *, timeout: float = 120, kernel_name: str = CURRENT_ENV,
          isolate: bool | Limits = False) -> list[NotebookReport]:
    _check_timeout(timeout)
    for path in paths:  # fail on a bad path before spending minutes on the others
        if not Path(path).is_file():
            raise GradingError(f"notebook {path} does not exist; check the path")
        chapter_of(path)
    return [grade_notebook(p, timeout=timeout, kernel_name=kernel_name, isolate=isolate)
            for p in paths]


def to_json(reports: list[NotebookReport]) -> dict:
    return {"notebooks": [r.to_json() for r in reports],
            "points": sum(r.points for r in reports),
            "max_points": sum(r.max_points for r in reports)}


def format_table(reports: list[NotebookReport]) -> str:
    """The score table ``mlcbook grade`` prints: one block per notebook, then the total.

    A message's later lines (a program listing marked ``# <-- here``) keep their indentation.
    """
    lines: list[str] = []
    for report in reports:
        lines.append(f"{report.path}  (chapter {report.chapter.number}: {report.chapter.title}, "
                     f"ran in {report.seconds:.1f} s)")
        for failure in report.cell_errors:
            lines.append(f"  cell {failure.label} raised {failure.error.splitlines()[0]}")
        width = max(len(r.exercise) for r in report.results)
        pad = " " * (2 + 3 + width + 2 + 5 + 2)
        for r in report.results:
            first, *rest = r.message.split("\n")
            mark = "ok " if r.passed else "-- "
            score = f"{r.points}/{r.max_points}"
            lines.append(f"  {mark}{r.exercise:<{width}}  {score:>5}  {first}")
            lines.extend((pad + line).rstrip() for line in rest)
        lines.append(f"  {'total':<{width + 3}}  {report.points:>2}/{report.max_points:<2}")
        lines.append("")
    total = sum(r.points for r in reports)
    maximum = sum(r.max_points for r in reports)
    lines.append(f"overall: {total}/{maximum} points in {len(reports)} notebook"
                 + ("s" if len(reports) != 1 else ""))
    return "\n".join(lines)
