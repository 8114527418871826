"""Measurement: correct candidates are timed; crashing, hanging and wrong ones become errors
and the run goes on."""

import os
import threading
import time

import pytest

import mlcbook as mb

from mlcbook.errors import BuildError
from mlcbook.graph.default_schedule import default_schedule
from mlcbook.tune.measure import Job, LocalExecutor, Measurer, MeasureResult, run_job

from ._util import add_one, half_matmul, matmul


def crash_build(job):
    if job.seed == 1:
        raise BuildError("injected: this candidate does not build")
    return run_job(job)


def die(job):
    if job.seed == 1:
        os._exit(3)
    return MeasureResult(1e-3, None)  # the others need not build: the crash is the point


def hang(job):
    if job.seed == 1:
        time.sleep(600)
    return MeasureResult(1e-3, None)


@pytest.fixture(scope="module")
def jobs():
    f = matmul(32)
    good = default_schedule(f)
    return [Job.of(f, good, seed=0), Job.of(f, good, seed=1), Job.of(f, good, seed=2)]


def test_good_candidates_are_timed(jobs):
    with Measurer() as m:
        results = m.measure(jobs[:1])
    assert results[0].ok and results[0].seconds > 0


def test_wrong_candidate_is_an_error():
    f = matmul(64)
    with Measurer() as m:
        wrong, right = m.measure([Job.of(f, add_one(64)), Job.of(f, f)])
    assert not wrong.ok and wrong.error.startswith("wrong result")
    assert right.ok


def test_a_candidate_that_leaves_outputs_unwritten_is_wrong_after_a_right_one():
    # every candidate of a workload runs on the same arrays: a candidate that writes only
    # half of C must not pass on the values its predecessor left there
    f = matmul(32)
    right, half = run_job(Job.of(f, default_schedule(f))), run_job(Job.of(f, half_matmul(32)))
    assert right.ok and right.seconds > 0
    assert not half.ok and half.error.startswith("wrong result")


def test_every_candidate_of_a_workload_runs_on_the_same_arguments():
    from mlcbook.tune import measure
    f = matmul(32)
    run_job(Job.of(f, f))
    ref = next(r for key, r in measure._REFERENCES.items() if key[0] == mb.tir.structural_hash(f))
    before = [a.ctypes.data for a in ref.args]
    run_job(Job.of(f, default_schedule(f)))
    assert [a.ctypes.data for a in ref.args] == before


@pytest.mark.parametrize("worker, error", [(crash_build, "BuildError"), (die, "worker process died")])
def test_crashing_candidate_does_not_stop_measuring(jobs, worker, error):
    with Measurer(worker=worker) as m:
        results = m.measure(jobs)
    assert [r.ok for r in results] == [True, False, True]
    assert error in results[1].error


def test_hanging_candidate_times_out(jobs):
    with Measurer(executor=LocalExecutor(timeout=8), worker=hang) as m:
        results = m.measure(jobs)
    m.executor.shutdown()
    assert [r.ok for r in results] == [True, False, True]
    assert "TimeoutError" in results[1].error or "timeout" in results[1].error


def test_executor_must_submit():
    from mlcbook.tune.errors import TuneArgumentError
    with pytest.raises(TuneArgumentError, match="submit"):
        Measurer(executor=object())


def test_a_worker_that_cannot_start_fails_its_job_and_the_executor_shuts_down_cleanly(
        monkeypatch):
    ex = LocalExecutor(timeout=8)
    monkeypatch.setattr(ex._ctx, "Process", _NoStart)
    seen = []
    monkeypatch.setattr(threading, "excepthook", lambda args: seen.append(args.exc_value))
    with pytest.raises(OSError, match="no process for you"):
        ex.submit(abs, -1).result(timeout=8)
    ex.shutdown()
    assert not ex._thread.is_alive() and seen == []


class _NoStart:
    """A process whose start fails (e.g. the system refuses a new process)."""

    def __init__(self, *args, **kwargs):
        pass

    def start(self):
        raise OSError("no process for you")
