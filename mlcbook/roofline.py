"""The roofline of this machine: how fast a kernel *can* run, given how much it computes per byte.

A kernel that does ``flops`` arithmetic operations and moves ``bytes`` to and from memory has
an *arithmetic intensity* of ``flops / bytes``. It cannot run faster than the processor's peak
arithmetic rate, nor faster than memory delivers its bytes: its speed is at most
``min(peak, intensity * bandwidth)``. Plotted on log-log axes that bound is a slanted line
(memory-bound kernels) meeting a flat one (compute-bound kernels) at the *ridge point*.

Both ceilings are measured here with kernels that mlcbook itself compiles: a chain of fused
multiply-adds that never touches memory (the peak), and a copy of a large array (the
bandwidth)::

    >>> from mlcbook import roofline
    >>> roof = roofline.measure(threads=1)
    >>> roof
    Roofline(1 thread: 231.4 GFLOP/s peak, 12.1 GB/s memory, ridge at 19.1 FLOP/byte)
    >>> point = roofline.KernelPoint("matmul 512", flops=2 * 512**3, bytes=3 * 512**2 * 4,
    ...                              seconds=2.1e-3)
    >>> roofline.plot([roof], [point])          # a matplotlib Axes
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .errors import ArgumentError
from .optional import require

__all__ = ["Roofline", "KernelPoint", "measure", "measure_peak_gflops", "measure_bandwidth_gbs",
           "plot", "fma_program", "copy_program"]


@dataclass(frozen=True)
class Roofline:
    """The two ceilings of a machine running ``threads`` threads."""

    peak_gflops: float
    bandwidth_gbs: float
    threads: int = 1

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where a kernel stops being memory-bound."""
        return self.peak_gflops / self.bandwidth_gbs

    def attainable(self, intensity: float) -> float:
        """The best GFLOP/s a kernel of this intensity can reach: ``min(peak, I * bandwidth)``."""
        return min(self.peak_gflops, intensity * self.bandwidth_gbs)

    @property
    def label(self) -> str:
        return f"{self.threads} thread{'s' if self.threads != 1 else ''}"

    def __repr__(self) -> str:
        return (f"Roofline({self.label}: {self.peak_gflops:.1f} GFLOP/s peak, "
                f"{self.bandwidth_gbs:.1f} GB/s memory, ridge at {self.ridge:.1f} FLOP/byte)")


@dataclass(frozen=True)
class KernelPoint:
    """One measured kernel: its work, its memory traffic, and its time per call."""

    name: str
    flops: float
    bytes: float
    seconds: float

    def __post_init__(self):
        for field in ("flops", "bytes", "seconds"):
            value = getattr(self, field)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ArgumentError(f"KernelPoint {self.name!r}: {field} must be a positive "
                                    f"number, got {value!r}")

    @property
    def intensity(self) -> float:
        """FLOP per byte."""
        return self.flops / self.bytes

    @property
    def gflops(self) -> float:
        return self.flops / self.seconds / 1e9

    def fraction_of(self, roof: Roofline) -> float:
        """How close the kernel gets to the roof at its intensity (1.0 = on the roof)."""
        return self.gflops / roof.attainable(self.intensity)


# --- the two measuring kernels ---------------------------------------------------------------
def fma_program(chains: int, lanes: int, iterations: int):
    """A PrimFunc whose work is ``iterations`` fused multiply-adds on each of ``chains``
    independent vectors of ``lanes`` floats: ``Y[r, l] = Y[r, l] * X[l] + X[l]``.

    The chains are independent so that the processor can overlap them: one chain alone would
    wait for each FMA's result (its latency) before starting the next.
    """
    from .schedule import Schedule
    from .script import parse
    text = f'''
@T.prim_func
def fma_peak(X: T.Buffer(({lanes},), "float32"), Y: T.Buffer(({chains}, {lanes}), "float32")):
    for k, r, l in T.grid({iterations}, {chains}, {lanes}):
        with T.block("fma"):
            vk, vr, vl = T.axis.remap("RSS", [k, r, l])
            with T.init():
                Y[vr, vl] = T.float32(0)
            Y[vr, vl] = Y[vr, vl] * X[vl] + X[vl]
'''
    sch = Schedule(parse(text))
    _, r, l = sch.get_loops(sch.get_block("fma"))
    sch.unroll(r)      # every chain gets its own register
    sch.vectorize(l)   # one SIMD register per chain
    return sch.func


def copy_program(size: int, lanes: int):
    """A PrimFunc copying ``size`` floats: ``B[i] = A[i]``, vectorized ``lanes`` wide."""
    from . import te
    from .schedule import Schedule
    A = te.placeholder((size,), "float32", name="A")
    B = te.compute((size,), lambda i: A[i], name="B")
    sch = Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    _, inner = sch.split(i, [None, lanes * 4])
    sch.vectorize(inner)
    return sch.func


# --- measuring -------------------------------------------------------------------------------
def _threads(threads: int | None) -> int:
    cores = os.cpu_count() or 1
    if threads is None:
        return cores
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ArgumentError(f"threads must be a positive int (or None for all {cores} cores), "
                            f"got {threads!r}")
    if threads > cores:
        raise ArgumentError(f"threads={threads} is more than the {cores} cores of this machine; "
                            "extra threads would share cores and measure nothing new")
    return threads


def _check_repeat(repeat: int) -> None:
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ArgumentError(f"repeat must be a positive int, got {repeat!r}")


