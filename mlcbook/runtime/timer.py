"""``mb.time_kernel``: how long a kernel takes, measured the way benchmarks should be;
``time_interleaved``: several programs compared fairly on a shared machine;
``machine_load``: whether the machine was quiet enough to believe the figures.

    >>> r = mb.time_kernel(kernel, a, b, c, repeat=7)
    >>> r
    TimingResult(median=1.204 ms, min=1.190 ms, max=1.262 ms, spread=6.0%, 7 x 20 runs)
    >>> 2 * n**3 / r.median / 1e9                     # GFLOP/s

The first call (warm-up: page faults, caches, lazy compilation) is not measured. Each of
``repeat`` measurements times ``number`` back-to-back calls and keeps the mean; the result
reports the median of the measurements (robust to a noisy neighbour) and their spread.

To compare programs, measure them in *rounds*: each round times every program once, in a
rotated order, so that a busy moment costs all of them alike::

    >>> r = mb.runtime.time_interleaved({"numpy": lambda: a @ b, "mlcbook": (kernel, a, b, c)})
    >>> r["numpy"].median / r["mlcbook"].median     # the speed-up, from one run
    >>> mb.runtime.machine_load()
    MachineLoad(0.0 of 2 cores busy with other work, /proc/stat over 0.25 s: quiet)
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from dataclasses import dataclass
from typing import Callable, ContextManager

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
    call = _caller(kernel, args)
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


def _caller(kernel, args: tuple) -> Callable[[], None]:
    """A zero-argument call of ``kernel(*args)``; a kernel's arguments are checked once here."""
    if isinstance(kernel, KernelLibrary):
        kernel = kernel.main()
    if isinstance(kernel, Kernel):
        ptrs = kernel.check_args(args)
        run, launcher = kernel.native_function(), launcher_address()

        def call(arrays=args):  # the default keeps the arrays (and so the pointers) alive
            run(*ptrs, launcher)
        return call
    if callable(kernel):
        def call():
            kernel(*args)
        return call
    raise ArgumentError(f"timing needs a kernel or a callable, got {type(kernel).__name__}")


def time_interleaved(programs: dict, rounds: int = 5, min_seconds: float = 0.03,
                     around: Callable[[str], ContextManager] | None = None,
                     settle: float = 0.0) -> dict:
    """Time several programs in interleaved rounds; ``{name: TimingResult}``, one result per round.

    ``programs`` maps a name to a zero-argument callable, or to a tuple ``(kernel, *args)``
    (arguments checked once). Each program is called twice untimed (warm-up, then a call
    that sets ``number``, the back-to-back calls of one measurement: enough to last
    ``min_seconds``). Each round then measures every program once, in an order rotated by
    one per round so that no program always follows the same neighbour; before its timed
    calls a program runs as many untimed ones (idle cores of a virtual machine are slow for
    a few tens of ms). ``around(name)``, if given, is a context manager entered around each
    of a program's calibration and measurements, e.g. to set thread counts. ``settle`` seconds of sleep follow
    each measurement: OpenBLAS's threads keep spinning ~0.1 s after a call and would take a
    core from the program measured next.

        >>> r = time_interleaved({"a": lambda: sum(range(100)), "b": lambda: sum(range(200))})
        >>> r["b"].median > r["a"].median
        True
    """
    if not isinstance(programs, dict) or not programs:
        raise ArgumentError(f"programs must be a non-empty dict of name -> callable or "
                            f"(kernel, *args), got {programs!r}")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise ArgumentError(f"rounds must be a positive int, got {rounds!r}")
    for key, value in (("min_seconds", min_seconds), ("settle", settle)):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ArgumentError(f"{key} must be a non-negative number, got {value!r}")
    calls = {name: _caller(p[0], tuple(p[1:])) if isinstance(p, tuple) else _caller(p, ())
             for name, p in programs.items()}
    scope = around or (lambda name: contextlib.nullcontext())
    numbers = {}
    for name, call in calls.items():
        with scope(name):
            call()
            t0 = time.perf_counter()
            call()
            one = max(time.perf_counter() - t0, 1e-7)
        numbers[name] = max(1, min(1_000_000, int(min_seconds / one)))
    seconds = {name: [] for name in calls}
    names = list(calls)
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            call, n = calls[name], numbers[name]
            with scope(name):
                for _ in range(n):
                    call()
                t0 = time.perf_counter()
                for _ in range(n):
                    call()
                seconds[name].append((time.perf_counter() - t0) / n)
            if settle:
                time.sleep(settle)
    return {name: TimingResult(tuple(seconds[name]), numbers[name]) for name in names}


@dataclass(frozen=True)
class MachineLoad:
    """How many cores other programs kept busy: were the timings taken on a quiet machine?

    ``others`` is measured while this process sleeps (from ``/proc/stat`` on Linux: the
    busy share of all cores over a short window, less what this process itself used in it,
    e.g. BLAS threads still spinning); elsewhere it is the 1-minute load average
    (``os.getloadavg``), which also counts this process's recent work. ``busy`` when others
    held more than half a core: a benchmark that wants every core then gets less than that.
    """

    others: float
    cores: int
    source: str

    @property
    def busy(self) -> bool:
        return self.others > 0.5

    def note(self) -> str:
        """One sentence for a reader of the figures."""
        if self.busy:
            return (f"Warning: other programs kept {self.others:.1f} of this machine's "
                    f"{self.cores} cores busy ({self.source}), so these timings are noisy and "
                    f"their ratios may be off; re-run on a quiet machine to trust them.")
        return (f"The machine was quiet (other programs used {self.others:.1f} of "
                f"{self.cores} cores, {self.source}), so these timings should be representative.")

    def __repr__(self) -> str:
        return (f"MachineLoad({self.others:.1f} of {self.cores} cores busy with other work, "
                f"{self.source}: {'busy' if self.busy else 'quiet'})")


def _busy_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)   # idle + iowait
    return sum(fields) - idle, sum(fields)


def machine_load(seconds: float = 0.25) -> MachineLoad:
    """How busy other programs keep the machine now, sampled for ``seconds`` while this
    process sleeps.

        >>> mb.runtime.machine_load()
        MachineLoad(0.0 of 2 cores busy with other work, /proc/stat over 0.25 s: quiet)
    """
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not seconds > 0:
        raise ArgumentError(f"seconds must be a positive number, got {seconds!r}")
    cores = os.cpu_count() or 1
    if os.path.exists("/proc/stat"):
        own0, wall0 = sum(os.times()[:2]), time.perf_counter()
        busy0, total0 = _busy_jiffies()
        time.sleep(seconds)
        busy1, total1 = _busy_jiffies()
        own = (sum(os.times()[:2]) - own0) / (time.perf_counter() - wall0)
        share = (busy1 - busy0) / max(total1 - total0, 1)
        return MachineLoad(max(share * cores - own, 0.0), cores, f"/proc/stat over {seconds:g} s")
    if hasattr(os, "getloadavg"):
        return MachineLoad(os.getloadavg()[0], cores, "1-minute load average")
    raise ArgumentError("this platform reports neither /proc/stat nor a load average; "
                        "Instead: check by eye that nothing else runs while you measure")
