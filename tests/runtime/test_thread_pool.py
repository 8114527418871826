"""The native thread pool: every iteration of a parallel loop runs exactly once, whatever the
thread count, how often loops follow each other, whether the workers sleep, and from which
Python thread or process the kernel is called."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.runtime import get_num_threads, num_threads, set_num_threads
from mlcbook.runtime.native_pool import (CHUNKS_PER_THREAD, MAX_CHUNKS_PER_THREAD, SPIN_SECONDS,
                                       NativePool, native_pool)

from ._pool import all_asleep

N = 1000

# every iteration adds 1 to its own element: after one call, all ones iff each ran once
COUNT = f'''
@T.prim_func(root=False)
def count(X: T.Buffer(({N},), "int32"), Y: T.Buffer(({N},), "int32")):
    for i in T.parallel({N}):
        Y[i] = Y[i] + X[i]
'''


@pytest.fixture(scope="module")
def count():
    return mb.build(mb.script.parse(COUNT))


def run(kernel, calls: int = 1) -> np.ndarray:
    x, y = np.ones(N, "int32"), np.zeros(N, "int32")
    for _ in range(calls):
        kernel(x, y)
    return y


@pytest.mark.parametrize("threads", [1, 2, 3, 8])
def test_each_iteration_runs_once_with_any_thread_count(count, threads):
    with num_threads(threads):
        np.testing.assert_array_equal(run(count), np.ones(N))


def test_workers_are_native_threads_started_at_the_first_parallel_loop(count):
    with num_threads(4):
        run(count)
    assert native_pool().workers >= 3


def test_many_loops_in_a_row_each_run_every_iteration_once(count):
    with num_threads(2):
        np.testing.assert_array_equal(run(count, calls=2000), np.full(N, 2000))


def test_loops_after_the_workers_fell_asleep_still_run_every_iteration(count):
    with num_threads(2):
        for _ in range(3):
            time.sleep(4 * SPIN_SECONDS)
            np.testing.assert_array_equal(run(count), np.ones(N))


def test_kernels_called_from_two_python_threads_at_once_both_finish(count):
    results = {}

    def work(name):
        results[name] = run(count, calls=300)

    with num_threads(2):
        ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=60)
    assert sorted(results) == [0, 1]
    for y in results.values():
        np.testing.assert_array_equal(y, np.full(N, 300))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_its_own_workers(count):
    with num_threads(2):
        run(count)                      # the parent's workers exist before the fork
        pid = os.fork()
        if pid == 0:                    # the child: its copy of the pool has no workers
            ok = (run(count, calls=50) == 50).all()
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_num_threads_restores_the_previous_count():
    before = get_num_threads()
    with num_threads(before + 1):
        assert get_num_threads() == before + 1
    assert get_num_threads() == before


@pytest.mark.parametrize("bad", [0, -2, 1.5, "2", True])
def test_set_num_threads_rejects_what_is_not_a_positive_int(bad):
    with pytest.raises(mb.errors.ArgumentError, match=f"positive int, got {bad!r}"):
        set_num_threads(bad)


def test_workers_return_at_exit_before_their_code_is_freed():
    script = f"""
import numpy as np, mlcbook as mb
from mlcbook.runtime import set_num_threads
from mlcbook.runtime.native_pool import native_pool
set_num_threads(3)
k = mb.build(mb.script.parse('''{COUNT}'''))
x, y = np.ones({N}, "int32"), np.zeros({N}, "int32")
k(x, y)
pool = native_pool()
pool._shutdown()
k(x, y)                          # after shutdown, parallel loops run serially
print(pool.workers, pool._exited.value, int(y.min()), int(y.max()))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "2", "2", "2"]


def test_pool_without_posix_threads_runs_every_loop_on_the_caller(count):
    serial = NativePool(posix=False)
    x, y = np.ones(N, "int32"), np.zeros(N, "int32")
    count.native_function()(*count.check_args((x, y)), serial.launcher_address)
    np.testing.assert_array_equal(y, np.ones(N))
    assert serial.threads == 1 and serial.workers == 0


def test_more_threads_without_posix_threads_is_an_error(monkeypatch):
    from mlcbook.runtime import thread_pool
    serial = NativePool(posix=False)
    monkeypatch.setattr(thread_pool, "native_pool", lambda: serial)
    with pytest.raises(mb.errors.ArgumentError, match="need POSIX threads"):
        set_num_threads(2)
    assert set_num_threads(1) == 1


@pytest.mark.parametrize("n", [2**31, 2**16, 1025])
def test_too_many_threads_is_an_error_not_a_wrapped_count(n):
    with pytest.raises(mb.errors.ArgumentError, match="at most 1024"):
        set_num_threads(n)
    assert get_num_threads() > 0


@pytest.mark.parametrize("value", ["2147483648", "0", "-3", "two"])
def test_a_bad_mlcbook_num_threads_is_named_in_the_error(value):
    code = "import mlcbook.runtime as r; r.get_num_threads()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "MLCBOOK_NUM_THREADS": value}, timeout=120)
    assert proc.returncode != 0
    assert f"MLCBOOK_NUM_THREADS={value!r}" in proc.stderr and "[MLC-A001]" in proc.stderr


