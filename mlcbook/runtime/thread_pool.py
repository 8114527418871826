"""The thread pool that runs ``parallel`` loops on several cores.

A compiled kernel receives the address of the pool's native launcher as its last argument;
each of its parallel loops calls ``launcher(body, n, closure)``, which splits ``[0, n)`` into
chunks (a few per thread, claimed one at a time) and runs ``body(begin, end, closure)`` on
each, on native worker threads (see :mod:`mlcbook.runtime.native_pool`). No Python runs
inside a kernel.

    >>> set_num_threads(1)      # run parallel loops serially, e.g. to measure speed-up
    2
    >>> with num_threads(2): ...  # for one block of code
"""

from __future__ import annotations

import contextlib

from .native_pool import MAX_THREADS, native_pool


def launcher_address() -> int:
    """The native launcher every kernel call passes as its last argument."""
    return native_pool().launcher_address


def set_num_threads(n: int) -> int:
    """Use ``n`` threads for parallel loops from now on; returns the previous number."""
    from ..errors import ArgumentError
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ArgumentError(f"the number of threads must be a positive int, got {n!r}")
    if n > MAX_THREADS:
        raise ArgumentError(f"cannot use {n} threads: the pool runs at most {MAX_THREADS}; "
                            "Instead: use about as many threads as the machine has cores")
    pool = native_pool()
    if n > 1 and not pool.posix:
        raise ArgumentError(f"cannot use {n} threads: mlcbook's parallel loops need POSIX "
                            "threads (Linux, macOS); here kernels run on one thread")
    old, pool.threads = pool.threads, n
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
    return native_pool().threads
