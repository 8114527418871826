"""``mlcbook grade``: execute exercise notebooks and score every exercise they should contain.

The exercises a notebook should contain are the registered ones of its chapter, found from
the ``NN_`` prefix of its file name and ``book.toml`` (``exercises/02_loop_ir.ipynb`` ->
every id starting ``02.``). Each exercise's score is the last check result its notebook
displayed; an exercise whose check never ran scores zero, with the reason::

    >>> report = grade_notebook("exercises/solutions/01_tensors_and_tensor_functions.ipynb")
    >>> report.points, report.max_points
    (10, 10)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import book
from ..errors import GradingError
from .execute import CURRENT_ENV, CellFailure, execute_notebook
from .registry import exercises
from .result import MIMETYPE, CheckResult

_CHAPTER_PREFIX = re.compile(r"^(\d\d)_")


@dataclass
class NotebookReport:
    path: Path
    chapter: book.Chapter
    results: list[CheckResult]
    seconds: float
    error: CellFailure | None = None
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
            "error": None if self.error is None else {
                "cell": self.error.cell + 1, "ename": self.error.ename,
                "evalue": self.error.evalue},
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


def grade_notebook(path: str | Path, *, timeout: float = 120,
                   kernel_name: str = CURRENT_ENV) -> NotebookReport:
    """Execute one notebook in a fresh kernel and score each exercise of its chapter."""
    chapter = chapter_of(path)
    expected = exercises(chapter.prefix)
    if not expected:
        raise GradingError(f"chapter {chapter.number} ({chapter.title}) has no registered "
                           f"exercises, so {Path(path).name} cannot be graded")
    run = execute_notebook(path, timeout=timeout, kernel_name=kernel_name)
    found: dict[str, CheckResult] = {}
    for cell in run.notebook.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {}) if out.get("output_type") in (
                "execute_result", "display_data") else {}
            if MIMETYPE in data:
                result = CheckResult.from_json(data[MIMETYPE])
                found[result.exercise] = result  # a check run twice counts as its last run
    results = []
    for ex in expected:
        result = found.get(ex.id)
        if result is None:
            reason = (f"not reached: {run.error}" if run.error is not None else
                      "no check cell ran for this exercise; keep the cell "
                      f"mb.grading.check({ex.id!r}, ...) in the notebook")
            result = CheckResult(ex.id, 0, ex.points, reason)
        else:
            # The registry, not the notebook's output, decides what an exercise is worth.
            result = CheckResult(ex.id, min(max(result.points, 0), ex.points), ex.points,
                                 result.message)
        results.append(result)
    return NotebookReport(Path(path), chapter, results, run.seconds, run.error,
                          {ex.id: ex.title for ex in expected})


def grade(paths: list[str | Path], *, timeout: float = 120,
          kernel_name: str = CURRENT_ENV) -> list[NotebookReport]:
    for path in paths:  # fail on a bad path before spending minutes on the others
        if not Path(path).is_file():
            raise GradingError(f"notebook {path} does not exist; check the path")
        chapter_of(path)
    return [grade_notebook(p, timeout=timeout, kernel_name=kernel_name) for p in paths]


def to_json(reports: list[NotebookReport]) -> dict:
    return {"notebooks": [r.to_json() for r in reports],
            "points": sum(r.points for r in reports),
            "max_points": sum(r.max_points for r in reports)}


def format_table(reports: list[NotebookReport]) -> str:
    """The score table ``mlcbook grade`` prints: one block per notebook, then the total."""
    lines: list[str] = []
    for report in reports:
        lines.append(f"{report.path}  (chapter {report.chapter.number}: {report.chapter.title}, "
                     f"ran in {report.seconds:.1f} s)")
        if report.error is not None:
            lines.append(f"  stopped early: {report.error}")
        width = max(len(r.exercise) for r in report.results)
        for r in report.results:
            first, *rest = r.message.split("\n")
            mark = "ok " if r.passed else "-- "
            score = f"{r.points}/{r.max_points}"
            lines.append(f"  {mark}{r.exercise:<{width}}  {score:>5}  {first}")
            lines.extend(f"  {'':<{width + 3}}  {'':>5}  {line.strip()}" for line in rest)
        lines.append(f"  {'total':<{width + 3}}  {report.points:>2}/{report.max_points:<2}")
        lines.append("")
    total = sum(r.points for r in reports)
    maximum = sum(r.max_points for r in reports)
    lines.append(f"overall: {total}/{maximum} points in {len(reports)} notebook"
                 + ("s" if len(reports) != 1 else ""))
    return "\n".join(lines)
