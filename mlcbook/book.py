"""The book's table of contents, read from ``book.toml``.

This module is the only place that knows the order of the chapters; everything else
(the ``mlcbook book`` command, the grader, the tests) asks it::

    >>> from mlcbook import book
    >>> [c.number for c in book.chapters()][:3]
    [1, 2, 3]
    >>> book.chapter(1).title
    'Tensors and tensor functions'

``book.toml`` lives at the root of the mlcbook clone (the course is used from a clone).
It is found, in this order, from an explicit path, the ``MLCBOOK_BOOK`` environment
variable, the folder above the installed package, or the current folder and its parents.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from .errors import BookError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

STATUSES = ("written", "planned")

_BOOK_KEYS = {"title", "scope", "parts", "chapters"}
_PART_KEYS = {"key", "title", "needs"}
_CHAPTER_KEYS = {"number", "slug", "title", "part", "notebook", "exercises", "solutions",
                 "summary", "status"}
_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class Part:
    """A group of chapters, e.g. ``Part(key="programs", title="Part I. Tensor programs",
    needs="numpy, llvmlite ...")``; ``needs`` says what its chapters need installed."""

    key: str
    title: str
    needs: str


@dataclass(frozen=True)
class Chapter:
    """One chapter: its notebook, its exercise notebook and their solved version (absolute paths)."""

    number: int
    slug: str
    title: str
    part: Part
    notebook: Path
    exercises: Path
    solutions: Path
    summary: str
    status: str

    @property
    def written(self) -> bool:
        return self.status == "written"

    @property
    def prefix(self) -> str:
        """The prefix of this chapter's exercise ids, e.g. ``"01."``."""
        return f"{self.number:02d}."

    def files(self) -> tuple[Path, Path, Path]:
        return (self.notebook, self.exercises, self.solutions)


@dataclass(frozen=True)
class Book:
    title: str
    scope: str
    parts: tuple[Part, ...]
    chapters: tuple[Chapter, ...]
    path: Path

    @property
    def root(self) -> Path:
        return self.path.parent


def find_book_toml() -> Path:
    """Locate ``book.toml``; raise :class:`BookError` saying where it looked."""
    env = os.environ.get("MLCBOOK_BOOK")
    if env:
        if Path(env).is_file():
            return Path(env)
        raise BookError(f"MLCBOOK_BOOK={env!r} does not name a file; point it at the book.toml "
                        "at the root of your mlcbook clone")
    cwd = Path.cwd().resolve()
    candidates = [Path(__file__).resolve().parent.parent / "book.toml",
                  *(folder / "book.toml" for folder in (cwd, *cwd.parents))]
    for path in candidates:
        if path.is_file():
            return path
    raise BookError(f"book.toml not found (looked beside the mlcbook package and in {cwd} and its "
                    "parents); run from your mlcbook clone or set MLCBOOK_BOOK=/path/to/book.toml")


def load(path: str | os.PathLike | None = None) -> Book:
    """Read and validate a ``book.toml`` (default: :func:`find_book_toml`)."""
    path = Path(path) if path is not None else find_book_toml()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BookError(f"{path} does not exist; give the path of the book's book.toml") from None
    except tomllib.TOMLDecodeError as err:
        raise BookError(f"{path} is not valid TOML: {err}; fix the syntax there") from None
    return _validate(data, path.resolve())


def chapters(path: str | os.PathLike | None = None) -> list[Chapter]:
    """All chapters in book order (written and planned)."""
    return list(load(path).chapters)


def chapter(number: int, path: str | os.PathLike | None = None) -> Chapter:
    """The chapter with this number; :class:`BookError` if there is none."""
    found = [c for c in chapters(path) if c.number == number]
    if not found:
        known = ", ".join(str(c.number) for c in chapters(path))
        raise BookError(f"there is no chapter {number} in the book (chapters: {known})")
    return found[0]


