"""book.toml: the table of contents, its files, and its validation errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlcbook import book
from mlcbook.errors import BookError

ROOT = Path(__file__).resolve().parent.parent


def test_eleven_chapters_numbered_in_order():
    chapters = book.chapters()
    assert [c.number for c in chapters] == list(range(1, 12))
    assert chapters[0].title == "Tensors and tensor functions"
    assert chapters[0].written and chapters[0].prefix == "01."


@pytest.mark.parametrize("chapter", [c for c in book.chapters() if c.written],
                         ids=lambda c: f"chapter{c.number:02d}")
def test_every_file_of_a_written_chapter_exists(chapter):
    for path in chapter.files():
        assert path.is_file(), f"chapter {chapter.number} is 'written' but {path} is missing"


def test_no_chapter_notebook_is_left_out_of_the_book():
    named = {p for c in book.chapters() for p in c.files()}
    on_disk = {p.resolve() for folder in ("chapters", "exercises", "exercises/solutions")
               for p in (ROOT / folder).glob("[0-9]*.ipynb")}
    assert on_disk <= named, f"notebooks not in book.toml: {sorted(on_disk - named)}"


def _write(tmp_path, text):
    path = tmp_path / "book.toml"
    path.write_text(text)
    return path


def _one_chapter(**changes):
    fields = dict(number=1, slug='"a"', title='"A"', part='"p"',
                  notebook='"chapters/01_a.ipynb"', exercises='"exercises/01_a.ipynb"',
                  solutions='"exercises/solutions/01_a.ipynb"', summary='"s"',
                  status='"planned"')
    fields.update(changes)
    body = "\n".join(f"{k} = {v}" for k, v in fields.items() if v is not None)
    return (f'title = "T"\nscope = "S"\n[[parts]]\nkey = "p"\ntitle = "P"\nneeds = "N"\n'
            f'[[chapters]]\n{body}\n')


def test_a_minimal_book_loads(tmp_path):
    loaded = book.load(_write(tmp_path, _one_chapter()))
    assert loaded.chapters[0].notebook == tmp_path / "chapters/01_a.ipynb"
    assert loaded.parts[0].title == "P" and loaded.parts[0].needs == "N"
    assert loaded.scope == "S"


def test_the_book_states_its_scope_and_what_each_part_needs():
    loaded = book.load()
    assert "GPU" in loaded.scope and "x86-64" in loaded.scope and "ARM" in loaded.scope
    assert all(part.needs for part in loaded.parts)


def test_the_readme_lists_every_part():
    readme = (ROOT / "README.md").read_text()
    for part in book.load().parts:
        assert part.title.removeprefix("Part ") in readme, f"README lacks {part.title!r}"


def test_kernel_level_chapters_are_not_under_whole_models():
    by_slug = {c.slug: c.part.key for c in book.chapters()}
    assert by_slug["automatic_optimization"] != "models"
    assert by_slug["hardware_native_acceleration"] != "models"
    assert [c.slug for c in book.chapters()][5:] == [
        "graph_optimization", "automatic_optimization", "hardware_native_acceleration",
        "training", "rewriting_models_while_they_train", "deployment"]


def test_a_part_with_chapters_apart_is_refused(tmp_path):
    text = _one_chapter().replace('[[chapters]]', '[[parts]]\nkey = "q"\ntitle = "Q"\n'
                                  'needs = "N"\n[[chapters]]', 1)
    for number, slug, part in ((2, "b", "q"), (3, "c", "p")):
        text += (f'[[chapters]]\nnumber = {number}\nslug = "{slug}"\ntitle = "X"\n'
                 f'part = "{part}"\nnotebook = "chapters/0{number}_{slug}.ipynb"\n'
                 f'exercises = "exercises/0{number}_{slug}.ipynb"\n'
                 f'solutions = "exercises/solutions/0{number}_{slug}.ipynb"\n'
                 'summary = "s"\nstatus = "planned"\n')
    with pytest.raises(BookError, match="chapters of part 'p' are not consecutive"):
        book.load(_write(tmp_path, text))


@pytest.mark.parametrize("changes, message", [
    (dict(number=2), "chapter number is 2 but chapters must be numbered 1, 2, 3"),
    (dict(status='"done"'), "status 'done' is not one of written, planned"),
    (dict(part='"q"'), "part 'q' is not declared in \\[\\[parts\\]\\]"),
    (dict(summary=None), "missing key\\(s\\) summary"),
    (dict(colour='"red"'), "unknown key\\(s\\) colour"),
    (dict(number="true"), "number must be a int, got True"),
    (dict(notebook='"chapters/a.ipynb"'), "expected 'chapters/01_a.ipynb'"),
])
def test_bad_book_toml_gives_book_error(tmp_path, changes, message):
    with pytest.raises(BookError, match=message):
        book.load(_write(tmp_path, _one_chapter(**changes)))


def test_bad_toml_syntax_and_missing_file(tmp_path):
    with pytest.raises(BookError, match=r"is not valid TOML: .*fix the syntax"):
        book.load(_write(tmp_path, "title = \n"))
    with pytest.raises(BookError, match="does not exist"):
        book.load(tmp_path / "nope.toml")


def test_unknown_chapter_number():
    with pytest.raises(BookError, match=r"there is no chapter 12 in the book \(chapters: 1, 2"):
        book.chapter(12)


def test_environment_variable_names_the_book(tmp_path, monkeypatch):
    monkeypatch.setenv("MLCBOOK_BOOK", str(_write(tmp_path, _one_chapter())))
    assert book.find_book_toml() == tmp_path / "book.toml"
    monkeypatch.setenv("MLCBOOK_BOOK", str(tmp_path / "missing.toml"))
    with pytest.raises(BookError, match="MLCBOOK_BOOK=.* does not name a file"):
        book.load()


def test_chapter_order_is_read_only_in_book_py():
    offenders = [p for p in (ROOT / "mlcbook").rglob("*.py")
                 if p.name != "book.py" and re.search(r"book\.toml", p.read_text())
                 and "tomllib" in p.read_text()]
    assert offenders == []
