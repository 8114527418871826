from __future__ import annotations

import functools
import linecache
import re
from pathlib import Path

import nbformat
import pytest

import mlcbook.grading as grading
from mlcbook import book
from mlcbook.grading import registry


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
        # the folder too: a solution notebook and its student version share a file name
        filename = f"<{path.parent.name}/{path.name}, cell {index + 1}>"
        linecache.cache[filename] = (len(cell.source), None,
                                     cell.source.splitlines(keepends=True), filename)
        exec(compile(cell.source, filename, "exec", dont_inherit=True), namespace)
    return namespace


@pytest.fixture
def scratch_exercise():
    """A throw-away exercise '99.scratch_*' removed again after the test."""
    before = dict(registry._REGISTRY)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(before)


@functools.cache
def solution(number: int) -> dict:
    """The names chapter ``number``'s solution notebook defines (its answers among them)."""
    return notebook_functions(book.chapter(number).solutions, definitions_only=True)


@functools.cache
def stub(number: int) -> dict:
    """The names chapter ``number``'s student notebook defines: the stubs that raise."""
    return notebook_functions(book.chapter(number).exercises, definitions_only=True)


#: The seeds :func:`zero` grades a wrong answer on besides the exercise's own: ``mlcbook
#: grade`` draws fresh cases every run, and a wrong answer must not pass on a lucky draw.
ZERO_SEEDS = (1, 2)


def zero(exercise_id: str, answer) -> str:
    """Grade ``answer`` on the exercise's own seed and on :data:`ZERO_SEEDS`, assert it earned
    nothing each time for a reason of the checker's own (not an internal error), and return
    the first message, for the test to check what it says."""
    messages = []
    for seed in (None, *ZERO_SEEDS):
        result = grading.check(exercise_id, answer, seed=seed)
        assert result.points == 0, f"with seed {seed}: {result}"
        assert "internal error" not in result.message, f"with seed {seed}: {result.message}"
        messages.append(result.message)
    return messages[0]
