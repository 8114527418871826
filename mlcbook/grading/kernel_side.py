"""The half of ``mlcbook grade`` that runs inside the notebook's kernel.

``mlcbook grade`` never counts the check results a notebook displays: a cell can display
anything. The kernel runs this file (checked against the digest the grader took) *before*
the notebook's first cell, outside the history: it reads the run's secrets (the one-time
token, the verdicts' folder, the exercises, the graders' digests) from a file the grader
wrote, deletes the file and its name from the environment, and keeps them only in a
closure of the class ``_MLCBookGrader``. After the notebook's cells, the grader appends one
cell per exercise that holds no secret and names nothing the notebook can rebind::

    [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_MLCBookGrader'
     and c.__module__ == 'mlcbook_grader'][0].grade(0)

It finds the class through ``object``'s subclasses (the first one so named was made before
any notebook code ran) and calls :func:`grade_answer`, which

1. imports the graders afresh from the package's files, each verified against its digest,
   in place of whatever the notebook left in ``sys.modules`` (so replacing entries of the
   registry, or editing a checker's file while the notebook runs, changes nothing);
2. refuses an answer that no cell of the graded notebook defined (one defined by running
   another notebook, such as the solutions, or by ``exec`` of text from elsewhere);
3. checks the answer and writes the verdict, with the run's one-time token, into the
   verdicts' folder; the grader accepts no verdict without the token.

This file imports nothing from mlcbook at module level: it is run outside the package.
Everything it uses was bound when it ran, before the notebook's code.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib
import importlib.abc
import importlib.util
import json
import linecache
import os
import sys
import types
from pathlib import Path

PACKAGE = "mlcbook.grading"
#: the environment variable that names the secrets' file (deleted once read)
SECRET_ENV = "MLCBOOK_GRADER_SECRET"
#: builtins as they were when this file ran, before any notebook code could rebind them
_callable, _isinstance, _KeyboardInterrupt = builtins.callable, builtins.isinstance, \
    builtins.KeyboardInterrupt
_HOOKS: list = []


class _VerifiedSources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the grading modules from source bytes already checked against their digests,
    and refuses any other module under the grading package."""

    def __init__(self, sources: dict[str, tuple[Path, bytes]]):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources:
            if name.startswith(PACKAGE + "."):
                raise ImportError(f"{name} is not one of the grader's verified modules")
            return None
        file, _ = self.sources[name]
        return importlib.util.spec_from_file_location(
            name, file, loader=self,
            submodule_search_locations=[str(file.parent)] if name == PACKAGE else None)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        file, source = self.sources[module.__name__]
        exec(compile(source, str(file), "exec", dont_inherit=True), module.__dict__)


def fresh_grading(package_dir: str, digests: dict[str, str]) -> types.ModuleType:
    """Import ``mlcbook.grading`` anew from ``package_dir``, every file verified by sha256."""
    sources = {}
    for filename, digest in digests.items():
        file = Path(package_dir) / filename
        source = file.read_bytes()
        if hashlib.sha256(source).hexdigest() != digest:
            raise RuntimeError(f"the grader's file {file} changed while the notebook ran")
        name = PACKAGE if filename == "__init__.py" else f"{PACKAGE}.{filename[:-3]}"
        sources[name] = (file, source)
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    finder = _VerifiedSources(sources)
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.meta_path.remove(finder)


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def defined_elsewhere(answer: object, name: str, cells: list[str]) -> str | None:
    """Why ``answer`` does not count as written in the graded notebook, or None if it does.

    A function counts if the cell its code was compiled from is one of ``cells``; values
    that are not callable are left to the checker (which says what it expected).
    """
    if not _callable(answer):
        return None
    if not _isinstance(answer, types.FunctionType):
        return (f"{name} is a {type(answer).__name__}, not a function defined with def; "
                f"write {name} with def in its exercise cell")
    lines = linecache.getlines(answer.__code__.co_filename)
    if lines:
        source = _normalized("".join(lines))
        shell = _ipython()
        for cell in cells:
            if source == _normalized(cell) or (
                    shell is not None and source == _normalized(shell.transform_cell(cell))):
                return None
    return (f"{name} was not defined by a cell of this notebook (its code comes from "
            f"{answer.__code__.co_filename}): only answers written in the notebook being "
            f"graded count; write {name} in its exercise cell")


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def arm() -> None:
    """Read the secrets' file named by ``$MLCBOOK_GRADER_SECRET``, delete it and the variable,
    and make the class ``_MLCBookGrader`` whose ``grade(index)`` checks exercise ``index``."""
    path = os.environ.pop(SECRET_ENV, None)
    if not path:
        return
    secret = json.loads(Path(path).read_text(encoding="utf-8"))
    os.unlink(path)
    exercises, run = secret.pop("exercises"), dict(secret)
    verdicts = Path(run.pop("verdicts"))

    class _MLCBookGrader:
        @staticmethod
        def grade(index: int) -> None:
            exercise_id, answer_name = exercises[index]
            grade_answer(exercise_id=exercise_id, answer_name=answer_name,
                         out_path=str(verdicts / f"{index}.json"), **run)

    # object.__subclasses__() holds classes weakly: keep this one (and this file's functions)
    # alive from a root, or it is collected once the start-up line is done
    holder = types.ModuleType("mlcbook_grader")
    holder.grader = _MLCBookGrader
    sys.modules.setdefault("mlcbook_grader", holder)
    _HOOKS.append(_MLCBookGrader)


def grade_answer(*, exercise_id: str, answer_name: str, package_dir: str,
                 digests: dict[str, str], cells: list[str], token: str, out_path: str,
                 timeout: float) -> None:
    """Check the notebook's ``answer_name`` for ``exercise_id``; write the verdict as JSON."""
    verdict = {"token": token, "exercise": exercise_id}
    try:
        grading = fresh_grading(package_dir, digests)
        namespace = _ipython().user_ns
        if answer_name not in namespace:
            verdict.update(points=0, message=f"the notebook defines no {answer_name}; keep the "
                           f"exercise's `def {answer_name}(...)` cell and its name")
        else:
            answer = namespace[answer_name]
            problem = defined_elsewhere(answer, answer_name, cells)
            if problem is not None:
                verdict.update(points=0, message=problem)
            else:
                result = grading.check(exercise_id, answer)
                verdict.update(points=result.points, message=result.message)
    except _KeyboardInterrupt:
        verdict.update(points=0, message=f"the check of {answer_name} ran longer than "
                       f"{timeout:g} s and was stopped; look for a loop that never ends")
    Path(out_path).parent.mkdir(exist_ok=True)
    Path(out_path).write_text(json.dumps(verdict), encoding="utf-8")


if __name__ == "mlcbook_grader":   # run by the kernel's start-up line, not imported
    arm()
