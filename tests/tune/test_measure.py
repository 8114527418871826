"""Measurement: correct candidates are timed; crashing, hanging and wrong ones become errors
and the run goes on."""

import os
import threading
import time
from types import SimpleNamespace

import pytest

import mlcbook as mb

from mlcbook.errors import BuildError
from mlcbook.graph.kernels.default_schedule import default_schedule
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


class _Phases:
    """``time_interleaved`` as the host makes it: call ``k`` times the reference at
    ``phases[k]`` (the last repeats) times its best and a serial candidate at 1.8x the
    reference, or at the reference's time when the host holds back a core (factor > 1)."""

    def __init__(self, best: float, phases: list):
        self.best, self.phases, self.calls = best, phases, 0

    def __call__(self, programs, rounds, min_seconds):
        f = self.phases[min(self.calls, len(self.phases) - 1)]
        self.calls += 1
        cand = f if f > 1 else 1.8 * f
        return {"candidate": SimpleNamespace(results=[cand * self.best] * rounds),
                "reference": SimpleNamespace(results=[f * self.best] * rounds)}


def _timed_in_phases(monkeypatch, phases: list):
    """(result, fake timer, reference) of a job of matmul(32) timed in ``phases``."""
    from mlcbook import runtime
    from mlcbook.tune import measure
    monkeypatch.setattr(measure, "_REFERENCES", {})   # this test's reference alone
    f = matmul(32)
    job = Job.of(f, default_schedule(f))
    ref = measure._reference(job)
    fake = _Phases(ref.seconds, phases)
    monkeypatch.setattr(runtime, "time_interleaved", fake)
    return run_job(job), fake, ref


def test_a_job_timed_while_the_host_held_back_a_core_is_timed_again(monkeypatch):
    # in the slow phase the serial candidate matches the reference (ratio 1): that figure
    # must not stand; the next phase shows it 1.8x slower
    result, fake, ref = _timed_in_phases(monkeypatch, [1.6, 1.0])
    assert fake.calls == 2
    assert result.seconds == pytest.approx(1.8 * fake.best)


def test_a_job_slow_in_every_retry_keeps_its_last_figure(monkeypatch):
    from mlcbook.tune.measure import SLOW_PHASE_RETRIES
    result, fake, ref = _timed_in_phases(monkeypatch, [1.6])
    assert fake.calls == 1 + SLOW_PHASE_RETRIES
    assert result.ok and result.seconds == pytest.approx(fake.best)


def test_a_reference_faster_than_its_best_lowers_the_best(monkeypatch):
    result, fake, ref = _timed_in_phases(monkeypatch, [0.5])
    assert fake.calls == 1 and ref.seconds == pytest.approx(0.5 * fake.best)
    assert result.seconds == pytest.approx(1.8 * 0.5 * fake.best)


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
