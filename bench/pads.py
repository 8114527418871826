"""What the pad loops of convs cost, and what cutting them at the border saves: every kernel
of ResNet and Inception (bench/e2e.py's models) that starts by copying its input into a
zero-bordered buffer, compiled twice — the default schedule ("border": the loops above the
innermost tested one fused and parallel, that one cut at the border by lowering) and the pad
fused like any spatial block ("fused", ``options={"pad_border_loops": False}``) — each
kernel timed whole and as its pad loop alone (the same lowered code with the rest of the
body cut), and both whole models, in interleaved rounds of one process, at 1 and 2 threads.

    python bench/pads.py                     # writes bench/RESULTS_pads.md
    python bench/pads.py --rounds 3 --models resnet

The pad-alone kernel writes the same buffer the same way, but its output meets no reader,
so the conv after it may find less of it in cache: "pad alone" estimates the pad's own
cost; the pads' share is the sum over a run's calls of pad-alone time over the sum of the
kernels' times.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from _common import (Case, by_key, compiled_with, kernel_call, machine, measure, table,
                     write_results)
from e2e import model_of

THREADS = (1, 2)
KINDS = ("border", "fused")


def pad_alone(lowered):
    """The lowered PrimFunc cut to its first statement when that statement fills the
    buffer its kernel allocates first (a root-level pad block); None otherwise."""
    from mlcbook.tir.stmt import Allocate, SeqStmt
    body = lowered.body
    if not (isinstance(body, Allocate) and isinstance(body.body, SeqStmt)
            and "pad" in body.buffer.name):
        return None
    return lowered.with_body(Allocate(body.buffer, body.body.stmts[0]))


def cases(name: str) -> tuple[list[Case], dict]:
    import mlcbook as mb
    model, shape = model_of(name)
    exes = {kind: compiled_with(model, pad_border_loops=kind == "border") for kind in KINDS}
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    want = exes["fused"](x)
    np.testing.assert_allclose(exes["border"](x), want, rtol=1e-4, atol=1e-5)
    calls: dict[str, int] = {}
    for k, _ in exes["border"].plan.steps:
        calls[k] = calls.get(k, 0) + 1
    rng = np.random.default_rng(0)
    out = []
    for t in THREADS:
        out += [Case("pads", (name, "model", kind), t, lambda e=e: e(x))
                for kind, e in exes.items()]
    for kname in calls:
        progs = {}
        for kind, exe in exes.items():
            kernel = exe.kernels[kname]
            progs[(kind, "whole")] = kernel
            pad = pad_alone(kernel.lowered)
            if pad is not None:
                progs[(kind, "pad")] = mb.build(pad)
        params = exes["border"].kernels[kname].params
        args = [rng.standard_normal(p.shape).astype(p.dtype) if p.dtype.startswith("float")
                else np.zeros(p.shape, p.dtype) for p in params]
        for t in THREADS:
            out += [Case("pads", (name, kname, *key), t, kernel_call(k, *args))
                    for key, k in progs.items()]
    return out, calls


def report(cs: list[Case], name: str, calls: dict) -> str:
    by = by_key(cs)
    rows = []
    total = {(k, t): 0.0 for k in KINDS for t in THREADS}
    pads = dict(total)
    for kname, n in calls.items():
        for t in THREADS:
            for kind in KINDS:
                total[kind, t] += n * by[((name, kname, kind, "whole"), t)].median
            if ((name, kname, "border", "pad"), t) not in by:
                continue
            us = {(kind, part): by[((name, kname, kind, part), t)].median * 1e6
                  for kind in KINDS for part in ("whole", "pad")}
            for kind in KINDS:
                pads[kind, t] += n * us[kind, "pad"] / 1e6
            rows.append([kname, n, t, f"{us['fused', 'whole']:.1f}", f"{us['fused', 'pad']:.1f}",
                         f"{us['border', 'whole']:.1f}", f"{us['border', 'pad']:.1f}",
                         f"{us['border', 'pad'] / us['fused', 'pad']:.2f}"])
    for t in THREADS:
        f, b = total["fused", t], total["border", t]
        rows.append([f"**all {len(calls)} kernels**", sum(calls.values()), t,
                     f"{f * 1e6:.1f}", f"{pads['fused', t] * 1e6:.1f} ({pads['fused', t] / f:.1%})",
                     f"{b * 1e6:.1f}", f"{pads['border', t] * 1e6:.1f} ({pads['border', t] / b:.1%})",
                     f"{pads['border', t] / pads['fused', t]:.2f}"])
    for t in THREADS:
        f, b = (by[((name, "model", kind), t)].median for kind in ("fused", "border"))
        rows.append(["**whole model**", "", t, f"{f * 1e6:.1f}", "", f"{b * 1e6:.1f}", "",
                     f"{b / f:.3f}"])
    return table(["kernel", "calls", "threads", "fused: whole us", "fused: pad alone us",
                  "border: whole us", "border: pad alone us", "border / fused"], rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--models", default="resnet,inception")
    ap.add_argument("-o", "--output", default=str(Path(__file__).with_name("RESULTS_pads.md")))
    args = ap.parse_args(argv)
    title = "Pad loops of convs: fused vs cut at the border"
    parts = [f"{args.rounds} interleaved rounds, median us per call.\n", machine() + "\n"]
    for name in args.models.split(","):
        cs, calls = cases(name)
        measure(cs, args.rounds)
        parts += [f"## {name}\n", report(cs, name, calls) + "\n"]
        print(parts[-2] + parts[-1])
    write_results(args.output, title, "\n".join(parts))


if __name__ == "__main__":
    main()
