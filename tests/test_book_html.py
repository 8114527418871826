"""mlcbook.book_html without a browser: what is rendered, and the errors for bad input."""

from __future__ import annotations

import shutil

import pytest

from mlcbook import book
from mlcbook.book_html import build
from mlcbook.errors import BookError


def test_pages_have_navigation_a_toc_and_highlighted_code(tmp_path):
    pages = build(book.load(), tmp_path / "site")
    written = [c for c in book.chapters() if c.written]
    index = pages[0].read_text()
    assert all(f"chapters/{c.number:02d}_{c.slug}.html" in index for c in written)
    first = (tmp_path / "site" / "chapters" / f"01_{written[0].slug}.html").read_text()
    assert 'rel="next"' in first and 'rel="prev"' not in first
    assert f'href="../exercises/01_{written[0].slug}.html"' in first
    assert '<ul class="toc"><li class="l1"><a href="#' in first
    assert '<span class="k">' in first  # pygments classes for keywords
    assert "data:image/png;base64," in first


def _copy_book(tmp_path):
    root = book.load().root
    shutil.copy(root / "book.toml", tmp_path / "book.toml")
    for folder in ("chapters", "exercises"):
        shutil.copytree(root / folder, tmp_path / folder)
    return tmp_path / "book.toml"


def test_a_written_chapter_without_its_exercises_is_an_error(tmp_path):
    (tmp_path / "b").mkdir()
    toml = _copy_book(tmp_path / "b")
    (tmp_path / "b" / "exercises" / "02_loop_ir.ipynb").unlink()
    with pytest.raises(BookError, match=r"chapter 2 is 'written'.*02_loop_ir.ipynb does not "
                       r"exist; Instead"):
        build(book.load(toml), tmp_path / "site")


def test_it_refuses_to_overwrite_a_folder_it_did_not_build(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(BookError, match="not a site built by `mlcbook book build`"):
        build(book.load(), tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
