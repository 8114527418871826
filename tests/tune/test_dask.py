"""Measuring on a Dask cluster: the same tuning loop, candidates run by dask workers."""

import pytest

from mlcbook.tune.search import tune

from ._util import matmul

distributed = pytest.importorskip("distributed", reason="dask[distributed] is not installed "
                                  "(pip install mlcbook[tune-dask])")


def test_tuning_runs_on_a_local_cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        r = tune(matmul(32), 3, model="analytic", executor=client, batch=3, progress=False,
                 warm_start=4)
    assert len(r.history) == 3 and r.best_seconds is not None
