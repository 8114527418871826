from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from mlcbook import book


_CHECK_CELL = re.compile(r"^mb\.grading\.check\(", re.MULTILINE)


def notebook_functions(path: Path) -> dict:
    """Execute a notebook's code cells, except its check cells, and return the namespace."""
    nb = nbformat.read(path, as_version=4)
    namespace: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and not _CHECK_CELL.search(cell.source):
            exec(compile(cell.source, f"{path.name}", "exec"), namespace)
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
