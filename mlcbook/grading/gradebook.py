"""A gradebook: many students' submissions graded in one run, a row per student.

A submission is a folder per student (its ``NN_*.ipynb`` notebooks; the student is named
after the folder) or, with ``chapter``, a file per student (named after the file)::

    >>> subs = submissions(["class/alice", "class/bob"])          # doctest: +SKIP
    >>> book = grade_submissions(subs, jobs=2)                     # doctest: +SKIP
    >>> write_csv(book, "grades.csv")                              # doctest: +SKIP

A folder holding no notebooks but folders that do is a class: each of those is a student.
Every notebook is graded in its own kernel (``jobs`` at a time, in worker processes), all
with one run seed, recorded in the JSON so that ``--seed`` reproduces the grades. A
student's total is the sum of that student's exercises only; an exercise of a chapter the
student did not hand in scores 0.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GradingError
from .grade import check_timeout, grade_many
from .registry import exercises
from .result import CheckResult


@dataclass
class Submission:
    student: str
    notebooks: list[Path]


@dataclass
class StudentReport:
    student: str
    reports: list = field(default_factory=list)

    def results(self) -> dict[str, CheckResult]:
        return {r.exercise: r for report in self.reports for r in report.results}

    @property
    def points(self) -> int:
        return sum(r.points for r in self.results().values())

    @property
    def timeouts(self) -> list[str]:
        return [f"{report.path.name}: {what} timed out" for report in self.reports
                for what in report.timeouts]


def _notebooks_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if p.is_file())


def submissions(paths: list[str | Path], chapter: int | None = None) -> list[Submission]:
    """The submissions ``paths`` name: a folder per student, a class folder of such
    folders, or (with ``chapter``) a file per student."""
    found: list[Submission] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            mine = _notebooks_in(path)
            if mine:
                found.append(Submission(path.resolve().name, mine))
                continue
            students = [d for d in sorted(path.iterdir()) if d.is_dir() and _notebooks_in(d)]
            if not students:
                raise GradingError(f"{path} holds no exercise notebooks (NN_topic.ipynb) and no "
                                   "student folders that do; Instead: give a student's folder "
                                   "or a class folder of student folders")
            found.extend(Submission(d.name, _notebooks_in(d)) for d in students)
        elif path.is_file():
            if chapter is None:
                raise GradingError(f"{path} is a file and its chapter is unknown; Instead: "
                                   "name the chapter with --chapter N to grade a file per "
                                   "student")
            found.append(Submission(path.stem, [path]))
        else:
            raise GradingError(f"submission {path} does not exist; Instead: give a student's "
                               "folder, a class folder, or a notebook file")
    names = [s.student for s in found]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise GradingError(f"two submissions are named {twice[0]!r}; every student needs a row "
                           "of their own: Instead: rename one folder or file")
    return found


def grade_submissions(subs: list[Submission], *, seed: int, chapter: int | None = None,
                      **options) -> list[StudentReport]:
    """Grade every notebook of every submission; one :class:`StudentReport` each."""
    check_timeout(options.get("timeout", 120))
    pairs = [(s.student, p) for s in subs for p in s.notebooks]
    reports = grade_many([p for _, p in pairs], seed=seed, chapter=chapter, **options)
    book = {s.student: StudentReport(s.student) for s in subs}
    for (student, _), report in zip(pairs, reports):
        book[student].reports.append(report)
    return list(book.values())


def columns(book: list[StudentReport]) -> list:
    """The exercises of every chapter anyone handed in, in the course's order."""
    chapters = {r.chapter.number for s in book for r in s.reports}
    return [e for e in exercises() if e.chapter in chapters]


def to_json(book: list[StudentReport], seed: int) -> dict:
    cols = columns(book)
    students = []
    for s in book:
        results = s.results()
        students.append({
            "student": s.student,
            "exercises": {e.id: results[e.id].points if e.id in results else 0 for e in cols},
            "total": s.points,
            "max_points": sum(e.points for e in cols),
            "timeouts": s.timeouts,
            "notebooks": [r.to_json() for r in s.reports],
        })
    return {"seed": seed, "exercises": {e.id: e.points for e in cols}, "students": students}


def write_csv(book: list[StudentReport], path: str | Path) -> None:
    """A row per student: the points of each exercise, the total, the maximum, timeouts."""
    cols = columns(book)
    with open(path, "w", newline="", encoding="utf-8") as file:
        out = csv.writer(file)
        out.writerow(["student", *(e.id for e in cols), "total", "max_points", "timeouts"])
        for s in book:
            results = s.results()
            out.writerow([s.student, *(results[e.id].points if e.id in results else 0
                                       for e in cols),
                          s.points, sum(e.points for e in cols), "; ".join(s.timeouts)])


def format_book(book: list[StudentReport], seed: int) -> str:
    """One line per student: total, maximum, and what timed out."""
    cols = columns(book)
    maximum = sum(e.points for e in cols)
    width = max([len(s.student) for s in book] + [7])
    lines = [f"{'student':<{width}}  points"]
    for s in book:
        late = f"  timeouts: {'; '.join(s.timeouts)}" if s.timeouts else ""
        lines.append(f"{s.student:<{width}}  {s.points:>3}/{maximum}{late}")
    lines.append(f"{len(book)} students; cases drawn with seed {seed} (--seed {seed} draws "
                 "them again)")
    return "\n".join(lines)
