"""Make the student version of an exercise notebook from its solved version.

In the solved notebook, each answer sits between marker lines::

    def lnumpy_bmm(A, B, C):
        ### BEGIN SOLUTION
        ...
        ### END SOLUTION

:func:`student_notebook` replaces every such region by ``raise NotImplementedError`` at
the marker's indentation, drops ``# NBVAL_CHECK_OUTPUT`` lines (they matter to the tests,
not to students) and clears all outputs. Run ``mlcbook book make-student`` after editing a
solution; a test checks that the committed student notebooks are in sync.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

from ..errors import GradingError
from .execute import read_notebook

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_NBVAL = re.compile(r"^\s*#\s*NBVAL_\w+\s*$")


def student_source(source: str, where: str = "cell") -> str:
    """One cell's source with its solution regions replaced by stubs.

    >>> student_source("def f():\\n    ### BEGIN SOLUTION\\n    return 1\\n    ### END SOLUTION")
    'def f():\\n    raise NotImplementedError'
    """
    out: list[str] = []
    inside = None
    for number, line in enumerate(source.split("\n"), start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if inside is not None:
                raise GradingError(f"{where}, line {number}: {BEGIN} inside another solution "
                                   f"region (opened on line {inside}); close it with {END}")
            inside = number
            indent = line[:len(line) - len(line.lstrip())]
            out.append(f"{indent}raise NotImplementedError")
        elif stripped == END:
            if inside is None:
                raise GradingError(f"{where}, line {number}: {END} without a {BEGIN} before it")
            inside = None
        elif inside is None and not _NBVAL.match(line):
            out.append(line)
    if inside is not None:
        raise GradingError(f"{where}, line {inside}: {BEGIN} is never closed; add {END}")
    return "\n".join(out)


def student_notebook(solution: nbformat.NotebookNode, name: str = "notebook"
                     ) -> nbformat.NotebookNode:
    """The student version of a solved notebook (a new object; the input is unchanged)."""
    nb = copy.deepcopy(solution)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            cell.source = student_source(cell.source, f"{name}, cell {index + 1}")
            cell.outputs = []
            cell.execution_count = None
        elif BEGIN in cell.source or END in cell.source:
            raise GradingError(f"{name}, cell {index + 1}: solution markers are only understood "
                               "in code cells; move the answer into a code cell")
        cell.metadata.pop("execution", None)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    """The exact text a notebook is saved as (what the sync test compares)."""
    return nbformat.writes(nb) + "\n"


def make_student(solution_path: str | Path, student_path: str | Path, *,
                 check: bool = False) -> bool:
    """Write (or with ``check=True`` only compare) the student notebook; True if it was in sync."""
    solution_path, student_path = Path(solution_path), Path(student_path)
    text = render(student_notebook(read_notebook(solution_path), solution_path.name))
    current = student_path.read_text(encoding="utf-8") if student_path.is_file() else None
    if current == text:
        return True
    if not check:
        student_path.parent.mkdir(parents=True, exist_ok=True)
        student_path.write_text(text, encoding="utf-8")
    return False