@pytest.fixture
def chunks():
    pool = native_pool()
    old = pool.chunks_per_thread
    yield pool
    pool.chunks_per_thread = old


@pytest.mark.parametrize("per_thread", [1, 3, MAX_CHUNKS_PER_THREAD])
@pytest.mark.parametrize("threads", [2, 3])
def test_each_iteration_runs_once_however_the_loop_is_chunked(count, chunks, per_thread, threads):
    # N = 1000 is not a multiple of 2*3, 3*63, ...: uneven chunks, and more chunks than
    # iterations per chunk
    chunks.chunks_per_thread = per_thread
    with num_threads(threads):
        np.testing.assert_array_equal(run(count, calls=20), np.full(N, 20))


@pytest.mark.parametrize("bad", [0, MAX_CHUNKS_PER_THREAD + 1, 2.0, True])
def test_chunks_per_thread_rejects_what_the_ticket_cannot_hold(chunks, bad):
    with pytest.raises(mb.errors.ArgumentError, match=f"chunks per thread .* got {bad!r}"):
        chunks.chunks_per_thread = bad
    assert chunks.chunks_per_thread == CHUNKS_PER_THREAD


def _cpu_seconds_while_idle(seconds: float) -> float:
    t0 = time.process_time()     # every thread of the process, the workers too
    time.sleep(seconds)
    return time.process_time() - t0


def test_an_idle_pool_keeps_no_core_busy(count):
    with num_threads(2):
        run(count, calls=200)
        time.sleep(10 * SPIN_SECONDS)           # the workers' spin is bounded...
        assert _cpu_seconds_while_idle(0.2) < 0.02   # ...then they sleep


def _some_awake(pool, within: float = 1.0) -> bool:
    deadline = time.perf_counter() + within
    while pool.sleeping == pool.workers:
        if time.perf_counter() > deadline:
            return False
    return True


def _wakes(pool, tries: int = 50) -> bool:
    # a roused worker spins for SPIN_SECONDS only: on a loaded machine this thread may be
    # descheduled for the whole window, so a miss is retried, never taken as proof
    for _ in range(tries):
        pool.wake()
        if _some_awake(pool, within=0.05):
            return True
    return False


def test_waking_the_pool_makes_workers_spin_for_a_bounded_time_then_sleep(count):
    pool = native_pool()
    with num_threads(2):
        run(count)
        assert all_asleep(pool)
        assert _wakes(pool)
        assert all_asleep(pool)              # asleep again after their spin
        np.testing.assert_array_equal(run(count), np.ones(N))


def test_waking_a_pool_that_runs_loops_on_one_thread_wakes_nobody(count):
    pool = native_pool()
    with num_threads(2):
        run(count)
    assert all_asleep(pool)
    with num_threads(1):
        pool.wake()                           # a roused worker would spin on a core
        assert not _some_awake(pool, within=20 * SPIN_SECONDS)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_may_wake_its_copy_of_the_pool_before_its_first_loop(count):
    with num_threads(2):
        run(count)
        time.sleep(10 * SPIN_SECONDS)          # the parent's workers asleep: sleepers > 0
        pid = os.fork()
        if pid == 0:
            native_pool().wake()               # the child has no workers to wake
            ok = (run(count, calls=50) == 50).all()
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


def test_changing_the_thread_count_between_loops_runs_every_iteration_once(count):
    x, y = np.ones(N, "int32"), np.zeros(N, "int32")
    for k, threads in enumerate([2, 1, 3, 2, 1, 2] * 20):
        set_num_threads(threads) if k else None
        with num_threads(threads):
            count(x, y)
    np.testing.assert_array_equal(y, np.full(N, 120))


@pytest.mark.parametrize("n", [7, 997])
def test_loops_no_chunk_count_divides_run_every_iteration_once(n):
    # 7 < 2 threads * 4 chunks: a chunk per iteration; 997 is prime: uneven chunks
    kernel = mb.build(mb.script.parse(COUNT.replace(str(N), str(n))))
    x, y = np.ones(n, "int32"), np.zeros(n, "int32")
    with num_threads(2):
        for _ in range(30):
            kernel(x, y)
    np.testing.assert_array_equal(y, np.full(n, 30))


@pytest.mark.parametrize("n,threads,per_thread,want", [
    (1000, 2, 4, 8),     # 8 equal chunks, 4 for each thread
    (28, 2, 4, 4),       # 8 and 6 do not divide 28, 4 does (7 would: 4 + 3 chunks, uneven)
    (60, 3, 4, 12),
    (997, 2, 4, 32),     # prime: four times as many, uneven chunks
    (25, 2, 4, 25),      # ...but never more than the loop has iterations
    (7, 2, 4, 7),
])
def test_a_loop_is_cut_into_equal_chunks_as_many_for_each_thread_when_it_can_be(
        chunks, n, threads, per_thread, want):
    kernel = mb.build(mb.script.parse(COUNT.replace(str(N), str(n))))
    chunks.chunks_per_thread = per_thread
    y = np.zeros(n, "int32")
    with num_threads(threads):
        kernel(np.ones(n, "int32"), y)
    assert chunks.last_chunk_count == want
    np.testing.assert_array_equal(y, np.ones(n))
