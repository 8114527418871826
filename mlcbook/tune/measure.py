"""Measuring candidates: build each in a worker process, check its output against the untuned
program, time it, and record whatever went wrong instead of stopping.

    >>> measurer = Measurer()                      # one supervised worker process
    >>> results = measurer.measure([Job.of(func, point.func) for point in points])
    >>> results[0]                                 # MeasureResult(seconds=0.00123, error=None)
    >>> Measurer(executor=client)                  # any Executor, e.g. a dask distributed.Client

A :class:`Job` carries the untuned program and the candidate. The worker
(:func:`run_job`) draws random inputs (fixed seed) once per workload, on huge pages
(:mod:`mlcbook.runtime.pages`: every candidate meets the same physical memory), runs the
untuned program compiled with the default schedule (the *reference*), builds and runs the
candidate, and compares the outputs: a candidate that disagrees is an error (``"wrong
result"``), so a miscompile can never win. Then it times the candidate in rounds
alternating with the reference and records the median ratio times the reference's time,
so the host's drifting speed cancels out of the comparison of candidates. A job whose
reference ran much slower than its best so far was timed while the host held back a core
(a parallel kernel then runs at one thread's speed, and a serial candidate looks as fast
as a parallel one): it is timed again, up to :data:`SLOW_PHASE_RETRIES` times.

The default executor, :class:`LocalExecutor`, runs one job at a time (timings of
concurrent jobs would disturb each other) in a child process it supervises: a job that
outlives ``timeout`` kills the child, and a child that dies (a crash in native code) is
replaced; either way the job is recorded as an error and the next one runs. With another
executor the job runs wherever that executor puts it; a job over ``timeout`` is recorded as
an error but cannot be stopped, except on :class:`~.cluster.DaskExecutor`, which runs each
Dask worker's jobs in a child process of its own and kills it.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import queue
import statistics
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..codegen.target import Target
from ..graph.kernels.default_schedule import default_schedule
from ..runtime.pages import huge_copy
from ..tir.function import PrimFunc
from ..tir.structural import structural_hash
from .errors import TuneArgumentError


@dataclass(frozen=True)
class Job:
    """One candidate to measure: the untuned ``reference`` and the scheduled ``program``."""

    reference: PrimFunc
    program: PrimFunc
    target: str = "llvm"
    repeat: int = 3
    min_seconds: float = 0.01
    seed: int = 0

    @staticmethod
    def of(reference: PrimFunc, program: PrimFunc, target=None, **kw) -> "Job":
        return Job(reference, program, str(Target(target or "llvm")), **kw)


@dataclass(frozen=True)
class MeasureResult:
    """Median seconds per call, or ``error`` (``"timeout"``, ``"worker died"``, ``"wrong
    result: ..."``, a build error...) and no time."""

    seconds: Optional[float]
    error: Optional[str] = None
    build_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def random_inputs(func: PrimFunc, seed: int = 0) -> list:
    """Arrays for every parameter of ``func``: random inputs, zeroed outputs."""
    rng = np.random.default_rng(seed)
    n_in = len(func.params) - func.num_outputs
    arrays = []
    for k, p in enumerate(func.params):
        shape = tuple(int(getattr(d, "value", d)) for d in p.shape)
        dtype = np.dtype(p.dtype)
        if k >= n_in:
            arrays.append(np.zeros(shape, dtype))
        elif dtype.kind == "f":
            arrays.append(rng.uniform(-1, 1, shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 4, shape).astype(dtype))
    return arrays


#: how many workloads a worker keeps its reference program and arguments for (a whole
#: model's tuning alternates between its kernels)
KEEP_WORKLOADS = 4
#: a job whose reference's median is over this many times the reference's best is timed
#: again. On this project's 2-vCPU machine the host takes a core away for 0.3-0.6 s at a
#: time: a 2-thread reference then runs 1.5x slower and a serial candidate matched it in
#: 9 of 40 jobs (ratio ~1.0 instead of 1.7), so tuning kept serial schedules that ran
#: 1.8x slower in the model (ResNet-18's Winograd products)
SLOW_PHASE = 1.25
#: how many times a job timed in a slow phase is timed again before its figure stands
SLOW_PHASE_RETRIES = 4


@dataclass
class _Reference:
    """What a worker keeps per workload: the untuned program built with the default
    schedule, the job's arguments on huge pages (every candidate runs on the same memory),
    the inputs' values, the expected outputs, and the reference's own time (``seconds``:
    the best median seen, which the jobs' rounds lower when the host was slow at first)."""

    kernel: object
    args: list
    inputs: list
    expected: list
    seconds: float


_REFERENCES: dict = {}


def _reference(job: Job) -> _Reference:
    """The job's :class:`_Reference` (made once per workload and worker)."""
    from ..runtime import build, time_kernel  # llvmlite: loaded by the worker, not on import
    key = (structural_hash(job.reference), job.seed, job.target)
    if key not in _REFERENCES:
        fresh = random_inputs(job.reference, job.seed)
        args = huge_copy(fresh)
        n_in = len(args) - job.reference.num_outputs
        kernel = build(default_schedule(job.reference, job.target), target=job.target)
        kernel(*args)
        seconds = time_kernel(kernel, *args, repeat=5, min_repeat_seconds=job.min_seconds)
        while len(_REFERENCES) >= KEEP_WORKLOADS:
            _REFERENCES.pop(next(iter(_REFERENCES)))
        _REFERENCES[key] = _Reference(kernel, args, fresh[:n_in],
                                      [a.copy() for a in args[n_in:]], seconds.median)
    return _REFERENCES[key]


def _poison(out: np.ndarray, want: np.ndarray) -> None:
    """Fill ``out`` with values that differ from ``want`` everywhere (NaN, or its bitwise
    complement), so that a candidate that leaves some of it unwritten is wrong."""
    if out.dtype.kind in "fc":
        out.fill(np.nan)
    else:
        np.invert(want, out=out)


def run_job(job: Job) -> MeasureResult:
    """Build, check and time one candidate (what a worker runs).

    The candidate runs on the same arguments, at the same addresses, as every other
    candidate of its workload in this worker (on huge pages: the same physical layout),
    its outputs first filled with wrong values (:func:`_poison`) so that an output it
    does not write is wrong. It is timed
    in ``repeat`` rounds alternating with the reference (the default schedule): the host's
    speed drifts in phases of about half a second, which slows both alike, so the recorded
    time is the median ratio candidate / reference times the reference's best time, and
    candidates measured in a fast and in a slow phase compare as they would side by side.
    A phase in which the host holds back a core slows a parallel kernel and not a serial
    one; a job whose reference's median ran over :data:`SLOW_PHASE` times its best is timed
    again.
    """
    from ..runtime import build, time_interleaved
    ref = _reference(job)
    n_in = len(ref.args) - len(ref.expected)
    for dst, src in zip(ref.args, ref.inputs):
        dst[...] = src           # whatever a candidate did to its inputs does not carry over
    t0 = time.perf_counter()
    try:
        kernel = build(job.program, target=job.target)
    except Exception as err:  # noqa: BLE001 - any failure of a candidate is its result
        return MeasureResult(None, f"build failed: {type(err).__name__}: {err}"[:500])
    built = time.perf_counter() - t0
    outs = ref.args[n_in:]
    for out, want in zip(outs, ref.expected):
        _poison(out, want)
    kernel(*ref.args)
    for got, want in zip(outs, ref.expected):
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        if not np.allclose(got, want, rtol=1e-4, atol=1e-4 * max(scale, 1.0), equal_nan=True):
            diff = float(np.max(np.abs(got.astype(np.float64) - want)))
            return MeasureResult(None, f"wrong result: differs from the untuned program by "
                                       f"up to {diff:.3g}", built)
    for _ in range(1 + SLOW_PHASE_RETRIES):
        t = time_interleaved({"candidate": (kernel, *ref.args),
                              "reference": (ref.kernel, *ref.args)},
                             rounds=job.repeat, min_seconds=job.min_seconds)
        now = statistics.median(t["reference"].results)
        if now <= SLOW_PHASE * ref.seconds:
            break
    ref.seconds = min(ref.seconds, now)
    ratio = statistics.median(c / r for c, r in zip(t["candidate"].results,
                                                    t["reference"].results))
    return MeasureResult(ratio * ref.seconds, None, built)


def _serve(conn) -> None:
    """The child's loop: run each ``(fn, arg)`` received, send back ``(ok, value)``."""
    while True:
        try:
            fn, arg = conn.recv()
        except EOFError:
            return
        try:
            out = (True, fn(arg))
        except BaseException as err:  # noqa: BLE001 - reported to the parent
            out = (False, f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}")
        conn.send(out)


class WorkerDied(RuntimeError):
    """The worker process ended while it ran a job (a crash in native code, ``os._exit``)."""


class LocalExecutor(cf.Executor):
    """An Executor that runs one call at a time in a supervised child process (``spawn``):
    a call over ``timeout`` seconds kills the child (the future raises TimeoutError), a
    child that dies fails the future with :class:`WorkerDied`; the next call gets a
    fresh child."""

    def __init__(self, timeout: float = 60.0):
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise TuneArgumentError(f"timeout must be positive seconds, got {timeout!r}")
        self.timeout = float(timeout)
        self._ctx = multiprocessing.get_context("spawn")
        self._proc = None
        self._conn = None
        self._jobs: "queue.Queue" = queue.Queue()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def submit(self, fn, /, *args, **kwargs) -> cf.Future:
        if kwargs or len(args) != 1:
            raise TuneArgumentError("LocalExecutor.submit takes fn and one argument")
        fut: cf.Future = cf.Future()
        self._jobs.put((fn, args[0], fut))
        return fut

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(child,), daemon=True)
        try:
            proc.start()
        except BaseException:
            parent.close()   # no child: the job's future gets the error, the next job retries
            raise
        finally:
            child.close()
        # kept only once it runs: _kill cannot kill a process that never started
        self._proc, self._conn = proc, parent

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join()
            self._conn.close()
        self._proc = self._conn = None

    def _loop(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                self._kill()
                return
            fn, arg, fut = item
            if not fut.set_running_or_notify_cancel():
                continue
            if self._proc is None or not self._proc.is_alive():
                try:
                    self._start()
                except Exception as err:  # noqa: BLE001 - e.g. no process can be made now
                    fut.set_exception(err)
                    continue
            try:
                self._conn.send((fn, arg))
                # the first job also pays for the child's imports
                if not self._conn.poll(self.timeout):
                    self._kill()
                    fut.set_exception(cf.TimeoutError(f"over {self.timeout:g} s"))
                    continue
                ok, value = self._conn.recv()
            except (EOFError, OSError, BrokenPipeError):
                code = self._proc.exitcode if self._proc is not None else None
                self._kill()
                fut.set_exception(WorkerDied(f"the worker process died (exit code {code})"))
                continue
            except Exception as err:  # noqa: BLE001 - e.g. a job that cannot be pickled
                fut.set_exception(err)
                continue
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(RuntimeError(value))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._jobs.put(None)
        if wait:
            self._thread.join()


class Measurer:
    """Measures jobs on ``executor`` (default: a :class:`LocalExecutor` with ``timeout``),
    running ``worker`` (default :func:`run_job`) on each; nothing a candidate does stops it."""

    def __init__(self, executor=None, timeout: float = 60.0,
                 worker: Callable[[Job], MeasureResult] = run_job):
        if executor is not None and not callable(getattr(executor, "submit", None)):
            raise TuneArgumentError(
                f"executor must have a submit(fn, arg) method (a concurrent.futures.Executor "
                f"or a dask distributed.Client), got {type(executor).__name__}")
        self._own = executor is None
        self.executor = executor if executor is not None else LocalExecutor(timeout)
        self.timeout = timeout
        self.worker = worker

    def measure(self, jobs: list) -> list[MeasureResult]:
        """One :class:`MeasureResult` per job, in order."""
        futures = [self.executor.submit(self.worker, job) for job in jobs]
        results = []
        for fut in futures:
            try:
                # our own executor, and DaskExecutor, enforce the timeout themselves (and
                # kill the job); waiting with one here would count the queue's time too
                kills = self._own or getattr(self.executor, "enforces_timeout", False)
                r = fut.result(timeout=None if kills else self.timeout)
                results.append(r if isinstance(r, MeasureResult) else MeasureResult(
                    None, f"the worker returned {type(r).__name__}, not a MeasureResult"))
            except cf.TimeoutError:
                results.append(MeasureResult(None, f"timeout (over {self.timeout:g} s)"))
            except WorkerDied as err:
                results.append(MeasureResult(None, str(err)))
            except Exception as err:  # noqa: BLE001 - a failed candidate is a result
                results.append(MeasureResult(None, f"{type(err).__name__}: {err}"[:500]))
        return results

    def close(self) -> None:
        if self._own:
            self.executor.shutdown()

    def __enter__(self) -> "Measurer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["Job", "MeasureResult", "Measurer", "LocalExecutor", "WorkerDied", "run_job",
           "random_inputs", "SLOW_PHASE", "SLOW_PHASE_RETRIES"]
