"""What the pad loops of convs cost: every kernel of ResNet and Inception (bench/e2e.py's
models) that starts by copying its input into a zero-bordered buffer, timed whole beside a
kernel made of that pad loop alone (the same lowered code with the rest of the body cut),
in interleaved rounds of one process, at 1 and 2 threads; then the pads' share of the model
(the sum over the run's calls of pad-alone time, over the sum of the kernels' times).

    python bench/pads.py                     # writes bench/RESULTS_pads.md
    python bench/pads.py --rounds 3 --models resnet

The pad-alone kernel writes the same buffer the same way, but its output then meets no
reader, and the conv after it no longer finds the padded tensor in cache: the difference
"whole - rest" is not measured, only "pad alone", an estimate of the pad's own cost.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from _common import Case, by_key, kernel_call, machine, measure, table
from e2e import model_of

THREADS = (1, 2)


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
    exe = mb.compile(mb.from_onnx(model))
    calls: dict[str, int] = {}
    for k, _ in exe.plan.steps:
        calls[k] = calls.get(k, 0) + 1
    rng = np.random.default_rng(0)
    out = []
    for kname, n in calls.items():
        kernel = exe.kernels[kname]
        args = [rng.standard_normal(p.shape).astype(p.dtype) if p.dtype.startswith("float")
                else np.zeros(p.shape, p.dtype) for p in kernel.params]
        pad = pad_alone(kernel.lowered)
        progs = {"whole": kernel}
        if pad is not None:
            progs["pad"] = mb.build(pad)
        for t in THREADS:
            for kind, k in progs.items():
                out.append(Case("pads", (name, kname, kind), t, kernel_call(k, *args)))
    return out, calls


def report(cs: list[Case], name: str, calls: dict) -> str:
    by = by_key(cs)
    rows, total, pads = [], {t: 0.0 for t in THREADS}, {t: 0.0 for t in THREADS}
    for kname, n in calls.items():
        for t in THREADS:
            whole = by[((name, kname, "whole"), t)].median
            total[t] += n * whole
            pad = by.get(((name, kname, "pad"), t))
            if pad is None:
                continue
            pads[t] += n * pad.median
            rows.append([kname, n, t, f"{whole * 1e6:.1f}", f"{pad.median * 1e6:.1f}",
                         f"{pad.median / whole:.1%}"])
    rows += [[f"**all {len(calls)} kernels**", sum(calls.values()), t,
              f"{total[t] * 1e6:.1f}", f"{pads[t] * 1e6:.1f}", f"{pads[t] / total[t]:.1%}"]
             for t in THREADS]
    return table(["kernel", "calls", "threads", "whole us", "pad alone us", "pad share"], rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--models", default="resnet,inception")
    ap.add_argument("-o", "--output", default=str(Path(__file__).with_name("RESULTS_pads.md")))
    args = ap.parse_args(argv)
    parts = [f"# Pad loops of convs ({args.rounds} interleaved rounds, median us per call)\n",
             machine() + "\n"]
    for name in args.models.split(","):
        cs, calls = cases(name)
        measure(cs, args.rounds)
        parts += [f"## {name}\n", report(cs, name, calls) + "\n"]
        print(parts[-2] + parts[-1])
    Path(args.output).write_text("\n".join(parts))


if __name__ == "__main__":
    main()
