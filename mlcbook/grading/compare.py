"""Tools for writing checkers: call the student's code safely, compare arrays precisely.

A checker fails an answer by raising :class:`Fail` with a message that says what is
wrong; the helpers here raise it with the shape, the first differing index, the entries
never written, or the exception the student's code raised::

    >>> import numpy as np
    >>> expect_array("C", np.zeros((2, 3)), np.ones((2, 3)))
    Traceback (most recent call last):
    mlcbook.grading.compare.Fail: values differ: C[0, 0] = 0, expected 1 (6 of 6 entries differ)
"""

from __future__ import annotations

import contextlib
import sysconfig
import traceback
import warnings
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

#: Written into every output before the student's function runs, so that entries the
#: function never writes can be told apart from wrong values (no computation makes it).
SENTINEL = np.float32(-1.2345679e29)

_PACKAGE = Path(__file__).resolve().parent.parent  # frames inside mlcbook are not the student's
_LIBRARY_DIRS = tuple({str(Path(p).resolve()) for p in
                       (sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
                        sysconfig.get_paths()["platlib"])})


class Fail(Exception):
    """The answer earns no points; the message says why, the hint what to try.

    ``about_inputs`` is False for failures that do not depend on the inputs (the answer is
    not a function, is still the stub), so :func:`trial` does not add them.
    """

    def __init__(self, message: str, hint: str | None = None, *, about_inputs: bool = True):
        self.message, self.hint, self.about_inputs = message, hint, about_inputs
        super().__init__(self.text())

    def text(self) -> str:
        return self.message + (f"\n  hint: {self.hint}" if self.hint else "")


class NotImplementedAnswer(Fail):
    """The answer is still the stub; shown as ``not implemented: ...``."""

    def __init__(self, message: str):
        super().__init__(message, about_inputs=False)


class Partial:
    """A checker's verdict worth some of the points, e.g. a correct but slow kernel::

        return Partial(2, "correct, but 0.04x numpy's speed; 0.15x earns all 4 points")
    """

    def __init__(self, points: int, message: str):
        self.points, self.message = points, message


def call(answer: object, name: str, *args: object, outputs: int = 0) -> object:
    """Call ``answer(*args)``; the last ``outputs`` arguments are arrays it must fill in place.

    Outputs are pre-filled with :data:`SENTINEL`; inputs must come back unchanged. Any
    exception from the student's code becomes a :class:`Fail` naming its type and line.
    """
    if answer is None:
        raise NotImplementedAnswer(f"got None instead of your function {name}")
    if not callable(answer):
        raise Fail(f"expected your function {name}, got {type(answer).__name__} {answer!r:.60}",
                   about_inputs=False)
    inputs = args[:len(args) - outputs]
    for out in args[len(args) - outputs:]:
        out[...] = SENTINEL
    copies = [a.copy() if isinstance(a, np.ndarray) else None for a in inputs]
    try:
        # Overflow in the student's arithmetic is reported by the value checks, with the
        # index where it happened, instead of as a warning printed into the notebook.
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result = answer(*args)
    except NotImplementedError:
        raise NotImplementedAnswer(f"{name} raised NotImplementedError; replace the "
                                   "`raise NotImplementedError` line with your code") from None
    except Exception as err:  # noqa: BLE001 - any error in student code is reported, not raised
        raise Fail(f"{name} raised {type(err).__name__}: {err}{student_line(err)}") from None
    for i, (arg, copy) in enumerate(zip(inputs, copies)):
        if copy is not None and not np.array_equal(arg, copy, equal_nan=True):
            raise Fail(f"{name} changed its input argument #{i + 1} (shape {arg.shape}); "
                       "inputs must be left unchanged, write only into the output")
    return result


def expect_array(name: str, got: object, expected: np.ndarray, *, rtol: float = 1e-4,
                 atol: float = 1e-5,
                 mistakes: Sequence[tuple[Callable[[], np.ndarray], str]] = ()) -> None:
    """Fail unless ``got`` is an array equal to ``expected`` within tolerance.

    ``mistakes`` pairs a function computing what a plausible wrong answer would give with
    a hint; when ``got`` matches one, the hint is added to the message.
    """
    if got is None:
        raise Fail(f"{name} is None: return the result array", about_inputs=False)
    if not isinstance(got, np.ndarray):
        raise Fail(f"{name} should be a numpy array, got {type(got).__name__}")
    # a plain array: a subclass's own __array_ufunc__ would run the notebook's code in the
    # comparisons below (and could make them agree)
    got = np.asarray(got)
    if got.shape != expected.shape:
        raise Fail(f"wrong shape: {name} has shape {got.shape}, expected {expected.shape}",
                   _hint(got, mistakes))
    if not np.issubdtype(got.dtype, np.number):
        raise Fail(f"{name} has dtype {got.dtype}, expected a numeric array")
    got_f = got.astype(np.float64)
    unwritten = got_f == np.float64(SENTINEL)
    if unwritten.all():
        raise Fail(f"{name} was never set: every entry still holds the placeholder "
                   f"{float(SENTINEL):.4g} the checker filled it with. Write the result into "
                   f"{name} in place ({name}[i, j] = value); assigning a new array to the name "
                   f"{name} does not change the caller's array, and += only adds to the "
                   "placeholder")
    if unwritten.any():
        raise Fail(f"{_at(name, unwritten)} was never set ({int(unwritten.sum())} of "
                   f"{unwritten.size} entries still hold the placeholder {float(SENTINEL):.4g}): "
                   "check the ranges of your loops, and set each entry before adding to it "
                   "with +=")
    exp_f = expected.astype(np.float64)
    broken = ~np.isfinite(got_f) & np.isfinite(exp_f)
    if broken.any():
        idx = _first(broken)
        raise Fail(f"{_at(name, broken)} is {got_f[idx]}, expected {exp_f[idx]:.6g}: the "
                   "computation overflowed or divided by zero", _hint(got, mistakes))
    bad = ~np.isclose(got_f, exp_f, rtol=rtol, atol=atol)
    if bad.any():
        idx = _first(bad)
        raise Fail(f"values differ: {_at(name, bad)} = {got_f[idx]:.6g}, expected "
                   f"{exp_f[idx]:.6g} ({int(bad.sum())} of {bad.size} entries differ)",
                   _hint(got, mistakes))


