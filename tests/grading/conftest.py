from __future__ import annotations

import functools
import linecache
import re
from pathlib import Path

import nbformat
import mlcbook.grading as grading
from mlcbook import book


_CHECK_CELL = re.compile(r"^mb\.grading\.check\(", re.MULTILINE)


def notebook_functions(path: Path, definitions_only: bool = False) -> dict:
    """Execute a notebook's code cells, except its check cells, and return the namespace.

    ``definitions_only`` runs just the ``import`` and ``def`` cells (for notebooks whose
    other cells call the answers, which a student version does not have yet). Each cell's
    source goes into linecache under its own file name, as IPython does, so that
    @T.prim_func, which reads a function's source, works on functions the cells define;
    cells compile without this file's ``__future__`` flags, as they would in a kernel.
    """
    nb = nbformat.read(path, as_version=4)
    namespace: dict = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or _CHECK_CELL.search(cell.source):
            continue
        if definitions_only and not cell.source.startswith(("import", "def ")):
            continue
        filename = f"<{path.name}, cell {index + 1}>"
        linecache.cache[filename] = (len(cell.source), None,
                                     cell.source.splitlines(keepends=True), filename)
        exec(compile(cell.source, filename, "exec", dont_inherit=True), namespace)
    return namespace


@functools.cache
def solution(number: int) -> dict:
    """The names chapter ``number``'s solution notebook defines (its answers among them)."""
    return notebook_functions(book.chapter(number).solutions, definitions_only=True)


@functools.cache
def stub(number: int) -> dict:
    """The names chapter ``number``'s student notebook defines: the stubs that raise."""
    return notebook_functions(book.chapter(number).exercises, definitions_only=True)


def zero(exercise_id: str, answer) -> str:
    """Grade ``answer``, assert it earned nothing for a reason of the checker's own (not an
    internal error), and return the message, for the test to check what it says."""
    result = grading.check(exercise_id, answer)
    assert result.points == 0, str(result)
    assert "internal error" not in result.message, result.message
    return result.message