def _validate(data: dict, path: Path) -> Book:
    where = str(path)
    _check_keys(data, _BOOK_KEYS, f"{where} (top level)")
    title = _typed(data, "title", str, f"{where} (top level)")

    parts: dict[str, Part] = {}
    for i, raw in enumerate(_typed(data, "parts", list, where)):
        ctx = f"{where}, [[parts]] #{i + 1}"
        _check_keys(raw, _PART_KEYS, ctx)
        part = Part(_typed(raw, "key", str, ctx), _typed(raw, "title", str, ctx),
                    _typed(raw, "needs", str, ctx))
        if part.key in parts:
            raise BookError(f"{ctx}: part key {part.key!r} is used twice; give each part its own key")
        parts[part.key] = part

    result: list[Chapter] = []
    slugs: set[str] = set()
    for i, raw in enumerate(_typed(data, "chapters", list, where)):
        ctx = f"{where}, [[chapters]] #{i + 1}"
        _check_keys(raw, _CHAPTER_KEYS, ctx)
        number = _typed(raw, "number", int, ctx)
        if number != i + 1:
            raise BookError(f"{ctx}: chapter number is {number} but chapters must be numbered "
                            f"1, 2, 3, ... in file order; expected {i + 1}")
        ctx = f"{where}, chapter {number}"
        slug = _typed(raw, "slug", str, ctx)
        if not _SLUG.match(slug) or slug in slugs:
            raise BookError(f"{ctx}: slug {slug!r} must be unique lower_snake_case")
        slugs.add(slug)
        status = _typed(raw, "status", str, ctx)
        if status not in STATUSES:
            raise BookError(f"{ctx}: status {status!r} is not one of {', '.join(STATUSES)}")
        part_key = _typed(raw, "part", str, ctx)
        if part_key not in parts:
            raise BookError(f"{ctx}: part {part_key!r} is not declared in [[parts]] "
                            f"(known: {', '.join(parts)})")
        files = {}
        for key, folder in (("notebook", "chapters"), ("exercises", "exercises"),
                            ("solutions", "exercises/solutions")):
            rel = _typed(raw, key, str, ctx)
            expected = f"{folder}/{number:02d}_{slug}.ipynb"
            if rel != expected:
                raise BookError(f"{ctx}: {key} = {rel!r}, but chapter files are named after "
                                f"number and slug; expected {expected!r}")
            files[key] = path.parent / rel
        result.append(Chapter(number=number, slug=slug, title=_typed(raw, "title", str, ctx),
                              part=parts[part_key], summary=_typed(raw, "summary", str, ctx),
                              status=status, **files))
    if not result:
        raise BookError(f"{where}: the book has no [[chapters]]")
    used = [c.part.key for c in result]
    runs = [key for k, key in enumerate(used) if k == 0 or used[k - 1] != key]
    if len(runs) != len(set(runs)):  # a part's chapters must be consecutive
        split = next(key for key in runs if runs.count(key) > 1)
        raise BookError(f"{where}: the chapters of part {split!r} are not consecutive "
                        f"(parts in chapter order: {', '.join(used)}); renumber the chapters "
                        "or split the part")
    return Book(title=title, scope=_typed(data, "scope", str, f"{where} (top level)"),
                parts=tuple(parts.values()), chapters=tuple(result), path=path)


def _check_keys(raw: object, allowed: set[str], ctx: str) -> None:
    if not isinstance(raw, dict):
        raise BookError(f"{ctx}: expected a table, got {type(raw).__name__}")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise BookError(f"{ctx}: unknown key(s) {', '.join(unknown)}; "
                        f"allowed: {', '.join(sorted(allowed))}")
    missing = sorted(allowed - set(raw))
    if missing:
        raise BookError(f"{ctx}: missing key(s) {', '.join(missing)}")


def _typed(raw: dict, key: str, kind: type, ctx: str):
    value = raw.get(key)
    # bool is an int subclass; a chapter number of `true` is a typo, not 1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise BookError(f"{ctx}: {key} must be a {kind.__name__}, got {value!r}")
    return value
