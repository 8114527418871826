"""Tuning on a Dask cluster, safely: a candidate that crashes and one that hangs are each
recorded, tuning finishes, and every Dask worker is still there, never restarted."""

from __future__ import annotations

import functools
import os
import time
import warnings

import pytest

import mlcbook as mb
from mlcbook.tune.cluster import DaskExecutor, SharedHostWarning
from mlcbook.tune.database import Database
from mlcbook.tune.measure import Measurer, MeasureResult, run_job
from mlcbook.tune.search import tune

from ._util import matmul

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed "
                                  "(pip install mlcbook[tune-dask])")


def _claim(folder, name: str) -> bool:
    """True for the first caller in any process (an atomic create)."""
    try:
        os.close(os.open(os.path.join(folder, name), os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


def _crash_then_hang(folder, job):
    """The measuring worker, with faults injected: the first job crashes the process, the
    next one hangs, the others are measured."""
    if _claim(folder, "crashed"):
        os._exit(7)
    if _claim(folder, "hung"):
        time.sleep(3600)
    return run_job(job)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as c, distributed.Client(c) as client:
        yield client


def _workers(client):
    return sorted((a, w["id"]) for a, w in client.scheduler_info()["workers"].items())


def test_a_crash_and_a_hang_are_recorded_and_cost_no_worker(cluster, tmp_path):
    before = _workers(cluster)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SharedHostWarning)
        executor = DaskExecutor(cluster, timeout=20)
    measurer = Measurer(executor=executor, worker=functools.partial(_crash_then_hang,
                                                                    str(tmp_path)))
    db = Database(str(tmp_path / "records.jsonl"))
    r = tune(matmul(32), 6, model="random", measurer=measurer, batch=3, progress=False,
             database=db, warm_start=0)
    errors = [rec.error for rec in db.records() if rec.error]
    assert any(e.startswith("worker died (its measuring process ended with exit code 7")
               for e in errors), errors
    assert any(e.startswith("timeout (over 20 s") for e in errors), errors
    assert len(r.history) == 6 and r.best_seconds is not None
    assert _workers(cluster) == before   # the same workers: none lost, none restarted


def test_workers_sharing_a_host_are_warned_about(cluster):
    with pytest.warns(SharedHostWarning, match=r"share a host \(127.0.0.1 \(2 workers\)\)"):
        DaskExecutor(cluster)


def test_one_per_host_sends_every_job_to_one_worker(cluster):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SharedHostWarning)
        executor = DaskExecutor(cluster, one_per_host=True)
    assert len(executor.workers) == 1
    pids = cluster.run(os.getpid)            # each worker's process
    got = Measurer(executor=executor, worker=_parent).measure([0, 1, 2, 3])
    assert {m.error for m in got} == {str(pids[executor.workers[0]])}


def _parent(job):
    # the measuring process's parent is the Dask worker: its pid, through the error field
    return MeasureResult(None, str(os.getppid()))


def test_a_bad_timeout_is_refused(cluster):
    from mlcbook.tune.errors import TuneArgumentError
    with pytest.raises(TuneArgumentError, match="timeout must be positive seconds, got 0"):
        DaskExecutor(cluster, timeout=0)


def test_the_cli_tunes_on_a_scheduler(cluster, tmp_path, capsys):
    import onnx

    from mlcbook.cli import main
    from mlcbook.frontend import examples
    onnx.save(examples.mlp(batch=2, sizes=(16, 8, 4)), tmp_path / "mlp.onnx")
    address = cluster.scheduler.address
    assert main(["tune", str(tmp_path / "mlp.onnx"), "--trials", "2", "--batch", "1",
                 "--cost-model", "analytic", "--warm-start", "0", "--scheduler", address,
                 "--one-per-host", "-o", str(tmp_path / "r.jsonl")]) == 0
    out = capsys.readouterr().out
    assert f"measuring on the Dask cluster at {address}: 2 workers on 1 host, CPU llvm" in out
    assert " with 2 trials in " in out


def test_records_are_keyed_by_the_workers_cpu(cluster, tmp_path):
    # the workers report their own target; tuning compiles for it and keys records with it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SharedHostWarning)
        executor = DaskExecutor(cluster, timeout=60)
    assert set(cluster.run(lambda: __import__("mlcbook").Target("llvm").__str__()).values()) \
        == {executor.target}
    # workers of another CPU than the client's (x86-64-v2 runs on any x86-64 host)
    executor.target = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=x86-64-v2"
    db = Database(str(tmp_path / "r.jsonl"))
    tune(matmul(16), 1, model="random", executor=executor, batch=1, progress=False,
         database=db, warm_start=0)
    assert {r.workload.split(":", 1)[1] for r in db.records()} == {str(mb.Target(executor.target))}
