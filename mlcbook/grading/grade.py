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
* The check results the notebook displays are ignored: a cell can display anything. The
  kernel runs in a new, empty folder; before the notebook's first cell (outside the
  history) it loads :mod:`mlcbook.grading.kernel_side`, verified by digest, which takes the
  run's secrets (a one-time token, the verdicts' folder, the exercises) from a file it then
  deletes. After the notebook's cells, one grader cell per exercise, holding no secret and
  naming nothing the notebook can rebind, loads the graders afresh, verified, and checks
  the answer (the global the exercise names, e.g. ``lnumpy_bmm``) defined by a cell of
  this notebook. A verdict counts only from that folder, with that token.
* Each exercise is checked in its own cell, under its own timeout.

The threat model. Guaranteed: a notebook cannot raise its score through what it can read
or rebind by ordinary means: displaying a forged result; replacing the grading registry or
editing the checker files; answering with functions it did not define (the solutions run
with ``%run``); reading the grader's cells, token or verdict path from IPython's history,
the environment, files, or any object it can reach by name or attribute (the token lives
only in a grading thread's arguments); shadowing builtins or modules the bootstrap uses;
rebinding functions of numpy, the standard library, mlcbook or the builtins that a check
or the bootstrap calls, in a cell, inside the answer, or from a thread (they are restored
before the check, after each call of the answer and before the verdict is written; threads
switch only when the check waits). With ``isolate=True`` (``--isolate``, Linux
5.13+: Landlock) the kernel can read only Python, the mlcbook package, the system and its
own folder (not the repository, so not ``exercises/solutions/``), writes only that folder,
and runs under CPU, memory and file-size limits (:class:`~mlcbook.grading.execute.Limits`).
Not guaranteed: student code runs in the same process as the checks, so code written to
subvert the interpreter itself is not stopped: walking the frames of the running check or
``gc``'s objects (to the token), changing data rather than functions (numpy's state, a
registry's entries), returning objects whose own methods run again inside the check, or
writing memory with ``ctypes``. Grade untrusted notebooks in a disposable container or
account as well.
"""

from __future__ import annotations

import copy
import hashlib
import json
import multiprocessing
import os
import re
import secrets
import tempfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from .. import book
from ..errors import BookError, GradingError
from . import kernel_side, sandbox
from .execute import (CURRENT_ENV, CellFailure, Limits, NotebookRun, execute_notebook,
                      read_notebook)
from .registry import SEED_ENV, SEED_NOTE, Exercise, exercises
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
    #: The grading run's seed, from which every check drew its cases.
    seed: int | None = None

    @property
    def timeouts(self) -> list[str]:
        """Cells, and exercises' checks, that ran past the timeout and were stopped."""
        cells = [f.label for f in self.cell_errors if f.ename == "CellTimeoutError"]
        return cells + [r.exercise for r in self.results if timed_out(r)]

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
            "seed": self.seed,
            "timeouts": self.timeouts,
            "cell_errors": [{"cell": e.label, "ename": e.ename, "evalue": e.evalue}
                            for e in self.cell_errors],
            "exercises": [dict(r.to_json(), title=self.titles.get(r.exercise, ""))
                          for r in self.results],
        }


def timed_out(result: CheckResult) -> bool:
    """Whether ``result`` says its check, or the cell it needed, ran past the timeout."""
    return result.points == 0 and ("ran longer than" in result.message
                                   or result.message.startswith("timeout:"))


@dataclass(frozen=True)
class _BareChapter:
    """A chapter known only from the registry, when no book.toml is at hand (an installed
    package graded from anywhere)."""

    number: int

    @property
    def title(self) -> str:
        return f"chapter {self.number}"

    @property
    def prefix(self) -> str:
        return f"{self.number:02d}."


def _known_chapters() -> dict:
    try:
        return {c.number: c for c in book.chapters()}
    except BookError:
        numbers = {e.chapter for e in exercises()}
        return {n: _BareChapter(n) for n in sorted(numbers)}


def chapter_of(path: str | Path, number: int | None = None) -> book.Chapter:
    """The chapter an exercise notebook belongs to: ``number`` if given, else its ``NN_``
    file-name prefix."""
    path = Path(path)
    match = _CHAPTER_PREFIX.match(path.name)
    if number is None and not match:
        raise GradingError(f"cannot tell which chapter {path.name} belongs to: exercise notebooks "
                           "are named NN_topic.ipynb after their chapter (e.g. "
                           "01_tensors_and_tensor_functions.ipynb); rename it, or name the "
                           "chapter with --chapter N")
    number = int(match.group(1)) if number is None else number
    known = _known_chapters()
    if number not in known:
        raise GradingError(f"{path.name}: the book has no chapter {number} "
                           f"(chapters {min(known)}..{max(known)})")
    return known[number]


