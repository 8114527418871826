"""``mb.time_kernel``: how long a kernel takes, measured the way benchmarks should be.

    >>> r = mb.time_kernel(kernel, a, b, c, repeat=7)
    >>> r
    TimingResult(median=1.204 ms, min=1.190 ms, max=1.262 ms, spread=6.0%, 7 x 20 runs)
    >>> 2 * n**3 / r.median / 1e9                     # GFLOP/s

The first call (warm-up: page faults, caches, lazy compilation) is not measured. Each of
``repeat`` measurements times ``number`` back-to-back calls and keeps the mean; the result
reports the median of the measurements (robust to a noisy neighbour) and their spread.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from ..errors import ArgumentError
from .kernel import Kernel, KernelLibrary
from .thread_pool import launcher_address


@dataclass(frozen=True)
class TimingResult:
    """Seconds per call: one entry of ``results`` per repeat; ``median`` is the figure to quote."""

    results: tuple
    number: int

    @property
    def median(self) -> float:
        return statistics.median(self.results)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.results)

    @property
    def min(self) -> float:
        return min(self.results)

    @property
    def max(self) -> float:
        return max(self.results)

    @property
    def spread(self) -> float:
        """(max - min) / median: how much the repeats disagree."""
        return (self.max - self.min) / self.median if self.median > 0 else 0.0

    def __repr__(self) -> str:
        return (f"TimingResult(median={_fmt(self.median)}, min={_fmt(self.min)}, "
                f"max={_fmt(self.max)}, spread={100 * self.spread:.1f}%, "
                f"{len(self.results)} x {self.number} runs)")


def _fmt(t: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3f} {unit}"
    return f"{t / 1e-9:.1f} ns"


def time_kernel(kernel, *args, number: int | None = None, repeat: int = 5,
                min_repeat_seconds: float = 0.05, warmup: int = 1) -> TimingResult:
    """Time ``kernel(*args)``; ``kernel`` may also be any Python callable (e.g. numpy code).

    ``number`` calls per measurement (default: enough for ``min_repeat_seconds``),
    ``repeat`` measurements, after ``warmup`` unmeasured calls; arguments are checked
    once, not on every call.
    """
    if not isinstance(repeat, int) or repeat < 1:
        raise ArgumentError(f"repeat must be a positive int, got {repeat!r}")
    if number is not None and (not isinstance(number, int) or number < 1):
        raise ArgumentError(f"number must be a positive int or None, got {number!r}")
    if isinstance(kernel, KernelLibrary):
        kernel = kernel.main()
    if isinstance(kernel, Kernel):
        ptrs = kernel.check_args(args)
        run, launcher = kernel._fn, launcher_address()

        def call():
            run(*ptrs, launcher)
    elif callable(kernel):
        def call():
            kernel(*args)
    else:
        raise ArgumentError(f"time_kernel needs a kernel or a callable, got {type(kernel).__name__}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ArgumentError(f"warmup must be a non-negative int, got {warmup!r}")
    for _ in range(warmup):
        call()
    if number is None:
        t0 = time.perf_counter()
        call()
        one = max(time.perf_counter() - t0, 1e-7)
        number = max(1, min(1_000_000, int(min_repeat_seconds / one)))
    results = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        results.append((time.perf_counter() - t0) / number)
    return TimingResult(tuple(results), number)
