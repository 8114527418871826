"""What a tuning run reports: kernels by share of the model's time, each one's trials and
speed-up, why the others are untuned; a TuneResult's notebook display."""

from __future__ import annotations

import pytest

import mlcbook as mb
from mlcbook import models
from mlcbook.tune.report import report, rows, tasks_by_share, why_untuned
from mlcbook.tune.search import TuneResult
from mlcbook.tune.tasks import Task, extract_tasks


def _result(default, best, trials, history=()):
    return TuneResult(None, "w", 1000, list(history), None, best, default, trials)


def _task(name, calls=1):
    return Task(name, None, calls, name)


def test_tune_model_is_public():
    assert mb.tune.tune_model is mb.tune.tasks.tune_model


def test_tasks_by_share_are_the_models_tasks_biggest_first():
    mod = mb.from_onnx(models.tiny_convnet(), batch_size=1)
    tasks, shares = tasks_by_share(mod)
    assert {t.workload for t in tasks} == {t.workload for t in extract_tasks(mod)}
    got = [shares[t.name] for t in tasks]
    assert got == sorted(got, reverse=True)
    assert sum(got) == pytest.approx(1.0)


@pytest.mark.parametrize("result, reason", [
    (None, "no trials left: the 16 trials went to kernels with a bigger share (a kernel's "
           "first round is 8 trials; --trials 24 gives every kernel one)"),
    (_result(2e-3, 2e-3, 0), "nothing left to try"),
    (_result(2e-3, None, 8), "no candidate ran correctly"),
    (_result(2e-3, 3e-3, 8), "nothing its trials found beat its default schedule"),
    (_result(2e-3, 1e-3, 8), None),
])
def test_why_a_kernel_is_untuned(result, reason):
    got = why_untuned(_task("k"), result, trials=16, batch=8, n_tasks=3)
    assert got == reason if reason is None else got.startswith(reason)


def test_the_report_lists_tuned_kernels_then_the_untuned_grouped_by_reason():
    tasks = [_task("conv"), _task("dense"), _task("pool"), _task("relu")]
    shares = {"conv": 0.5, "dense": 0.3, "pool": 0.15, "relu": 0.05}
    results = {"conv": _result(2e-3, 1e-3, 8), "dense": _result(1e-3, 1.25e-3, 8)}
    text = report(tasks, shares, results, trials=16, batch=8)
    conv = next(ln for ln in text.splitlines() if ln.startswith("conv "))
    assert conv.split() == ["conv", "50%", "1", "8", "2", "1", "2.00x"]
    assert "left untuned (3 of 4 kernels):" in text
    assert "dense (30%, 8 trials): nothing its trials found beat" in text
    assert "pool (15%, 0 trials), relu (5%, 0 trials): no trials left" in text
    assert [r["speedup"] for r in rows(tasks, shares, results, 16, 8)] == [2.0, 0.8, None, None]


def test_a_tune_results_display_draws_its_curve():
    page = _result(4e-3, 1e-3, 3, [4e-3, None, 2e-3, 1e-3])
    a = mb.te.placeholder((4,), "float32", name="A")
    page.func = mb.te.create_prim_func([a, mb.te.compute((4,), lambda i: a[i] * 2, name="B")])
    html = page._repr_html_()
    assert "4 trials, best 1.0000 ms, default 4.0000 ms, speed-up 4.00x" in html
    assert html.count("<polyline") == 1 and "4.000 down to 1.000 ms" in html
