"""Shared by the benchmarks: cases measured in interleaved rounds, markdown tables.

The machine is shared, so its load changes during a run. To keep that from favouring one
program over another, every case (a program at a thread count) is measured once per
*round*, rounds repeat, and each figure is the median over rounds: a busy moment costs all
programs alike. Thread counts are set in-process for both sides — numpy's BLAS through
threadpoolctl, mlcbook's pool with ``mb.runtime.num_threads``.

After a multi-threaded case the harness pauses (``SETTLE`` seconds): OpenBLAS's worker
threads keep spinning for about 0.1 s after each call, and would otherwise take a core
from whatever is measured next (measured here: a 2-thread kernel right after a 2-thread
numpy matmul ran 1.6x slower for ~0.1 s).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import platform
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import mlcbook as mb

try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError as e:  # pragma: no cover - the message is the point
    raise SystemExit("the benchmarks need threadpoolctl to pin numpy's threads: "
                     "pip install -e '.[bench]'") from e


#: seconds to pause after a multi-threaded case (see the module docstring)
SETTLE = 0.15


@dataclass
class Case:
    """One program at one thread count; ``fn()`` runs it once on prepared arguments."""

    group: str
    key: tuple
    threads: int
    fn: Callable[[], None]
    once: bool = False            # too slow to repeat: measured in one run only
    check: object = None          # (result, reference) to compare after a `once` run
    seconds: list = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def kernel_call(kernel, *args) -> Callable[[], None]:
    """A zero-argument call of ``kernel`` whose arguments were checked once."""
    ptrs = kernel.check_args(args)

    def call(arrays=args):  # the default keeps the arrays (and so the pointers) alive
        kernel.run_unchecked(ptrs)
    return call


class _Threads:
    def __init__(self, n: int):
        self.n = n

    def __enter__(self):
        self._blas = threadpool_limits(limits=self.n, user_api="blas")
        self._old = mb.runtime.set_num_threads(self.n)

    def __exit__(self, *exc):
        mb.runtime.set_num_threads(self._old)
        self._blas.restore_original_limits()


def measure(cases: list[Case], rounds: int, min_seconds: float = 0.03) -> None:
    """Fill ``case.seconds`` with ``rounds`` interleaved measurements
    (``mb.runtime.time_interleaved``: warm-up, untimed calls before each timed batch, order
    rotated per round), each case at its own thread counts. Cases marked ``once`` are called
    once."""
    repeated = {}
    for c in cases:
        if c.once:
            with _Threads(c.threads):
                t0 = time.perf_counter()
                c.fn()
                c.seconds.append(time.perf_counter() - t0)
        else:
            repeated[str(len(repeated))] = c
    if not repeated:
        return

    @contextlib.contextmanager
    def threads_of(name):
        c = repeated[name]
        with _Threads(c.threads):
            yield
        if c.threads > 1:
            time.sleep(SETTLE)

    results = mb.runtime.time_interleaved({name: c.fn for name, c in repeated.items()},
                                          rounds=rounds, min_seconds=min_seconds,
                                          around=threads_of)
    for name, c in repeated.items():
        c.seconds.extend(results[name].results)


def ort_session(model, threads: int | None = None, quiet: bool = False):
    """An onnxruntime CPU session of the ONNX ``model`` (a ModelProto) that runs each node on
    ``threads`` threads (default: onnxruntime's choice) and never runs two nodes at once, the
    way mlcbook's executables run; ``quiet`` hides its warnings (e.g. unused initializers)."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    if threads is not None:
        opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    if quiet:
        opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])


def blas_name() -> str:
    info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not info:
        return "unknown BLAS"
    i = info[0]
    return f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')} kernels)"


def machine() -> str:
    import llvmlite.binding as llvm
    import numpy as np
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{platform.machine()} `{llvm.get_host_cpu_name()}`, {os.cpu_count()} cores, "
            f"{platform.system()}, Python {platform.python_version()}, numpy {np.__version__} "
            f"with {blas_name()}, load average {load:.1f} (1 min) at the end, "
            f"{datetime.date.today().isoformat()}")


def table(headers: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" if k == 0 else "---:" for k in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def by_key(cases: list[Case]) -> dict:
    return {(c.key, c.threads): c for c in cases}
