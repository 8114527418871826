"""Compile-time figures: how long ``default_schedule`` and ``mb.compile`` take.

    python bench/compile_time.py            # prints a table, writes bench/RESULTS_compile.md

What a user feels before the first run: scheduling a 256x256x256 matmul and a 128x768
layer_norm with the default schedules (medians of interleaved repeats), and ``mb.compile``
of the models of ``bench/e2e.py`` (median of a few fresh compiles, kernel cache cleared).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from _common import machine, write_results

import mlcbook as mb
from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.ops.legalize import legalize_call
from mlcbook.ops.types import TensorType


def _scheduling_cases():
    mm = legalize_call("matmul", [TensorType((256, 256), "float32"), TensorType((256, 256), "float32")])
    ln = legalize_call("layer_norm", [TensorType((128, 768), "float32"), TensorType((768,), "float32"),
                                      TensorType((768,), "float32")], {"axis": -1})
    return {"default_schedule matmul 256^3": mm, "default_schedule layer_norm 128x768": ln}


def _compile_cases():
    from mlcbook.frontend import examples
    return {"mb.compile MLP": examples.mlp(batch=64), "mb.compile CNN": examples.cnn(batch=8)}


def _clear_cache():
    mb.runtime.clear_cache()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_compile.md")))
    args = ap.parse_args(argv)
    sched, comp = _scheduling_cases(), _compile_cases()
    times = {k: [] for k in [*sched, *comp]}
    for _ in range(args.rounds):
        for name, func in sched.items():
            t0 = time.perf_counter(); default_schedule(func); times[name].append(time.perf_counter() - t0)
        for name, model in comp.items():
            _clear_cache()
            t0 = time.perf_counter(); mb.compile(mb.from_onnx(model)); times[name].append(time.perf_counter() - t0)
    lines = [f"{machine()}\n", "| what | median ms | min ms |", "|---|---:|---:|"]
    for name, ts in times.items():
        lines.append(f"| {name} | {statistics.median(ts) * 1e3:.1f} | {min(ts) * 1e3:.1f} |")
    text = "\n".join(lines) + "\n"
    print(f"# Compile time\n\n{text}")
    write_results(args.out, "Compile time", text)


if __name__ == "__main__":
    main()
