"""Does a candidate's recorded time predict its time where it runs? The tuner's workers
against the program's own process, on the 3x3 conv (64 -> 64 channels, 56 x 56).

    python bench/tune_fidelity.py                  # quiet machine: ~5 min
    python bench/tune_fidelity.py --trials 16 --passes 2      # a smoke run

A bare XGBoost search (``--trials``, no default start, so the candidates differ; its best
few confirmed as ``mb.tune.tune`` does by default) records its measurements; its ``--top`` best candidates, ``--others`` more spread over the ranks,
and the default schedule are then measured again in ``--passes`` alternating passes:

* by the tuner's worker, ``run_job`` (mlcbook.tune.measure: arguments on huge pages, each
  candidate timed in rounds alternating with the default schedule), and by ``legacy_job``,
  the worker as it was before (fresh 4 KiB-page inputs per job, the candidate's median of
  3 short repeats alone), in the same worker process, one after the other;
* in this process: all of them interleaved (``mb.runtime.time_interleaved``), on huge
  pages as in bench/tune.py's table.

Every figure is a speed-up over the default schedule measured by the same method, so the
host's speed (which drifts in ~0.5 s phases) cancels. For each worker method the table
gives, per candidate, the median over passes, and the error of the worker's speed-up
against the in-process one: the median over candidates of |worker / in-process - 1|, and
whether the worker's best is the in-process best. Writes bench/RESULTS_tune_fidelity.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import mlcbook as mb
from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.graph.kernels.records import Database
from mlcbook.runtime.pages import huge_copy
from mlcbook.tune.features import flop_count
from mlcbook.tune.measure import Job, MeasureResult, Measurer, random_inputs, run_job
from mlcbook.tune.search import tune
from mlcbook.tune.space import Space

from _common import machine, write_results
from tune import _conv

HERE = Path(__file__).parent


def legacy_job(job: Job) -> MeasureResult:
    """The worker before session 8: fresh inputs per job, the candidate timed alone."""
    args = random_inputs(job.reference, job.seed)
    kernel = mb.build(job.program, target=job.target)
    kernel(*args)
    r = mb.runtime.time_kernel(kernel, *args, repeat=job.repeat,
                               min_repeat_seconds=job.min_seconds)
    return MeasureResult(r.median, None)


def _in_process(programs: dict, func, rounds: int) -> dict:
    args = huge_copy(random_inputs(func, 0))
    calls = {k: (mb.build(f), *args) for k, f in programs.items()}
    t = mb.runtime.time_interleaved(calls, rounds=rounds)
    return {k: v.median for k, v in t.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=64)
    ap.add_argument("--top", type=int, default=4)
    ap.add_argument("--others", type=int, default=3)
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=7, help="in-process interleaved rounds")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    func = _conv(64, 64, 56)
    flops = flop_count(func)
    db = Database(None)
    measurer = Measurer()
    tune(func, args.trials, model="xgboost", batch=16, seed=0, progress=False,
         measurer=measurer, from_default=False, database=db, baseline=True)
    # the baseline (the default schedule, not a trial) has no decisions
    default_rec = next(r.seconds for r in db.records() if not r.decisions)
    # a point the search confirmed (measured again) counts with its median, as in
    # Database.best
    times: dict = {}
    for r in db.records():
        if r.seconds and r.decisions:
            times.setdefault(r.key, []).append(r)
    ranked = sorted((dataclasses.replace(rs[0], seconds=statistics.median(x.seconds for x in rs))
                     for rs in times.values()), key=lambda r: r.seconds)
    picks = ranked[:args.top]
    rest = ranked[args.top:]
    if rest and args.others:
        step = max(1, len(rest) // args.others)
        picks += rest[step - 1::step][:args.others]
    space = Space(func)
    programs = {"default": default_schedule(func)}
    for k, r in enumerate(picks):
        programs[f"#{ranked.index(r) + 1}"] = space.point(r.decisions).func
    legacy = Measurer(executor=measurer.executor, worker=legacy_job)
    speedups = {m: {k: [] for k in programs} for m in ("worker", "legacy", "in-process")}
    for _ in range(args.passes):
        for method, m in (("worker", measurer), ("legacy", legacy)):
            res = dict(zip(programs, m.measure([Job.of(func, f) for f in programs.values()])))
            for k, r in res.items():
                if r.ok and res["default"].ok:
                    speedups[method][k].append(res["default"].seconds / r.seconds)
        t = _in_process(programs, func, args.rounds)
        for k in programs:
            speedups["in-process"][k].append(t["default"] / t[k])
        print(f"pass {_ + 1}: in-process default "
              f"{flops / t['default'] / 1e9:.1f} GFLOP/s", flush=True)
    measurer.close()
    med = {m: {k: statistics.median(v) for k, v in d.items() if v} for m, d in speedups.items()}
    title = "Tuner measurements against in-process times: 3x3 conv 64->64 @56"
    lines = [f"`python bench/{' '.join([Path(__file__).name] + sys.argv[1:])}` — "
             f"{args.trials} trials (bare XGBoost search, seed 0), {args.passes} passes; "
             f"speed-ups over the default schedule (median over passes), each method "
             f"against its own default measurement. Candidates named by their rank in "
             f"the search's records.",
             "",
             "| candidate | recorded by the search | worker (now) | legacy worker | "
             "in-process |",
             "|---|---:|---:|---:|---:|"]
    for k in programs:
        rec = "1.00x"
        if k != "default":
            rec = f"{default_rec / picks[list(programs).index(k) - 1].seconds:.2f}x"
        lines.append(f"| {k} | {rec} | " + " | ".join(
            f"{med[m][k]:.2f}x" if k in med[m] else "error"
            for m in ("worker", "legacy", "in-process")) + " |")
    lines.append("")
    lines.append("| method | median \\|worker / in-process - 1\\| | worker's best is the "
                 "in-process best |")
    lines.append("|---|---:|---|")
    truth = med["in-process"]
    best_true = max(truth, key=truth.get)
    med["recorded"] = {"default": 1.0, **{k: default_rec / r.seconds
                                          for k, r in zip(list(programs)[1:], picks)}}
    for m in ("recorded", "worker", "legacy"):
        errs = [abs(med[m][k] / truth[k] - 1) for k in programs if k in med[m]]
        best = max(med[m], key=med[m].get)
        lines.append(f"| {m} | {100 * statistics.median(errs):.1f}% | "
                     f"{'yes' if best == best_true else f'no ({best} vs {best_true})'} |")
    lines += ["", f"In all {time.perf_counter() - t_start:.0f} s; machine load "
              f"{mb.runtime.machine_load().others:.2f} cores of others at the end.",
              "", f"Machine: {machine()}"]
    text = "\n".join(lines) + "\n"
    write_results(HERE / "RESULTS_tune_fidelity.md", title, text)
    print(f"# {title}\n\n{text}")


if __name__ == "__main__":
    main()