def scaled_atol(expected: np.ndarray, atol: float = 1e-5) -> float:
    """``atol`` on the scale of the largest entry of ``expected``, for float32 results that
    sum many products: an entry near zero can be the difference of terms as large as the
    largest outputs, and it keeps their rounding error::

        >>> scaled_atol(np.array([0.5, -300.0]))
        0.003
    """
    return atol * max(1.0, float(np.abs(expected).max()))


@contextlib.contextmanager
def trial(description: str, hint: str | None = None) -> Iterator[None]:
    """Add which inputs were used (and an optional hint) to any failure inside the block."""
    try:
        yield
    except Fail as err:
        if not err.about_inputs:
            raise
        raise Fail(f"{err.message}\n  on {description}", err.hint or hint) from None


def describe(**arrays: np.ndarray) -> str:
    """``describe(A=a, B=b)`` -> ``'A of shape (2, 3), B of shape (3, 4)'``."""
    return ", ".join(f"{k} of shape {tuple(v.shape)}" for k, v in arrays.items())


def randn(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def empty(shape: tuple[int, ...]) -> np.ndarray:
    return np.empty(shape, dtype=np.float32)


def _hint(got: np.ndarray,
          mistakes: Sequence[tuple[Callable[[], np.ndarray], str]]) -> str | None:
    for compute, hint in mistakes:
        with np.errstate(all="ignore"):
            wrong = np.asarray(compute(), dtype=np.float64)
        if wrong.shape == got.shape and np.allclose(got.astype(np.float64), wrong, rtol=1e-4,
                                                    atol=1e-5, equal_nan=True):
            return hint
    return None


def _first(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _at(name: str, mask: np.ndarray) -> str:
    return f"{name}[{', '.join(str(i) for i in _first(mask))}]"


def student_line(err: BaseException) -> str:
    """`` (line N in f: <source>)`` for the innermost frame of the student's own code."""
    for frame in reversed(traceback.extract_tb(err.__traceback__)):
        filename = str(Path(frame.filename).resolve()) if frame.filename else ""
        if filename.startswith(str(_PACKAGE)) or filename.startswith(_LIBRARY_DIRS):
            continue
        line = (frame.line or "").strip()
        return f" (in {frame.name}: {line})" if line else f" (in {frame.name})"
    return ""


def distinct_dims(rng: np.random.Generator, count: int, low: int = 2, high: int = 8) -> list[int]:
    """``count`` distinct sizes in ``[low, high)``: an answer that mixes up two dimensions then
    fails with a wrong shape or an untouched entry instead of passing by luck."""
    return [int(d) for d in rng.choice(np.arange(low, high), size=count, replace=False)]


def softmax_reference(x: np.ndarray, axis: int) -> np.ndarray:
    """Numerically stable softmax in float64, the reference of the softmax exercises."""
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_cases(rng: np.random.Generator, how_to_subtract_max: str) -> list:
    """``(X, note, hint)`` for a softmax check: two ordinary inputs; one around 600..1000,
    where exp overflows even float64, so only a stable softmax survives it; and one whose rows
    lie far apart (around 1000 and around 0, like ``[[1000, 999, 998], [0, 1, 2]]``), where
    subtracting the maximum of the whole array instead of each row's makes a row 0 / 0."""
    n, m = distinct_dims(rng, 2, 3, 9)
    far = np.where(np.arange(n)[:, None] % 2 == 0, 1000.0, 0.0)
    return [
        (randn(rng, (n, m), scale=2.0), "", None),
        (randn(rng, (m, n), scale=2.0), "", None),
        ((rng.uniform(-5, 5, (n, m)) + rng.uniform(600, 1000, (n, 1))).astype(np.float32),
         " (large values)", "inputs here are around 600..1000 and exp overflows; softmax(x) "
         f"equals softmax(x - max(x)), so subtract each row's maximum {how_to_subtract_max}"
         "before exp"),
        ((rng.uniform(-3, 0, (n, m)) + far).astype(np.float32), " (rows far apart)",
         GLOBAL_MAX_HINT),
    ]


#: Why a softmax that subtracts the maximum of the whole array fails on rows far apart.
GLOBAL_MAX_HINT = ("subtract each row's own maximum, not the maximum of the whole array: in a "
                   "row far below the largest value (say [0, 1, 2] under [1000, 999, 998]), "
                   "e^(x - max) underflows to 0 for every x, and the row becomes 0 / 0")


def softmax_global_max(x: np.ndarray, dtype: type = np.float64) -> np.ndarray:
    """The plausible mistake: softmax that subtracts the maximum of all of ``x``."""
    e = np.exp((x.astype(dtype) - x.max()).astype(dtype))
    return e / e.sum(axis=1, keepdims=True)


__all__ = ["Fail", "NotImplementedAnswer", "Partial", "SENTINEL", "call", "expect_array",
           "scaled_atol", "trial", "describe", "randn", "empty", "distinct_dims", "softmax_reference",
           "softmax_cases", "softmax_global_max", "GLOBAL_MAX_HINT"]
