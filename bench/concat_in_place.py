"""Concat without copies, timed: Inception with each concat's inputs written straight into
its output (mb.compile's default, ``mlcbook.graph.memory.memory_plan.elide_concats``) beside
the same model compiled with the copying concat kernels (``options={"concat_in_place":
False}``), and onnxruntime, in interleaved rounds of one process, at 1 and 2 threads.

    python bench/concat_in_place.py                # writes bench/RESULTS_concat_in_place.md
    python bench/concat_in_place.py --rounds 15    # more rounds on a busy machine

Why both: eliding the copy saves the concat kernels (5 calls), but the copy also left the
concatenated tensor in cache for the kernel that reads it next; written piece by piece by the
branches, parts of it may have left the cache by then. Per-kernel profiles on a loaded
machine showed both effects (the concats' ~0.26 ms gone at 1 thread; the stage max pool
after the second module 2x slower); this script measures the sum.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from _common import (Case, by_key, compiled_with, machine, measure, ort_session, table,
                     write_results)
from e2e import model_of

THREADS = (1, 2)
KINDS = ("in place", "copied")


def cases(name: str) -> tuple[list[Case], dict]:
    model, shape = model_of(name)
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    exes = {kind: compiled_with(model, concat_in_place=kind == "in place") for kind in KINDS}
    calls = {kind: e.stats["calls"] for kind, e in exes.items()}
    if calls["in place"] >= calls["copied"]:
        raise SystemExit(f"{name}: no concat was elided ({calls}); nothing to compare")
    out = []
    for t in THREADS:
        sess = ort_session(model, t)
        want = sess.run(None, {"input": x})[0]
        for kind, exe in exes.items():
            if not np.allclose(exe(x), want, rtol=1e-3, atol=1e-4):
                raise SystemExit(f"{name} ({kind}): mlcbook and onnxruntime disagree")
            out.append(Case("concat", (name, kind), t, lambda e=exe, x=x: e(x)))
        out.append(Case("concat", (name, "onnxruntime"), t,
                        lambda s=sess, x=x: s.run(None, {"input": x})))
    return out, calls


def report(cs: list[Case], name: str, calls: dict) -> str:
    by = by_key(cs)
    rows = []
    for t in THREADS:
        inp, cop, ort = (by[((name, k), t)].median for k in (*KINDS, "onnxruntime"))
        rows.append([name, t, f"{inp * 1e3:.3f}", f"{cop * 1e3:.3f}", f"{ort * 1e3:.3f}",
                     f"{inp / cop:.3f}", f"{inp / ort:.2f}x", f"{cop / ort:.2f}x"])
    return table(["model", "threads", f"in place ms ({calls['in place']} calls)",
                  f"copied ms ({calls['copied']} calls)", "onnxruntime ms",
                  "in place / copied", "in place / onnxruntime", "copied / onnxruntime"], rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--model", default="inception")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent
                                         / "RESULTS_concat_in_place.md"),
                    help="the results file: this CPU's section of it is replaced, other "
                    "CPUs' are kept")
    args = ap.parse_args(argv)
    cs, calls = cases(args.model)
    measure(cs, args.rounds)
    title = "Concat in place vs copied"
    text = (f"Written by `python bench/concat_in_place.py` "
            f"({args.rounds} rounds; each figure the median over interleaved rounds; lower is "
            f"better).\n\n{report(cs, args.model, calls)}\n\nMachine: {machine()}\n")
    print(f"# {title}\n\n{text}")
    write_results(args.out, title, text)


if __name__ == "__main__":
    main()
