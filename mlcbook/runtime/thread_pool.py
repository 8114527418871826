"""The thread pool that runs ``parallel`` loops on several cores.

A compiled kernel receives :data:`LAUNCHER` (a C function pointer) as its last argument.
For each parallel loop the kernel calls ``launcher(body, n, closure)``; the pool splits
``[0, n)`` into one contiguous chunk per thread and each thread calls the native
``body(begin, end, closure)``. The threads are Python threads, but a ctypes call releases
the GIL for as long as the native code runs, so the chunks run truly in parallel; Python
only hands out the chunks (a few microseconds per parallel loop).

    >>> set_num_threads(1)      # run parallel loops serially, e.g. to measure speed-up
    2
    >>> with num_threads(2): ...  # for one block of code
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import threading

BODY_FN = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
LAUNCH_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)


def _default_threads() -> int:
    env = os.environ.get("MLCBOOK_NUM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    return os.cpu_count() or 1


class ThreadPool:
    """Persistent worker threads; ``parallel_for`` blocks until every chunk has run."""

    def __init__(self):
        self.num_threads = _default_threads()
        self._workers: list[queue.SimpleQueue] = []
        self._done = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._bodies: dict[int, object] = {}
        self.error: BaseException | None = None

    def _grow(self, n: int) -> None:
        while len(self._workers) < n:
            q: queue.SimpleQueue = queue.SimpleQueue()
            t = threading.Thread(target=self._work, args=(q,), daemon=True,
                                 name=f"mlcbook-worker-{len(self._workers)}")
            self._workers.append(q)
            t.start()

    def _work(self, q: queue.SimpleQueue) -> None:
        while True:
            body, begin, end, closure = q.get()
            try:
                body(begin, end, closure)
            finally:
                self._done.release()

    def _body(self, addr: int):
        fn = self._bodies.get(addr)
        if fn is None:
            fn = self._bodies[addr] = BODY_FN(addr)
        return fn

    def parallel_for(self, body_addr: int, n: int, closure) -> None:
        body = self._body(body_addr)
        t = max(1, min(self.num_threads, n))
        if t == 1:
            body(0, n, closure)
            return
        step = -(-n // t)
        chunks = [(b, min(b + step, n)) for b in range(0, n, step)]
        with self._lock:
            self._grow(len(chunks) - 1)
            for q, (b, e) in zip(self._workers, chunks[1:]):
                q.put((body, b, e, closure))
            body(chunks[0][0], chunks[0][1], closure)
            for _ in chunks[1:]:
                self._done.acquire()


POOL = ThreadPool()


def _launch(body_addr, n, closure) -> None:
    try:
        POOL.parallel_for(body_addr, n, closure)
    except BaseException as e:  # an exception cannot cross the native frames: keep it
        POOL.error = e


#: the C function pointer every kernel receives as its last argument
LAUNCHER = LAUNCH_FN(_launch)
LAUNCHER_ADDRESS = ctypes.cast(LAUNCHER, ctypes.c_void_p).value


def set_num_threads(n: int) -> int:
    """Use ``n`` threads for parallel loops from now on; returns the previous number."""
    if not isinstance(n, int) or n < 1:
        from ..errors import ArgumentError
        raise ArgumentError(f"the number of threads must be a positive int, got {n!r}")
    old, POOL.num_threads = POOL.num_threads, n
    return old


@contextlib.contextmanager
def num_threads(n: int):
    """``with num_threads(1): ...`` runs parallel loops on ``n`` threads inside the block."""
    old = set_num_threads(n)
    try:
        yield
    finally:
        set_num_threads(old)


def get_num_threads() -> int:
    """How many threads parallel loops use (default: all cores, or $MLCBOOK_NUM_THREADS)."""
    return POOL.num_threads
