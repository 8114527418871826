"""The web book, opened in a real browser: every page loads without console errors, every
link and source resolves to a file of the site (and every #fragment to an id on its page),
every figure decodes, no page shows a raw `$$` (every formula was rendered, as MathML the
browser lays out), and pages are saved as screenshots."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from mlcbook import book
from mlcbook.book_html import build

from ._browser import Browser, find_chromium


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, list[Path]]:
    out = tmp_path_factory.mktemp("site") / "site"
    return out, build(book.load(), out)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is missing on CI; .ci/run installs it with apt-get")
        pytest.skip("headless Chromium is not installed (Debian: apt-get install chromium); "
                    "the web book is checked in a real browser")
    with Browser(binary, tmp_path_factory.mktemp("profile")) as b:
        yield b


def _problems(out: Path, pages: list[Path], browser) -> tuple[list[str], dict]:
    probes = {page.resolve(): browser.visit(page.resolve().as_uri()) for page in pages}
    problems = []
    for page, probe in probes.items():
        rel = page.relative_to(out.resolve())
        problems += [f"{rel}: {e}" for e in probe["errors"]]
        problems += [f"{rel}: image {src!r} did not decode" for src, done, width in
                     probe["images"] if not (done and width > 0)]
        if "$$" in probe["text"]:
            problems.append(f"{rel}: raw $$ in the page: a formula was not rendered")
        problems += [f"{rel}: a {display} formula was laid out {width:g} px wide"
                     for display, width, _ in probe["math"] if not width > 0]
        for tag, raw, resolved in probe["links"]:
            url = urlsplit(resolved)
            if url.scheme == "data":
                continue
            if url.scheme != "file":
                problems.append(f"{rel}: <{tag}> {raw!r} leaves the site")
                continue
            target = Path(unquote(url.path)).resolve()
            if out.resolve() not in target.parents or not target.is_file():
                problems.append(f"{rel}: <{tag}> {raw!r} names no file of the site")
            elif url.fragment and url.fragment not in probes.get(target, {}).get("ids", []):
                problems.append(f"{rel}: <{tag}> {raw!r}: no id {url.fragment!r} there")
    return problems, probes


def test_every_page_loads_cleanly_and_every_link_resolves(site, browser):
    out, pages = site
    problems, probes = _problems(out, pages, browser)
    assert problems == []
    written = [c for c in book.chapters() if c.written]
    assert len(probes) == 1 + 2 * len(written)
    titles = [p["title"] for p in probes.values()]
    assert all(any(t.startswith(f"{c.number}. {c.title}") for t in titles) for c in written)


def test_the_check_catches_a_broken_link_a_bad_image_and_a_console_error(tmp_path, browser):
    page = tmp_path / "bad.html"
    page.write_text('<!DOCTYPE html><html><head><title>bad</title></head><body>'
                    '<a href="missing.html">gone</a><a href="#nowhere">anchor</a>'
                    '<img src="data:image/png;base64,AAAA"><p>$$x^2$$</p>'
                    '<script>console.error("boom")</script></body></html>')
    problems, _ = _problems(tmp_path, [page], browser)
    text = "\n".join(problems)
    assert "'missing.html' names no file" in text and "no id 'nowhere'" in text
    assert "did not decode" in text and "console.error" in text
    assert "raw $$ in the page" in text


def test_a_chapter_page_renders_with_figures_and_a_screenshot(site, browser, tmp_path_factory):
    out, pages = site
    page = next(p for p in pages if p.name.startswith("01_") and p.parent.name == "chapters")
    probe = browser.visit(page.resolve().as_uri())
    assert probe["images"], "chapter 1 has figures; none were rendered"
    shot = tmp_path_factory.getbasetemp() / "chapter01.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    print(f"screenshot: {shot}")


def test_formulas_render_as_math_with_a_screenshot(site, browser, tmp_path_factory):
    out, pages = site
    page = next(p for p in pages if p.name.startswith("06_") and p.parent.name == "exercises")
    probe = browser.visit(page.resolve().as_uri())
    blocks = [(w, h) for display, w, h in probe["math"] if display == "block"]
    assert blocks and all(w > 100 and h > 20 for w, h in blocks), probe["math"]
    assert "$$" not in probe["text"] and "\\frac" not in probe["text"]
    browser.call("Runtime.evaluate", expression="document.querySelector('math[display=block]')"
                 ".scrollIntoView({block: 'center'})")
    shot = tmp_path_factory.getbasetemp() / "exercises06_math.png"
    browser.screenshot(shot)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")
