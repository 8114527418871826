"""The ``mlcbook`` command (also ``python -m mlcbook``).

    mlcbook tour                        the built-in end-to-end demo
    mlcbook grade NOTEBOOK... [--json out.json] [--timeout S]
    mlcbook book                        the table of contents, with each chapter's status
    mlcbook book run [--save]           execute every written chapter and solution notebook
    mlcbook book make-student [--check] regenerate the student exercise notebooks
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import MLCError


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except MLCError as err:
        print(f"mlcbook {args.command}: error: {err}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mlcbook", description="A course in machine-learning compilation, and its compiler.")
    parser.add_argument("--version", action="version", version=f"mlcbook {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    tour = sub.add_parser("tour", help="run the built-in end-to-end demo",
                          description="Run the built-in end-to-end demo of the compiler.")
    tour.add_argument("args", nargs=argparse.REMAINDER, help="passed on to the tour")
    tour.set_defaults(run=_tour)

    grade = sub.add_parser("grade", help="execute exercise notebooks and print their scores",
                           description="Execute each notebook in a fresh kernel, collect every "
                           "check's result, and print a score table (optionally as JSON).")
    grade.add_argument("notebooks", nargs="+", metavar="NOTEBOOK")
    grade.add_argument("--json", metavar="PATH", help="also write the scores as JSON to PATH")
    grade.add_argument("--timeout", type=float, default=120, metavar="S",
                       help="seconds one cell may run (default: 120)")
    grade.add_argument("--kernel", metavar="NAME",
                       help="a Jupyter kernel name (default: this Python environment)")
    grade.set_defaults(run=_grade)

    bk = sub.add_parser("book", help="list, run or maintain the book's chapters",
                        description="List the book's chapters (default), execute the written "
                        "ones, or regenerate the student exercise notebooks.")
    bk.add_argument("action", nargs="?", choices=["list", "run", "make-student"], default="list")
    bk.add_argument("--run", dest="action", action="store_const", const="run",
                    help="same as the action 'run'")
    bk.add_argument("--save", action="store_true",
                    help="run: write the executed notebooks back, outputs included")
    bk.add_argument("--check", action="store_true",
                    help="make-student: only report notebooks that are out of date (exit 1)")
    bk.add_argument("--timeout", type=float, default=120, metavar="S",
                    help="run: seconds one cell may run (default: 120)")
    bk.set_defaults(run=_book)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("mlcbook")
    except PackageNotFoundError:
        return "(not installed)"


def _tour(args: argparse.Namespace) -> int:
    from . import tour
    return int(tour.main(args.args) or 0)


def _grade(args: argparse.Namespace) -> int:
    from .grading import grade
    from .grading.execute import CURRENT_ENV
    reports = grade.grade(args.notebooks, timeout=args.timeout,
                          kernel_name=args.kernel or CURRENT_ENV)
    print(grade.format_table(reports))
    if args.json:
        Path(args.json).write_text(json.dumps(grade.to_json(reports), indent=2) + "\n",
                                   encoding="utf-8")
        print(f"scores written to {args.json}")
    return 0


def _book(args: argparse.Namespace) -> int:
    from . import book
    loaded = book.load()
    if args.action == "list":
        print(loaded.title)
        for part in loaded.parts:
            print(f"\n{part.title}")
            for ch in (c for c in loaded.chapters if c.part == part):
                print(f"  {ch.number:>2}. {ch.title:<36} {ch.status}")
        written = sum(c.written for c in loaded.chapters)
        print(f"\n{written} of {len(loaded.chapters)} chapters written; book.toml: {loaded.path}")
        return 0
    if args.action == "run":
        return _book_run(loaded, timeout=args.timeout, save=args.save)
    return _book_make_student(loaded, check=args.check)


def _book_run(loaded, *, timeout: float, save: bool) -> int:
    import nbformat
    from tqdm.auto import tqdm

    from .grading.execute import execute_notebook
    paths = [p for c in loaded.chapters if c.written for p in (c.notebook, c.solutions)]
    failures = 0
    rows = []
    for path in tqdm(paths, desc="running the book", unit="notebook"):
        run = execute_notebook(path, timeout=timeout)
        rows.append((path.relative_to(loaded.root), run.seconds, run.error))
        if run.error is not None:
            failures += 1
        elif save:
            nbformat.write(run.notebook, path)
    for rel, seconds, error in rows:
        print(f"  {seconds:6.1f} s  {rel}" + (f"  FAILED: {error}" if error else ""))
    print(f"{len(rows) - failures} of {len(rows)} notebooks ran cleanly")
    return 1 if failures else 0


def _book_make_student(loaded, *, check: bool) -> int:
    from .grading.make_student import make_student
    stale = []
    for ch in loaded.chapters:
        if not ch.solutions.is_file():
            continue
        if not make_student(ch.solutions, ch.exercises, check=check):
            stale.append(ch.exercises.relative_to(loaded.root))
    verb = "out of date" if check else "written"
    for rel in stale:
        print(f"{verb}: {rel}")
    if not stale:
        print("student notebooks are in sync with their solutions")
    return 1 if (check and stale) else 0
