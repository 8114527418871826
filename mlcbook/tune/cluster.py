"""Measuring candidates on a Dask cluster, safely: a candidate that crashes or hangs costs
one child process, never a Dask worker.

    >>> import distributed
    >>> client = distributed.Client("tcp://scheduler:8786")       # or a LocalCluster
    >>> executor = DaskExecutor(client, timeout=60)                # warns if workers share a host
    >>> mb.tune.tune_model(mod, 200, executor=executor, database="records.jsonl")

Each Dask worker runs its jobs in a child process of its own (:func:`run_isolated`, a plain
``subprocess``: Dask's worker processes are daemons, which ``multiprocessing`` may not give
children). A job over ``timeout`` kills that child and is recorded as a timeout; a child
that dies (a crash in native code) is recorded as such; both return normally to Dask, so
nothing is retried on another worker and no worker is lost. Jobs are submitted with
``retries=0`` and ``pure=False`` (every candidate is measured, none is taken from a cache).

Two measuring workers on one host disturb each other's timings (1.1-6.7x seen on a 2-core
host): :class:`DaskExecutor` warns when workers share a host, and ``one_per_host=True``
sends every job to one worker per host instead. Candidates are compiled for the workers'
CPU (:attr:`DaskExecutor.target`, which ``tune_model`` and ``tune`` use when given no
target), so records are keyed by the CPU that measured them, not the client's.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
import warnings

from ..optional import require
from .errors import TuneArgumentError


class SharedHostWarning(UserWarning):
    """Several measuring Dask workers share a host: their timings disturb each other."""


class DaskExecutor:
    """Submits measurements to a ``distributed.Client`` so that a crash or a hang never
    takes a worker down (see the module docstring); ``client`` may also be a scheduler
    address (``"tcp://host:8786"``)."""

    #: the executor kills a job over its timeout itself: Measurer need not wait with one
    enforces_timeout = True

    def __init__(self, client, timeout: float = 60.0, one_per_host: bool = False):
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise TuneArgumentError(f"timeout must be positive seconds, got {timeout!r}")
        distributed = require("distributed", "tuning on a Dask cluster")
        self._own = isinstance(client, str)
        self.client = distributed.Client(client) if self._own else client
        self.timeout = float(timeout)
        hosts: dict[str, list[str]] = {}
        threads = 0
        for address, info in sorted(self.client.scheduler_info()["workers"].items()):
            hosts.setdefault(info.get("host", address), []).append(address)
            threads = max(threads, int(info.get("nthreads", 1)))
        if not hosts:
            raise TuneArgumentError("the Dask cluster has no workers; Instead: start some "
                                    "(dask worker ADDRESS) before tuning")
        self.hosts = hosts
        crowded = {h: a for h, a in hosts.items() if len(a) > 1}
        if (crowded or threads > 1) and not one_per_host:
            where = ", ".join(f"{h} ({len(a)} workers)" for h, a in crowded.items())
            warnings.warn(SharedHostWarning(
                f"measuring Dask workers share a host ({where or f'{threads} threads a worker'}"
                "): concurrent measurements disturb each other's timings. Instead: one worker "
                "with one thread per host, or DaskExecutor(..., one_per_host=True) "
                "(`mlcbook tune --one-per-host`)"), stacklevel=2)
        #: the workers jobs go to: one per host, or all (None)
        self.workers = [a[0] for a in hosts.values()] if one_per_host else None
        cpus = self.client.run(worker_target, workers=self.workers)
        if len(set(cpus.values())) > 1:
            listing = ", ".join(f"{a}: {t}" for a, t in sorted(cpus.items()))
            raise TuneArgumentError(
                f"the Dask workers have different CPUs ({listing}), and tuning records hold "
                "one CPU's timings. Instead: tune on workers of one CPU model at a time")
        #: the measuring workers' CPU: what candidates are compiled for and records keyed by
        self.target = next(iter(cpus.values()))

    def submit(self, fn, job):
        return self.client.submit(run_isolated, fn, job, self.timeout, pure=False, retries=0,
                                  workers=self.workers, allow_other_workers=False)

    def shutdown(self, wait: bool = True, **_) -> None:
        if self._own:
            self.client.close()


# --- the worker side ---------------------------------------------------------------------------
def worker_target() -> str:
    """This machine's target (its CPU), as the records of its measurements are keyed."""
    from ..codegen.target import Target
    return str(Target("llvm"))


_CHILD: dict = {}
_LOCK = threading.Lock()


def run_isolated(fn, job, timeout: float):
    """``fn(job)`` in this process's measuring child (started on first use), as a
    MeasureResult; a timeout or a crash is recorded in it and the child replaced."""
    from .measure import MeasureResult
    with _LOCK:   # one measurement at a time per worker process
        proc = _CHILD.get("proc")
        if proc is None or proc.poll() is not None:
            proc = _CHILD["proc"] = subprocess.Popen(
                [sys.executable, "-m", "mlcbook.tune.cluster"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            # cloudpickle (Dask's): fn may be a function Dask itself shipped by value
            _send(proc.stdin, (fn, job), require("cloudpickle", "tuning on a Dask cluster"))
            reply = _receive(proc.stdout, time.monotonic() + timeout)
        except TimeoutError:
            _stop(proc)
            return MeasureResult(None, f"timeout (over {timeout:g} s; its process was "
                                       "killed, the worker goes on)")
        except (EOFError, OSError):
            code = _stop(proc)
            return MeasureResult(None, f"worker died (its measuring process ended with exit "
                                       f"code {code}; the Dask worker goes on)")
        ok, value = reply
        if ok:
            return value
        return MeasureResult(None, value[:500])


def _stop(proc) -> int | None:
    _CHILD.pop("proc", None)
    proc.kill()
    return proc.wait()


def _send(stream, obj, pickler=pickle) -> None:
    data = pickler.dumps(obj)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _receive(stream, deadline: float | None = None):
    """One pickled object from ``stream``; TimeoutError after ``deadline`` (monotonic)."""
    head = _read(stream, 8, deadline)
    return pickle.loads(_read(stream, struct.unpack("<Q", head)[0], deadline))


def _read(stream, n: int, deadline: float | None) -> bytes:
    out = b""
    fd = stream.fileno()
    while len(out) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError
        out += chunk
    return out


def _child_main() -> None:
    """The measuring child: run each ``(fn, job)`` from stdin, reply ``(ok, value)``."""
    import traceback
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr   # a job's prints must not corrupt the replies
    while True:
        try:
            fn, job = _receive(stdin)
        except EOFError:
            return
        try:
            reply = (True, fn(job))
        except BaseException as err:  # noqa: BLE001 - a failed candidate is a result
            reply = (False, f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=3)}")
        _send(stdout, reply)


if __name__ == "__main__":
    _child_main()


__all__ = ["DaskExecutor", "SharedHostWarning", "run_isolated", "worker_target"]