#: sha256 of every file of the grading package, taken when this process loads the graders,
#: before it runs any notebook: a notebook that edits a grader file cannot change what the
#: checks of the next notebook are verified against.
_DIGESTS = {file.name: hashlib.sha256(file.read_bytes()).hexdigest()
            for file in sorted(_PACKAGE_DIR.glob("*.py"))}


_FIND_GRADER = ("[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "
                "'_MLCBookGrader' and c.__module__ == 'mlcbook_grader'][0]")


def _grader_cell(index: int) -> str:
    """The cell that checks exercise ``index``: no secret, and no name the notebook can rebind
    (only literals and attributes of built-in types; see :mod:`.kernel_side`)."""
    return f"{_FIND_GRADER}.grade({index})\n"


def _startup_line(digests: dict[str, str]) -> str:
    """The line the kernel runs before the notebook's first cell (so with the builtins still
    its own): run :mod:`.kernel_side`, if it is the file the digest was taken of."""
    path, digest = str(_KERNEL_SIDE), digests[_KERNEL_SIDE.name]
    return (f"(lambda p, h: h.sha256(open(p, 'rb').read()).hexdigest() == {digest!r} and "
            f"exec(compile(open(p, 'rb').read(), p, 'exec', dont_inherit=True), "
            f"{{'__name__': 'mlcbook_grader'}}))({path!r}, __import__('hashlib'))")


def new_seed() -> int:
    """A fresh seed for one grading run: every check draws its cases from it."""
    return secrets.randbelow(1 << 31)


def grade_notebook(path: str | Path, *, timeout: float = 120, kernel_name: str = CURRENT_ENV,
                   isolate: bool | Limits = False, seed: int | None = None,
                   chapter: int | None = None,
                   digests: dict[str, str] | None = None) -> NotebookReport:
    """Execute one notebook in a fresh kernel and score each exercise of its chapter, with
    cases drawn from ``seed`` (default: a new one), against the graders of ``digests``.

    The kernel runs in a new, empty folder. ``isolate`` runs it under :class:`Limits`
    (``True``: the default limits) and confined to reading Python, the mlcbook package and
    the system (:mod:`.sandbox`): not the solutions.
    """
    number = chapter
    chapter = chapter_of(path, number)
    seed = new_seed() if seed is None else seed
    expected = exercises(chapter.prefix)
    if not expected:
        raise GradingError(f"chapter {chapter.number} ({chapter.title}) has no registered "
                           f"exercises, so {Path(path).name} cannot be graded")
    check_timeout(timeout)
    if isolate and not sandbox.available():
        raise GradingError("--isolate confines the kernel with Linux Landlock (kernel 5.13 or "
                           "later), which this system lacks; Instead: grade untrusted "
                           "notebooks in a disposable container")
    digests = _DIGESTS if digests is None else digests
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
    nb.cells.extend(nbformat.v4.new_code_cell(_grader_cell(i)) for i in range(len(expected)))
    with tempfile.TemporaryDirectory(prefix="mlcbook-grade-") as folder:
        # the kernel's folder: nothing of the repository's (no solutions/) beside the notebook
        work = Path(folder) / "work"
        (work / "tmp").mkdir(parents=True)
        verdicts = work / secrets.token_hex(8)
        verdicts.mkdir()
        secret_file = work / f".{secrets.token_hex(8)}.json"
        secret_file.write_text(json.dumps({
            "token": token, "verdicts": str(verdicts), "package_dir": str(_PACKAGE_DIR),
            "digests": digests, "cells": cells, "timeout": timeout,
            "exercises": [(ex.id, ex.answer) for ex in expected]}), encoding="utf-8")
        secret_file.chmod(0o600)
        env = dict(os.environ, **{kernel_side.SECRET_ENV: str(secret_file),
                                  SEED_ENV: str(seed), "TMPDIR": str(work / "tmp"),
                                  "IPYTHONDIR": str(work / ".ipython"),
                                  "MPLCONFIGDIR": str(work / ".matplotlib")})
        if isolate:
            env.update(HOME=str(work), XDG_CACHE_HOME=str(work / ".cache"))
        run = execute_notebook(path, timeout=timeout, kernel_name=kernel_name, notebook=nb,
                               keep_going=True, limits=limits, cwd=work, env=env,
                               startup=_startup_line(digests),
                               confinement=sandbox.Confinement.for_kernel(work)
                               if isolate else None)
        results = [_verdict(ex, verdicts / f"{i}.json", token, run, first_grader + i, seed)
                   for i, ex in enumerate(expected)]
    cell_errors = [_as_timeout(f, timeout) for f in run.failures if f.index < first_grader]
    return NotebookReport(Path(path), chapter, results, run.seconds, cell_errors,
                          {ex.id: ex.title for ex in expected}, seed)


