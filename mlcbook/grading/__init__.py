"""Graded exercises: :func:`check` answers a notebook's check cell with points and a message.

    >>> import mlcbook as mb
    >>> print(mb.grading.check("01.lnumpy_mm_relu", None))
    [01.lnumpy_mm_relu] 0/1 — not implemented: got None instead of your function lnumpy_mm_relu

Each chapter's checkers live in ``chNN.py`` beside this file and register themselves on
import; ``mlcbook grade`` (:mod:`mlcbook.grading.grade`) runs whole notebooks and checks
every answer itself, in the notebook's kernel, with graders loaded afresh and verified
(:mod:`mlcbook.grading.kernel_side`). Its threat model: a notebook cannot fake its score
through displayed results, the registry, answers it did not define, the history, names
that shadow builtins, or functions of numpy or the standard library it rebinds; ``--isolate`` also keeps the solutions unreadable (Landlock) and
limits resources; code written to subvert the interpreter is not stopped, so grade
untrusted notebooks in a disposable container. Details in :mod:`mlcbook.grading.grade`.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from .compare import Fail, NotImplementedAnswer
from .registry import Exercise, check, exercise, exercises, get
from .result import MIMETYPE, CheckResult

# Every chNN module registers its chapter's exercises; importing them all here means a new
# chapter's checkers are found without editing this file.
for _info in pkgutil.iter_modules(__path__):
    if re.fullmatch(r"ch\d\d", _info.name):
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["check", "exercise", "exercises", "get", "Exercise", "CheckResult", "MIMETYPE",
           "Fail", "NotImplementedAnswer"]
