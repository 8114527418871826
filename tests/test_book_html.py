"""mlcbook.book_html without a browser: what is rendered, and the errors for bad input."""

from __future__ import annotations

import re
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


def test_math_renders_as_mathml_with_its_backslashes(tmp_path):
    pages = build(book.load(), tmp_path / "site")
    text = next(p for p in pages if p.parent.name == "exercises"
                and p.name.startswith("06_")).read_text()
    assert "$$" not in text and '<math xmlns="http://www.w3.org/1998/Math/MathML" ' \
        'display="block">' in text
    assert "<mfrac>" in text and "<msqrt>" in text   # \frac and \sqrt survived markdown


def test_inline_math_is_told_from_prices_and_code():
    from mlcbook.book_html import _markdown, _render_markdown
    out = _render_markdown("a $x_i^2$ and `$HOME` cost $5 and $6", _markdown(), [])
    assert out.count("<math ") == 1 and "<code>$HOME</code>" in out and "$5 and $6" in out


@pytest.mark.parametrize("latex, why", [("x^", "MissingSuperScriptOrSubscriptError"),
                                        (r"\notacommand x", r"unknown command \\notacommand")])
def test_a_formula_the_converter_refuses_names_itself(latex, why):
    from mlcbook.book_html import math_to_mathml
    with pytest.raises(BookError, match=rf"\${re.escape(latex)}\$ cannot be converted.*{why}.*Instead"):
        math_to_mathml(latex, display=False)


def test_every_page_links_its_notebook_for_download(tmp_path):
    out = tmp_path / "site"
    pages = build(book.load(), out)
    for page in pages[1:]:
        link = re.search(r'<a href="\.\./(notebooks/[^"]+\.ipynb)" download>', page.read_text())
        assert link, page
        assert (out / link.group(1)).is_file()
        assert (out / link.group(1)).name.startswith(page.stem)
