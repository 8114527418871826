"""What a whole-model tuning run did, for people: each kernel's share of the model's time
(from a profile of the untuned model), the trials it got, its speed-up over its default
schedule, and why the others were left untuned.

    >>> tasks, shares = tasks_by_share(mod)              # biggest share of the run first
    >>> results = tune_model(mod, 64, tasks=tasks, database="records.jsonl")
    >>> print(report(tasks, shares, results, trials=64, batch=8))
"""

from __future__ import annotations

import numpy as np

from ..codegen.target import Target
from ..graph.compile import compile as compile_model
from ..graph.compile import kernel_calls
from .database import workload_key
from .display import speedup
from .tasks import Task


def tasks_by_share(mod, target=None, repeat: int = 5, seed: int = 0):
    """``(tasks, {task name: share of the run})``: the model's tuning tasks, ordered by the
    share of one run's time their kernels take in a profile of the model compiled with the
    default schedules, on random inputs (``seed``), median of ``repeat`` runs."""
    tasks: dict[str, Task] = {}
    kernel_task: dict[str, str] = {}
    for name, func, calls in kernel_calls(mod, target=target):
        key = workload_key(func, target)
        if key in tasks:
            tasks[key].calls += calls
        else:
            tasks[key] = Task(name, func, calls, key)
        kernel_task[name] = tasks[key].name
    here = Target(target or "llvm")
    # a cluster's CPU may have features this one lacks: profile this machine's build then
    exe = compile_model(mod, target=str(here) if here.is_host and not here.missing_features()
                        else "llvm")
    rng = np.random.default_rng(seed)
    feeds = {t.name: _random(t.shape, t.dtype, rng) for t in exe.inputs}
    seconds: dict[str, float] = {}
    for kernel, s in exe.profile(repeat=repeat, **feeds):
        task = kernel_task.get(kernel)
        if task is not None:   # a kernel of no task (none today) is left out
            seconds[task] = seconds.get(task, 0.0) + s
    total = sum(seconds.values()) or 1.0
    shares = {t.name: seconds.get(t.name, 0.0) / total for t in tasks.values()}
    return sorted(tasks.values(), key=lambda t: -shares[t.name]), shares


def _random(shape, dtype, rng) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind in "iub":
        return np.zeros(shape, dt)   # integer inputs are mostly indices: 0 fits every axis
    return rng.standard_normal(shape).astype(dt)


def why_untuned(task: Task, result, trials: int, batch: int, n_tasks: int) -> str | None:
    """Why ``task`` has no tuned schedule from this run, or None if it has one."""
    if result is None:
        return (f"no trials left: the {trials} trials went to kernels with a bigger share "
                f"(a kernel's first round is {batch} trials; --trials {batch * n_tasks} gives "
                "every kernel one)")
    if result.trials_run == 0:
        return "nothing left to try: its schedule space has no point not measured already"
    if result.best_seconds is None:
        return "no candidate ran correctly (every trial failed; the records say why)"
    gain = speedup(result)
    if gain is not None and gain <= 1.0:
        return ("nothing its trials found beat its default schedule, which mb.compile keeps "
                "(more trials may find one)")
    return None


def rows(tasks, shares, results, trials: int, batch: int) -> list[dict]:
    """One dict per task, in ``tasks`` order: name, calls, share, trials, default and best
    seconds, speed-up, and why it is untuned (None when tuned)."""
    out = []
    for t in tasks:
        r = results.get(t.name)
        out.append({"kernel": t.name, "calls": t.calls, "share": shares.get(t.name, 0.0),
                    "trials": r.trials_run if r is not None else 0,
                    "default_s": r.default_seconds if r is not None else None,
                    "best_s": r.best_seconds if r is not None else None,
                    "speedup": speedup(r),
                    "untuned": why_untuned(t, r, trials, batch, len(tasks))})
    return out


def report(tasks, shares, results, trials: int, batch: int) -> str:
    """The table ``mlcbook tune`` prints: tuned kernels, then the untuned ones and why."""
    table = rows(tasks, shares, results, trials, batch)
    width = max([6] + [len(r["kernel"]) for r in table])
    lines = [f"{'kernel':<{width}}  share  calls  trials  default ms  best ms  speed-up",
             f"{'-' * width}  -----  -----  ------  ----------  -------  --------"]
    for r in table:
        if r["untuned"] is not None:
            continue
        gain = "-" if r["speedup"] is None else f"{r['speedup']:.2f}x"
        lines.append(f"{r['kernel']:<{width}}  {r['share']:>5.0%}  {r['calls']:>5}  "
                     f"{r['trials']:>6}  {_ms(r['default_s']):>10}  {_ms(r['best_s']):>7}  "
                     f"{gain:>8}")
    untuned = [r for r in table if r["untuned"] is not None]
    if untuned:
        lines.append(f"left untuned ({len(untuned)} of {len(table)} kernels):")
        reasons: dict[str, list] = {}
        for r in untuned:
            reasons.setdefault(r["untuned"], []).append(r)
        for why, group in reasons.items():
            names = ", ".join(f"{r['kernel']} ({r['share']:.0%}, {r['trials']} trials)"
                              for r in group)
            lines.append(f"  {names}: {why}")
    return "\n".join(lines)


def _ms(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.4g}"


__all__ = ["tasks_by_share", "why_untuned", "rows", "report"]
