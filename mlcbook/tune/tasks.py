"""Whole models: one tuning task per distinct kernel, and a scheduler that spends the trials
where they buy the most latency.

    >>> tasks = extract_tasks(mod)             # [Task('fused_conv2d_add_relu', calls=2), ...]
    >>> results = tune_model(mod, trials=200, database="records.jsonl")
    >>> exe = mb.compile(mod, tuning_records="records.jsonl")

A task is a PrimFunc of ``mb.compile``'s fused, legalized module (before scheduling);
kernels that are the same program (equal workload keys) are one task whose ``calls``
add up. Each task's default schedule is measured once too (``tune(..., baseline=True)``),
so that ``mb.compile`` keeps it where no point found beats it. Each task keeps its search
state (cost model, measurements, features) from batch to batch, so a batch costs the same
however many came before. The scheduler first gives every task one batch, then each next
batch to the task
with the largest ``calls x best seconds`` (its share of the model's latency) times how
much its last batch improved it (plus a floor, so a stalled task can be picked again).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

from ..errors import DatabaseError
from ..graph.compile import kernel_calls
from ..paths import output_file
from ..tir.function import PrimFunc
from .database import Database, workload_key
from .errors import TuneArgumentError
from .measure import Measurer
from .search import TaskSearch, progress_bar


@dataclass
class Task:
    """A kernel to tune: ``calls`` is how often one run of the model calls it."""

    name: str
    func: PrimFunc
    calls: int
    workload: str

    def __repr__(self) -> str:
        return f"Task({self.name!r}, calls={self.calls})"


def extract_tasks(mod, target=None, opt_level: int = 3, options=None) -> list[Task]:
    """The distinct kernels of ``mb.compile(mod, options=options)``, most called first."""
    tasks: dict = {}
    for name, func, calls in kernel_calls(mod, opt_level, target, options):
        key = workload_key(func, target)
        if key in tasks:
            tasks[key].calls += calls
        else:
            tasks[key] = Task(name, func, calls, key)
    return sorted(tasks.values(), key=lambda t: -t.calls)


def tune_model(mod, trials: int, *, database=None, target=None, model="xgboost",
               batch: int = 8, executor=None, timeout: float = 60.0, seed: int = 0,
               progress: bool = True, tasks=None, warm_start: int = 32,
               seconds: Optional[float] = None, confirm: int = 4) -> dict:
    """Tune every task of ``mod`` with ``trials`` measurements in all, or fewer if
    ``seconds`` (wall time) run out first: no batch starts after that; ``{task name:
    TuneResult}`` (each result's history covers its task's trials). Each task keeps one
    :class:`~.search.TaskSearch` (model, measurements, features) across its batches; at the
    end each task's ``confirm`` best points are measured again (see :func:`~.search.tune`)."""
    if not isinstance(trials, int) or trials < 0:
        raise TuneArgumentError(f"trials must be a non-negative int, got {trials!r}")
    if not isinstance(confirm, int) or isinstance(confirm, bool) or confirm < 0:
        raise TuneArgumentError(f"confirm must be a non-negative int (how many of each "
                                f"task's best points to measure again), got {confirm!r}")
    if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
        raise TuneArgumentError(f"seconds must be a positive wall-time budget or None, got "
                                f"{seconds!r}")
    stop = None if seconds is None else time.monotonic() + seconds
    # a cluster's workers measure: their CPU is the target (and keys the records)
    target = target if target is not None else getattr(executor, "target", None)
    if database is not None and not isinstance(database, Database):
        output_file(database, "the tuning records", DatabaseError)  # before any work
    tasks = tasks if tasks is not None else extract_tasks(mod, target)
    db = database if isinstance(database, Database) else Database(database)
    searches: dict[str, TaskSearch] = {}
    gain = {t.name: 1.0 for t in tasks}
    spent = 0
    ran: dict[str, int] = {}      # trials per task in this run
    bar = progress_bar(trials, progress, "model")
    with Measurer(executor=executor, timeout=timeout) as measurer:
        order = list(tasks)
        live = list(tasks)
        while spent < trials and live and (stop is None or time.monotonic() < stop):
            if order:
                task = order.pop(0)
            else:
                task = max(live, key=lambda t: _priority(t, searches[t.name].result,
                                                         gain[t.name]))
            if task.name not in searches:
                searches[task.name] = TaskSearch(
                    task.func, model=model, database=db, target=target,
                    warm_start=warm_start, seed=seed + len(searches), name=task.name)
                searches[task.name].baseline(measurer)
            search = searches[task.name]
            before = search.result.best_seconds
            got = search.step(measurer, min(batch, trials - spent))
            if not got:
                live.remove(task)  # nothing left to propose for this kernel
                continue
            after = search.result.best_seconds
            if before and after:
                gain[task.name] = max(before / after - 1.0, 0.02)
            spent += got
            ran[task.name] = ran.get(task.name, 0) + got
            if bar is not None:
                bar.update(got)
                if after:
                    bar.set_postfix_str(f"{task.name}: best {after * 1e3:.3f} ms")
        for name, n in ran.items():
            searches[name].result.trials_run = n
            if stop is None or time.monotonic() < stop:
                searches[name].confirm(measurer, min(confirm, n // 8))
    if bar is not None:
        bar.close()
    return {name: s.result for name, s in searches.items()}


def _priority(task: Task, result, gain: float) -> float:
    if result.best_seconds is None:
        return 0.0  # nothing valid found yet: let the others go first
    return task.calls * result.best_seconds * gain


__all__ = ["Task", "extract_tasks", "tune_model"]
