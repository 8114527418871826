"""mb.tune against hand-written schedules, and XGBoost search against random search.

    python bench/tune.py                       # the full run (takes a long while; quiet machine)
    python bench/tune.py --smoke               # tiny budgets: checks that the script runs

1. **Tuned vs hand-written**: a 1024^3 float32 matmul tuned from the generated space (no
   hand schedule, <= ``--trials`` measurements, XGBoost) against ``matmul_best`` of
   bench/_programs.py; a 3x3 conv (64 -> 64 channels, 56 x 56, the graph's ``conv`` op) and
   a batched matmul (8 x 256^3) tuned against their default schedule. Figures: medians of
   interleaved rounds (``mb.runtime.time_interleaved``), both at all threads.
2. **XGBoost vs random vs analytic**: the same budget (``--curve-trials``) on three kernels,
   ``--seeds`` seeds each; the median best GFLOP/s at the end, and the curves
   (bench/tune_curves.png).

Writes bench/RESULTS_tune.md (and the curves' PNG).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

import mlcbook as mb
from mlcbook.graph.default_schedule import default_schedule
from mlcbook.ops import TensorType as T
from mlcbook.ops import legalize_call
from mlcbook.tune.features import flop_count
from mlcbook.tune.measure import random_inputs
from mlcbook.tune.plot import plot_curves
from mlcbook.tune.search import tune

import _programs as P

HERE = Path(__file__).parent


def kernels(smoke: bool) -> dict:
    n = 128 if smoke else 1024
    c, hw = (16, 14) if smoke else (64, 56)
    b, m = (2, 64) if smoke else (8, 256)
    return {
        f"matmul {n}^3": (P.matmul_naive(n), P.matmul_best(n)),
        f"conv3x3 {c}->{c} @{hw}": (legalize_call(
            "conv", [T((1, c, hw, hw)), T((c, c, 3, 3))], {"pads": (1, 1, 1, 1)}), None),
        f"batched matmul {b}x{m}^3": (legalize_call("matmul", [T((b, m, m)), T((b, m, m))]),
                                     None),
    }


def _time(programs: dict, func, rounds: int) -> dict:
    args = random_inputs(func, 0)
    calls = {name: (mb.build(f), *args) for name, f in programs.items()}
    want = None
    for name, (k, *a) in calls.items():  # every contender computes the same
        k(*a)
        out = a[-1].copy()
        if want is None:
            want = out
        np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3, err_msg=name)
    return mb.runtime.time_interleaved(calls, rounds=rounds)


def tuned_vs_hand(trials: int, rounds: int, smoke: bool) -> list:
    rows = []
    for name, (func, hand) in kernels(smoke).items():
        t0 = time.perf_counter()
        r = tune(func, trials, model="xgboost", batch=16 if trials >= 64 else 4, seed=0,
                 name=name)
        minutes = (time.perf_counter() - t0) / 60
        peer = ("hand-written best", hand) if hand is not None else (
            "default schedule", default_schedule(func))
        res = _time({"tuned": r.best.func, peer[0]: peer[1]}, func, rounds)
        flops = flop_count(func)
        rows.append([name, peer[0], f"{flops / res['tuned'].median / 1e9:.1f}",
                     f"{flops / res[peer[0]].median / 1e9:.1f}",
                     f"{res[peer[0]].median / res['tuned'].median:.2f}x",
                     str(len(r.history)), f"{minutes:.1f}"])
    return rows


def search_curves(trials: int, seeds: int, smoke: bool) -> tuple[list, dict]:
    s = 64 if smoke else 256
    progs = {f"matmul {s}^3": P.matmul_naive(s),
             "conv3x3 16->32 @28": legalize_call("conv", [T((1, 16, 28, 28)), T((32, 16, 3, 3))],
                                                 {"pads": (1, 1, 1, 1)}),
             "batched matmul 4x128^3": legalize_call("matmul", [T((4, 128, 128)),
                                                                T((4, 128, 128))])}
    rows, curves = [], {}
    for name, func in progs.items():
        curves[name] = {}
        finals = {}
        for model in ("xgboost", "random", "analytic"):
            runs = [tune(func, trials, model=model, batch=8, seed=sd, progress=False).gflops_curve()
                    for sd in range(seeds if model != "analytic" else 1)]
            curves[name][model] = runs
            finals[model] = statistics.median(c[-1] for c in runs)
        rows.append([name, str(trials)] + [f"{finals[m]:.1f}" for m in ("xgboost", "random",
                                                                        "analytic")])
    return rows, curves


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=256)
    ap.add_argument("--curve-trials", type=int, default=64)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes and budgets")
    args = ap.parse_args()
    if args.smoke:
        args.trials, args.curve_trials, args.seeds, args.rounds = 4, 4, 1, 2
    from _common import machine, table
    load = mb.runtime.machine_load()
    part1 = tuned_vs_hand(args.trials, args.rounds, args.smoke)
    part2, curves = search_curves(args.curve_trials, args.seeds, args.smoke)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(curves), figsize=(6 * len(curves), 3.5))
    for ax, (name, c) in zip(np.atleast_1d(axes), curves.items()):
        plot_curves(c, title=name, ax=ax)
    fig.tight_layout()
    fig.savefig(HERE / "tune_curves.png", dpi=90)
    text = "\n\n".join([
        "# mb.tune benchmarks\n\n" + machine() + f"\n\n{load.note()}",
        f"## Tuned from the generated space vs hand-written / default ({args.trials} trials, "
        "XGBoost)\n\n" + table(["kernel", "peer", "tuned GFLOP/s", "peer GFLOP/s",
                                "tuned speed-up", "trials", "tuning minutes"], part1),
        f"## Best GFLOP/s after {args.curve_trials} trials, median over {args.seeds} seeds "
        "(analytic: deterministic, 1 run)\n\n"
        + table(["kernel", "trials", "xgboost", "random", "analytic"], part2)
        + "\n\nCurves: bench/tune_curves.png"])
    out = HERE / ("RESULTS_tune_smoke.md" if args.smoke else "RESULTS_tune.md")
    out.write_text(text + "\n")
    (HERE / "tune_curves.json").write_text(json.dumps(curves))
    print(text)


if __name__ == "__main__":
    main()
