from __future__ import annotations

import linecache
import re
from pathlib import Path

import nbformat
import pytest

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


@pytest.fixture(scope="session")
def chapter1() -> book.Chapter:
    return book.chapter(1)


@pytest.fixture(scope="session")
def solution1(chapter1) -> dict:
    return notebook_functions(chapter1.solutions)


@pytest.fixture(scope="session")
def stub1(chapter1) -> dict:
    return notebook_functions(chapter1.exercises)
