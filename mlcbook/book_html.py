"""The course as a web book: every written chapter and its exercises rendered to static HTML.

Pages are made from the executed notebooks as saved (their outputs are what the reader sees);
nothing is re-run. Markdown goes through markdown-it, code through Pygments, math (``$...$``
and ``$$...$$``) through latex2mathml into MathML that the browser renders itself (no
script, no CDN), and figures (PNG and SVG outputs) are inlined as data URIs, so the site is a
folder of self-contained pages that opens from disk. Every page links its notebook, copied
into the site's ``notebooks/`` folder, for download::

    >>> from mlcbook import book, book_html
    >>> pages = book_html.build(book.load(), "site")      # doctest: +SKIP
    >>> pages[0].name
    'index.html'
"""

from __future__ import annotations

import base64
import html
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import latex2mathml.converter
import nbformat
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from .book import Book, Chapter
from .errors import BookError
from .paths import output_folder

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What markdown must not see: code (left as it is) and math (rendered apart, so that its
# backslashes and underscores reach the converter untouched). An inline $...$ does not start
# or end with a space, so that "costs $5 and $6" stays text.
_CODE_OR_MATH = re.compile(r"(?P<fence>^```.*?^```)|(?P<code>`[^`\n]+`)"
                           r"|\$\$(?P<block>.+?)\$\$"
                           r"|(?<![\\$])\$(?P<inline>[^\s$](?:[^$\n]*[^\s$\\])?)\$(?!\$)",
                           re.DOTALL | re.MULTILINE)
_MATH_SLOT = "MLCBOOKMATH{}X"
_UNKNOWN_COMMAND = re.compile(r">(\\[A-Za-z]+)<")
_FORMATTER = HtmlFormatter(nowrap=True)
_LEXER = PythonLexer()


@dataclass(frozen=True)
class _Heading:
    level: int
    anchor: str
    text: str


def build(loaded: Book, out_dir: str | Path) -> list[Path]:
    """Render ``loaded``'s written chapters and their student exercises into ``out_dir``.

    Returns the pages written, the index first. Raises :class:`BookError` if a written
    chapter's notebook is missing or has never been executed (no outputs saved).
    """
    out = output_folder(out_dir, "the book's site", BookError)
    written = [c for c in loaded.chapters if c.written]
    for ch in written:
        for path in (ch.notebook, ch.exercises):
            if not path.is_file():
                raise BookError(f"chapter {ch.number} is 'written' in {loaded.path} but "
                                f"{path} does not exist; Instead: create it, or set its "
                                "status to 'planned'")
    if out.exists():
        # only ever clear a folder this function made: it holds style.css and index.html
        if any(out.iterdir()) and not (out / "style.css").is_file():
            raise BookError(f"{out} exists and is not a site built by `mlcbook book build`; "
                            "Instead: give an empty or new folder with -o")
        shutil.rmtree(out)
    (out / "chapters").mkdir(parents=True)
    (out / "exercises").mkdir()
    for kind in ("chapters", "exercises"):
        (out / "notebooks" / kind).mkdir(parents=True)
        for ch in written:
            source = ch.notebook if kind == "chapters" else ch.exercises
            shutil.copyfile(source, out / "notebooks" / kind / source.name)
    (out / "style.css").write_text(_CSS + _FORMATTER.get_style_defs(".code"), encoding="utf-8")
    pages = [out / "index.html"]
    pages[0].write_text(_index(loaded, written), encoding="utf-8")
    for k, ch in enumerate(written):
        prev = written[k - 1] if k > 0 else None
        nxt = written[k + 1] if k + 1 < len(written) else None
        for kind in ("chapters", "exercises"):
            page = out / kind / f"{ch.number:02d}_{ch.slug}.html"
            page.write_text(_chapter_page(loaded, ch, kind, prev, nxt), encoding="utf-8")
            pages.append(page)
    return pages


def _href(ch: Chapter, kind: str) -> str:
    return f"../{kind}/{ch.number:02d}_{ch.slug}.html"


def _index(loaded: Book, written: list[Chapter]) -> str:
    inline = _markdown().renderInline
    rows = []
    for part in loaded.parts:
        items = []
        for ch in (c for c in loaded.chapters if c.part == part):
            label = f"{ch.number}. {html.escape(ch.title)}"
            if ch.written:
                stem = f"{ch.number:02d}_{ch.slug}.html"
                items.append(f'<li><a href="chapters/{stem}">{label}</a> '
                             f'<span class="ex">(<a href="exercises/{stem}">exercises</a>)'
                             f'</span><br><span class="summary">{inline(ch.summary)}'
                             "</span></li>")
            else:
                items.append(f'<li class="planned">{label} <span class="ex">(planned)</span></li>')
        rows.append(f"<h2>{html.escape(part.title)}</h2>\n<p class=\"needs\">Needs: "
                    f"{inline(part.needs)}</p>\n<ul class=\"toc\">{''.join(items)}</ul>")
    body = (f"<h1>{html.escape(loaded.title)}</h1>\n<p>{inline(loaded.scope)}</p>\n"
            + "\n".join(rows)
            + f"\n<p class=\"foot\">{len(written)} of {len(loaded.chapters)} chapters written."
              " Pages are rendered from the executed notebooks; open them in Jupyter to run "
              "the code.</p>")
    return _page(loaded.title, "style.css", "", body)


def _chapter_page(loaded: Book, ch: Chapter, kind: str, prev: Chapter | None,
                  nxt: Chapter | None) -> str:
    path = ch.notebook if kind == "chapters" else ch.exercises
    nb = nbformat.read(path, as_version=4)
    if kind == "chapters" and not any(c.get("outputs") for c in nb.cells
                                      if c.cell_type == "code"):
        raise BookError(f"{path} has no saved outputs; Instead: execute it first with "
                        "`mlcbook book run --save`")
    md = _markdown()
    headings: list[_Heading] = []
    try:
        cells = [_cell(cell, md, headings) for cell in nb.cells]
    except BookError as err:
        raise BookError(f"{path}: {err}") from None
    other = "exercises" if kind == "chapters" else "chapters"
    other_label = "Exercises" if kind == "chapters" else "Back to the chapter"
    nav = ['<a href="../index.html">Contents</a>']
    if prev:
        nav.append(f'<a rel="prev" href="{_href(prev, kind)}">&larr; {prev.number}. '
                   f"{html.escape(prev.title)}</a>")
    nav.append(f'<a href="{_href(ch, other)}">{other_label}</a>')
    nav.append(f'<a href="../notebooks/{kind}/{path.name}" download>Download the notebook</a>')
    if nxt:
        nav.append(f'<a rel="next" href="{_href(nxt, kind)}">{nxt.number}. '
                   f"{html.escape(nxt.title)} &rarr;</a>")
    navbar = f'<nav class="bar">{" · ".join(nav)}</nav>'
    toc = "".join(f'<li class="l{h.level}"><a href="#{h.anchor}">{html.escape(h.text)}</a></li>'
                  for h in headings if h.level in (1, 2, 3))
    title = f"{ch.number}. {ch.title}" + (" — exercises" if kind == "exercises" else "")
    body = (f'{navbar}\n<div class="layout"><aside><p class="toc-title">On this page</p>'
            f'<ul class="toc">{toc}</ul></aside>\n<main>{"".join(cells)}</main></div>\n{navbar}')
    return _page(f"{title} · mlcbook", "../style.css", "", body)


def _page(title: str, css: str, head: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title>"
            f'<link rel="stylesheet" href="{css}">{head}</head>\n<body>\n{body}\n</body></html>\n')


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.add_render_rule("fence", _render_fence)
    md.add_render_rule("code_block", _render_fence)
    return md


def _render_fence(self, tokens, idx, options, env) -> str:
    return f'<pre class="code">{highlight(tokens[idx].content, _LEXER, _FORMATTER)}</pre>\n'


def _cell(cell, md: MarkdownIt, headings: list[_Heading]) -> str:
    if cell.cell_type == "markdown":
        return f'<section class="md">{_render_markdown(cell.source, md, headings)}</section>\n'
    if cell.cell_type != "code":
        return ""
    src = f'<pre class="code in">{highlight(cell.source, _LEXER, _FORMATTER)}</pre>'
    outs = "".join(_output(o) for o in cell.get("outputs", []))
    return f'<div class="cell">{src}{outs}</div>\n'


def math_to_mathml(latex: str, display: bool) -> str:
    """``latex`` (the text between the dollars) as a MathML element.

    >>> math_to_mathml("x^2", display=False)[:6]
    '<math '
    """
    try:
        out = latex2mathml.converter.convert(latex.strip(),
                                             display="block" if display else "inline")
    except Exception as err:  # noqa: BLE001 - the converter raises several unrelated types
        why = f"{type(err).__name__}: {err}".rstrip(": ")
    else:
        # an unknown command comes out as its own name, backslash and all
        unknown = _UNKNOWN_COMMAND.search(out)
        if unknown is None:
            return out
        why = f"unknown command {unknown.group(1)}"
    raise BookError(f"the formula ${latex}$ cannot be converted to MathML ({why}); Instead: "
                    "write it with the LaTeX commands latex2mathml knows (\\frac, \\sum, "
                    "\\sqrt, ...)")


def _take_math(text: str) -> tuple[str, list[str]]:
    """``text`` with each formula replaced by a slot markdown leaves alone, and the MathML
    of each slot, in order."""
    rendered: list[str] = []

    def slot(m: re.Match) -> str:
        if m.group("fence") is not None or m.group("code") is not None:
            return m.group(0)
        block = m.group("block")
        rendered.append(math_to_mathml(block if block is not None else m.group("inline"),
                                       display=block is not None))
        return _MATH_SLOT.format(len(rendered) - 1)

    return _CODE_OR_MATH.sub(slot, text), rendered


def _render_markdown(text: str, md: MarkdownIt, headings: list[_Heading]) -> str:
    text, maths = _take_math(text)
    tokens = md.parse(text)
    used = {h.anchor for h in headings}
    for k, tok in enumerate(tokens):
        if tok.type == "heading_open":
            words = "".join(c.content for c in tokens[k + 1].children or ()
                            if c.type in ("text", "code_inline"))
            base = re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-") or "section"
            anchor, n = base, 2
            while anchor in used:
                anchor, n = f"{base}-{n}", n + 1
            used.add(anchor)
            tok.attrSet("id", anchor)
            headings.append(_Heading(int(tok.tag[1]), anchor, words))
    out = md.renderer.render(tokens, md.options, {})
    for k in reversed(range(len(maths))):  # slot 1 before slot 10 would eat its prefix
        out = out.replace(_MATH_SLOT.format(k), maths[k])
    return out


def _output(out) -> str:
    kind = out.output_type
    if kind == "stream":
        cls = "stderr" if out.get("name") == "stderr" else "stdout"
        return f'<pre class="out {cls}">{html.escape(_ANSI.sub("", out.text))}</pre>'
    if kind == "error":
        trace = _ANSI.sub("", "\n".join(out.get("traceback", [])))
        return f'<pre class="out error">{html.escape(trace)}</pre>'
    data = out.get("data", {})
    if "image/png" in data:
        png = _b64(data["image/png"])
        return f'<img class="fig" alt="figure" src="data:image/png;base64,{png}">'
    if "image/svg+xml" in data:
        svg = base64.b64encode(_text(data["image/svg+xml"]).encode()).decode()
        return f'<img class="fig" alt="figure" src="data:image/svg+xml;base64,{svg}">'
    if "text/html" in data:
        return f'<div class="out html">{_text(data["text/html"])}</div>'
    if "text/plain" in data:
        return f'<pre class="out">{html.escape(_ANSI.sub("", _text(data["text/plain"])))}</pre>'
    return ""


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def _b64(value) -> str:
    return "".join(_text(value).split())


_CSS = """
body { font: 16px/1.55 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fff; }
h1, h2, h3 { line-height: 1.25; }
a { color: #0b5cad; }
nav.bar { padding: 8px 16px; background: #f2f4f7; border-bottom: 1px solid #dde; }
body > h1, body > h2, body > p, body > ul { max-width: 860px; margin-left: 32px; }
.layout { display: flex; gap: 24px; padding: 0 16px; }
aside { flex: 0 0 230px; position: sticky; top: 0; align-self: flex-start; max-height: 100vh;
        overflow: auto; font-size: 14px; }
aside .toc { padding-left: 0; }
aside li { list-style: none; margin: 3px 0; }
aside li.l3 { padding-left: 14px; }
.toc-title { font-weight: bold; }
main { flex: 1 1 auto; min-width: 0; max-width: 900px; }
pre { overflow-x: auto; padding: 8px 10px; font-size: 13.5px; }
pre.code { background: #f6f8fa; border-left: 3px solid #8aa4c8; }
pre.out { background: #fff; border-left: 3px solid #ddd; margin-top: -6px; }
pre.stderr { background: #fff6f6; }
pre.error { background: #fdecec; }
img.fig { max-width: 100%; display: block; margin: 6px 0 14px; }
.summary, .needs, .foot { color: #555; font-size: 14px; }
li.planned { color: #888; }
.ex { font-size: 14px; }
math[display="block"] { display: block; margin: 10px 0; font-size: 110%; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccd; padding: 3px 8px; }
"""