def _concurrent_seconds(kernel, arg_sets: list, number: int, repeat: int) -> float:
    """Best wall time, over ``repeat`` measurements, of ``number`` calls of ``kernel`` on each
    argument set, all sets at once on their own thread.

    The best, not the median: other work on the machine only ever slows a run down, and a
    ceiling is what the machine can do when nothing is in the way.

    Each thread calls the single-threaded kernel; a ctypes call releases the GIL, so the
    threads run on separate cores. This measures the machine, independently of how well
    mlcbook's own parallel loops are compiled.
    """
    ptr_sets = [kernel.check_args(args) for args in arg_sets]

    def once(n: int) -> float:
        start = threading.Barrier(len(ptr_sets) + 1)

        def work(ptrs):
            start.wait()
            for _ in range(n):
                kernel.run_unchecked(ptrs)

        workers = [threading.Thread(target=work, args=(p,)) for p in ptr_sets]
        for w in workers:
            w.start()
        start.wait()
        t0 = time.perf_counter()
        for w in workers:
            w.join()
        return time.perf_counter() - t0

    once(1)  # warm-up: page faults, caches
    return min(once(number) / number for _ in range(repeat))


def _lanes() -> int:
    from .codegen import Target
    return Target().vector_lanes("float32")


def measure_peak_gflops(threads: int | None = 1, *, repeat: int = 5) -> float:
    """The measured fp32 FMA throughput in GFLOP/s (one FMA = 2 FLOP) on ``threads`` cores."""
    from .runtime import build
    threads = _threads(threads)
    _check_repeat(repeat)
    lanes = _lanes()
    # AVX-512 has 32 vector registers, narrower ISAs 16: leave room for X.
    chains = 16 if lanes >= 16 else 12
    iterations = 100_000
    kernel = build(fma_program(chains, lanes, iterations))
    x = np.full(lanes, 0.5, dtype="float32")  # y -> y/2 + 1/2 stays near 1: no overflow
    ys = [np.empty((chains, lanes), dtype="float32") for _ in range(threads)]
    seconds = _concurrent_seconds(kernel, [(x, y) for y in ys], number=10, repeat=repeat)
    return 2.0 * iterations * chains * lanes * threads / seconds / 1e9


def measure_bandwidth_gbs(threads: int | None = 1, *, megabytes: int = 64,
                          repeat: int = 5) -> float:
    """The measured copy bandwidth in GB/s: bytes read plus bytes written per second, copying
    arrays of ``megabytes`` each (pick more than the last-level cache) on ``threads`` cores.

    As in the STREAM benchmark, the extra read a cache does before it overwrites a line is not
    counted, so this is the bandwidth a kernel sees for the bytes it names.
    """
    from .runtime import build
    threads = _threads(threads)
    _check_repeat(repeat)
    if not isinstance(megabytes, int) or isinstance(megabytes, bool) or megabytes < 1:
        raise ArgumentError(f"megabytes must be a positive int, got {megabytes!r}")
    lanes = _lanes()
    block = lanes * 4 * threads
    size = max(block, megabytes * 2**20 // 4 // block * block)
    chunk = size // threads
    kernel = build(copy_program(chunk, lanes))
    a = np.ones(size, dtype="float32")
    b = np.empty(size, dtype="float32")
    arg_sets = [(a[t * chunk:(t + 1) * chunk], b[t * chunk:(t + 1) * chunk])
                for t in range(threads)]
    seconds = _concurrent_seconds(kernel, arg_sets, number=2, repeat=repeat)
    return 2.0 * 4 * size / seconds / 1e9


def measure(threads: int | None = 1, *, repeat: int = 5, megabytes: int = 64) -> Roofline:
    """Measure both ceilings on ``threads`` cores (None: all of them)."""
    threads = _threads(threads)
    return Roofline(measure_peak_gflops(threads, repeat=repeat),
                    measure_bandwidth_gbs(threads, megabytes=megabytes, repeat=repeat), threads)


# --- plotting --------------------------------------------------------------------------------
def plot(roofs: Roofline | Sequence[Roofline], points: Sequence[KernelPoint] = (), ax=None,
         title: str | None = "Roofline"):
    """Draw each roof and place each kernel on log-log axes; returns the matplotlib Axes."""
    roofs = [roofs] if isinstance(roofs, Roofline) else list(roofs)
    if not roofs or not all(isinstance(r, Roofline) for r in roofs):
        raise ArgumentError("plot needs one Roofline or a list of them (from roofline.measure)")
    points = list(points)
    for p in points:
        if not isinstance(p, KernelPoint):
            raise ArgumentError(f"plot places KernelPoint objects, got {type(p).__name__} "
                                f"{p!r:.60}")
    if ax is None:
        plt = require("matplotlib.pyplot", "the roofline plot")
        _, ax = plt.subplots(figsize=(11, 5), layout="constrained")
    intensities = [p.intensity for p in points] + [r.ridge for r in roofs]
    lo = min(0.05, min(intensities) / 3)
    hi = max(1000.0, max(intensities) * 3)
    xs = np.geomspace(lo, hi, 200)
    for roof in roofs:
        ys = np.minimum(roof.peak_gflops, xs * roof.bandwidth_gbs)
        line, = ax.plot(xs, ys, linewidth=2,
                        label=f"{roof.label}: {roof.peak_gflops:.0f} GFLOP/s, "
                              f"{roof.bandwidth_gbs:.1f} GB/s")
        ax.axvline(roof.ridge, color=line.get_color(), linestyle=":", linewidth=1)
    markers = "osD^v<>ph*"
    for n, p in enumerate(points):
        ax.scatter([p.intensity], [p.gflops], marker=markers[n % len(markers)], s=50, zorder=3,
                   label=f"{p.name}: {p.gflops:.1f} GFLOP/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("GFLOP/s")
    if title:
        ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    # beside the axes, not on them: kernels may sit anywhere under the roof
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return ax
