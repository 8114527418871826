"""The registry of exercises and :func:`check`, the call a notebook's check cell makes.

A chapter's checker module registers one function per exercise::

    @exercise("01.lnumpy_bmm", points=2, answer="lnumpy_bmm", title="Batched matmul with loops")
    def _check_bmm(answer, rng):
        ...                       # raise Fail("...") to give zero points
        return "matches A @ B on 3 fresh shapes"  # or Partial(1, "...") for some points

A notebook calls ``mb.grading.check("01.lnumpy_bmm", lnumpy_bmm)`` to show the student a
verdict; ``mlcbook grade`` checks the notebook's global named ``answer`` itself.
"""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import GradingError
from .compare import Fail, NotImplementedAnswer, Partial
from .result import CheckResult

Checker = Callable[[object, np.random.Generator], str]

_ID = re.compile(r"^(\d\d)\.[a-z][a-z0-9_]*$")
#: Set by ``mlcbook grade`` for the kernels it starts: the run's seed, from which every
#: exercise draws its cases (so each grading run draws fresh ones, and a grade can be
#: reproduced with ``mlcbook grade --seed N``).
SEED_ENV = "MLCBOOK_GRADE_SEED"
#: How a check run under :data:`SEED_ENV` ends its message, so the report can show the seed.
SEED_NOTE = re.compile(r" \[cases drawn with seed (\d+)\]$")
_REGISTRY: dict[str, Exercise] = {}


@dataclass(frozen=True)
class Exercise:
    id: str
    points: int
    title: str
    checker: Checker
    #: The name the notebook gives the answer (``lnumpy_bmm``): what ``mlcbook grade`` checks.
    answer: str

    @property
    def chapter(self) -> int:
        return int(self.id[:2])


def exercise(exercise_id: str, *, points: int, title: str,
             answer: str) -> Callable[[Checker], Checker]:
    """Register the decorated function as the checker of ``exercise_id`` (``"NN.name"``),
    whose notebook defines its answer under the name ``answer``."""
    if not _ID.match(exercise_id):
        raise GradingError(f"exercise id {exercise_id!r} must look like '01.lnumpy_bmm': "
                           "two-digit chapter, a dot, a lower_snake_case name")
    if not isinstance(points, int) or isinstance(points, bool) or points <= 0:
        raise GradingError(f"exercise {exercise_id}: points must be a positive int, got {points!r}")
    if not answer.isidentifier():
        raise GradingError(f"exercise {exercise_id}: answer must be the Python name the notebook "
                           f"defines (like 'lnumpy_bmm'), got {answer!r}")

    def register(checker: Checker) -> Checker:
        old = _REGISTRY.get(exercise_id)
        # Re-importing the same module (importlib.reload) re-registers the same checker.
        if old is not None and (old.checker.__module__, old.checker.__qualname__) != (
                checker.__module__, checker.__qualname__):
            raise GradingError(f"exercise {exercise_id} is registered twice (by "
                               f"{old.checker.__module__}.{old.checker.__qualname__} and "
                               f"{checker.__module__}.{checker.__qualname__}); rename one")
        _REGISTRY[exercise_id] = Exercise(exercise_id, points, title, checker, answer)
        return checker

    return register


def exercises(prefix: str = "") -> list[Exercise]:
    """Registered exercises whose id starts with ``prefix`` (e.g. ``"01."``), in the order
    their checkers were registered, which is the order of the chapter's notebook."""
    return [e for e in _REGISTRY.values() if e.id.startswith(prefix)]


def get(exercise_id: str) -> Exercise:
    try:
        return _REGISTRY[exercise_id]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "(none)"
        raise GradingError(f"unknown exercise {exercise_id!r}; known exercises: {known}") from None


def run_seed() -> int | None:
    """The grading run's seed from :data:`SEED_ENV`, or None outside ``mlcbook grade``."""
    text = os.environ.get(SEED_ENV, "")
    return int(text) if text.isdigit() else None


def check(exercise_id: str, answer: object, *, seed: int | None = None) -> CheckResult:
    """Check ``answer`` for ``exercise_id`` on freshly drawn inputs; never raises for bad answers.

    The inputs are drawn from a generator seeded by the exercise id (or ``seed``), so a
    result is reproducible but unrelated to the example shown in the notebook. Under
    ``mlcbook grade`` the generator is seeded by the run's seed and the exercise id, and the
    message ends with that seed (``[cases drawn with seed 1234]``).
    """
    ex = get(exercise_id)
    graded = run_seed() if seed is None else None
    if seed is not None:
        rng = np.random.default_rng(seed)
    elif graded is not None:
        rng = np.random.default_rng([graded, zlib.crc32(exercise_id.encode())])
    else:
        rng = np.random.default_rng(zlib.crc32(exercise_id.encode()))
    result = _judge(ex, answer, rng)
    if graded is None:
        return result
    return CheckResult(result.exercise, result.points, result.max_points,
                       f"{result.message} [cases drawn with seed {graded}]")


def _judge(ex: Exercise, answer: object, rng: np.random.Generator) -> CheckResult:
    try:
        message = ex.checker(answer, rng)
    except NotImplementedAnswer as err:
        return CheckResult(ex.id, 0, ex.points, f"not implemented: {err.text()}")
    except Fail as err:
        return CheckResult(ex.id, 0, ex.points, err.text())
    except Exception as err:  # noqa: BLE001 - a check cell must not stop the notebook
        return CheckResult(ex.id, 0, ex.points,
                           f"internal error in the checker ({type(err).__name__}: {err}); "
                           "your answer could not be judged, please report this to the course")
    if isinstance(message, Partial):
        if not 0 <= message.points <= ex.points:
            return CheckResult(ex.id, 0, ex.points, f"internal error in the checker (it gave "
                               f"{message.points} of {ex.points} points); please report this")
        return CheckResult(ex.id, message.points, ex.points, message.message)
    return CheckResult(ex.id, ex.points, ex.points, message)