def _as_timeout(failure: CellFailure, timeout: float) -> CellFailure:
    """A cell the client interrupted shows the kernel's KeyboardInterrupt; the grader only
    interrupts a cell that ran past ``timeout``, so say so."""
    if failure.ename != "KeyboardInterrupt":
        return failure
    return CellFailure(failure.index, failure.label, "CellTimeoutError",
                       f"the cell ran longer than {timeout:g} s and was interrupted")


def _verdict(ex: Exercise, file: Path, token: str, run: NotebookRun,
             cell_index: int, seed: int) -> CheckResult:
    """The verdict the grader cell ``cell_index`` wrote to ``file``, if it carries ``token``
    and, when it gives points, says its cases were drawn from this run's ``seed``."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    if (isinstance(data, dict) and data.get("token") == token and data.get("exercise") == ex.id
            and isinstance(data.get("points"), int) and isinstance(data.get("message"), str)):
        message = data["message"]
        note = SEED_NOTE.search(message)
        if note is not None:
            message = message[:note.start()]
        if data["points"] > 0 and (note is None or int(note.group(1)) != seed):
            return CheckResult(ex.id, 0, ex.points, "not graded: the check did not draw its "
                               f"cases from this run's seed {seed} (the notebook changed "
                               f"{SEED_ENV}?)")
        # The registry of this process, not the kernel, decides what an exercise is worth.
        return CheckResult(ex.id, min(max(data["points"], 0), ex.points), ex.points, message)
    if run.stopped is not None and run.stopped.index < cell_index:
        reason = f"not graded: {run.stopped}"
    else:
        failure = next((f for f in run.failures if f.index == cell_index), None)
        if failure is not None and failure.ename == "CellTimeoutError":
            reason = f"timeout: the check {failure.evalue}"
        else:
            reason = "not graded: the grader's check did not finish" + (
                f" ({failure.error})" if failure else "")
    return CheckResult(ex.id, 0, ex.points, reason)


def check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise GradingError(f"--timeout must be a positive number of seconds, got {timeout:g}; "
                           "it is how long one cell, or one exercise's check, may run")


def grade(paths: list[str | Path], *, timeout: float = 120, kernel_name: str = CURRENT_ENV,
          isolate: bool | Limits = False, seed: int | None = None, jobs: int = 1,
          chapter: int | None = None) -> list[NotebookReport]:
    """Grade ``paths`` (in that order) with one run seed, ``jobs`` notebooks at a time."""
    check_timeout(timeout)
    for path in paths:  # fail on a bad path before spending minutes on the others
        if not Path(path).is_file():
            raise GradingError(f"notebook {path} does not exist; check the path")
        chapter_of(path, chapter)
    seed = new_seed() if seed is None else seed
    return grade_many([Path(p) for p in paths], timeout=timeout, kernel_name=kernel_name,
                      isolate=isolate, seed=seed, jobs=jobs, chapter=chapter)


def _grade_one(path: Path, options: dict):
    return grade_notebook(path, **options)


def grade_many(paths: list[Path], *, timeout: float = 120, kernel_name: str = CURRENT_ENV,
               isolate: bool | Limits = False, seed: int, jobs: int = 1,
               chapter: int | None = None) -> list:
    """One :class:`~mlcbook.grading.grade.NotebookReport` per path, in order, graded
    ``jobs`` at a time in worker processes, all from ``seed``."""
    if not isinstance(jobs, int) or jobs < 1:
        raise GradingError(f"--jobs must be a positive number of notebooks graded at once, "
                           f"got {jobs!r}; Instead: give --jobs 1 or more (at most the cores)")
    # The digests are taken here, before any notebook runs, and handed to the workers.
    options = dict(timeout=timeout, kernel_name=kernel_name, isolate=isolate, seed=seed,
                   chapter=chapter, digests=_DIGESTS)
    if jobs == 1 or len(paths) <= 1:
        return [_grade_one(p, options) for p in paths]
    # spawn, not fork: a forked copy of a process that has run kernels inherits its threads
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_grade_one, paths, [options] * len(paths)))


def to_json(reports: list[NotebookReport]) -> dict:
    return {"seed": reports[0].seed if reports else None,
            "notebooks": [r.to_json() for r in reports],
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
            what = ("timed out" if failure.ename == "CellTimeoutError"
                    else f"raised {failure.error.splitlines()[0]}")
            lines.append(f"  cell {failure.label} {what}")
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
    if reports and reports[0].seed is not None:
        lines.append(f"cases drawn with seed {reports[0].seed} (--seed {reports[0].seed} draws "
                     "them again)")
    return "\n".join(lines)
