"""Long reductions: how far a compiled mean is from float64, beside numpy and onnxruntime,
and how long it takes.

    python bench/reduction_precision.py     # prints a table, writes bench/RESULTS_reduction.md

A float32 mean over 2M values (one row), one down the 128k rows of 16 columns, and a
LayerNormalization over rows of 64k values. The default schedule sums a reduction of more
than 8k terms in two levels (blocks of about sqrt(n) terms, then the block sums), which
``--one-level`` turns off for the comparison.
Errors are relative to the same computation in float64; times are medians of interleaved
rounds (mlcbook at the pool's default thread count; onnxruntime with its defaults).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
from _common import machine, ort_session, write_results
from onnx import TensorProto, helper

import mlcbook as mb


def _model(op: str, shape, axes):
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))]
    inits = []
    if op == "ReduceMean":
        node = helper.make_node("ReduceMean", ["x"], ["y"], axes=list(axes), keepdims=0)
        out = [d for i, d in enumerate(shape) if i not in axes]
    else:
        scale = helper.make_tensor("s", TensorProto.FLOAT, [shape[-1]], [1.0] * shape[-1])
        bias = helper.make_tensor("b", TensorProto.FLOAT, [shape[-1]], [0.0] * shape[-1])
        inits = [scale, bias]
        node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1)
        out = list(shape)
    g = helper.make_graph([node], "g", inputs,
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _float64(op, x, axes):
    x = x.astype(np.float64)
    if op == "ReduceMean":
        return x.mean(axis=axes)
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--one-level", action="store_true",
                    help="compile without the two-level sums (the old default schedule)")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_reduction.md")))
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    cases = {"ReduceMean 1x2M": ("ReduceMean", (1, 2_000_000), (1,)),
             "ReduceMean 128kx16 down columns": ("ReduceMean", (131_072, 16), (0,)),
             "LayerNorm 4x64k": ("LayerNormalization", (4, 65_536), (-1,))}
    lines = [f"{machine()}\n",
             f"two-level sums: {'off' if args.one_level else 'on'}\n",
             "| case | mlcbook rel. err | onnxruntime rel. err | numpy f32 rel. err "
             "| mlcbook ms | onnxruntime ms | ratio |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, (op, shape, axes) in cases.items():
        model = _model(op, shape, axes)
        x = (rng.random(shape) + 1).astype("float32")
        want = _float64(op, x, axes)
        exe = mb.compile(mb.from_onnx(model), options={"two_level_sums": not args.one_level})
        sess = ort_session(model)
        run_ort = lambda: sess.run(None, {"x": x})[0]  # noqa: E731
        err = lambda y: float(np.max(np.abs(y - want)) / np.max(np.abs(want)))  # noqa: E731
        np_f32 = x.mean(axis=axes) if op == "ReduceMean" else None
        times = {"mb": [], "ort": []}
        for _ in range(args.rounds):
            for key, fn in (("mb", lambda: exe(x)), ("ort", run_ort)):
                t0 = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t0)
        mb_ms, ort_ms = (statistics.median(times[k]) * 1e3 for k in ("mb", "ort"))
        lines.append(f"| {name} | {err(exe(x)):.1e} | {err(run_ort()):.1e} | "
                     f"{err(np_f32) if np_f32 is not None else float('nan'):.1e} | "
                     f"{mb_ms:.2f} | {ort_ms:.2f} | {mb_ms / ort_ms:.2f} |")
    text = "\n".join(lines) + "\n"
    print(f"# Long reductions\n\n{text}")
    write_results(args.out, "Long reductions", text)


if __name__ == "__main__":
    main()
