"""Training: time per step of mlcbook's compiled training step vs the same step in numpy.

    python bench/train.py               # 784-512-256-10 MLP, batch 64, 1 and 2 threads
    python bench/train.py --rounds 15   # more rounds on a busy machine

The step: forward, softmax cross-entropy, backward, and momentum SGD (lr 0.01, momentum
0.9) updating parameters and momentum buffers in place. mlcbook runs it as the kernels of
``mb.train.compile_step`` (default schedules, no tuning); numpy as float32 array calls on
its BLAS, written the way one would by hand (in-place updates, no temporaries kept). Both
start from the same weights and are checked to give the same losses for three steps before
timing. Each figure is the median over interleaved rounds of one run (``_common.measure``);
the ratio is numpy / mlcbook (above 1: mlcbook is faster). The issue's target is 1.5x.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _common import Case, by_key, machine, measure, table, write_results

SIZES, BATCH, LR, MOMENTUM = (784, 512, 256, 10), 64, 0.01, 0.9
THREADS = (1, 2)
TARGET = 1.5


class NumpyMLP:
    """The same training step in float32 numpy."""

    def __init__(self, params: dict):
        self.p = {k: np.array(v, np.float32) for k, v in params.items()}
        self.buf = {k: np.zeros_like(v) for k, v in self.p.items()}
        self.layers = len(SIZES) - 1

    def step(self, x, y) -> float:
        p, acts, h = self.p, [], x
        for k in range(1, self.layers + 1):
            acts.append(h)
            h = h @ p[f"fc{k}.weight"].T
            h += p[f"fc{k}.bias"]
            if k < self.layers:
                np.maximum(h, 0, out=h)
        z = h - h.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        rows = np.arange(len(y))
        loss = float(np.mean(np.log(s[:, 0]) - z[rows, y]))
        g = e / s
        g[rows, y] -= 1
        g /= len(y)
        for k in range(self.layers, 0, -1):
            a, w = acts[k - 1], p[f"fc{k}.weight"]
            gw, gb = g.T @ a, g.sum(axis=0)
            if k > 1:
                g = g @ w
                g *= a > 0
            for name, grad in ((f"fc{k}.weight", gw), (f"fc{k}.bias", gb)):
                buf = self.buf[name]
                buf *= MOMENTUM
                buf += grad
                p[name] -= LR * buf
        return loss


def cases() -> tuple[list[Case], dict]:
    import mlcbook as mb
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    model = mb.train.mlp(SIZES, batch=BATCH, seed=0)
    t0 = time.perf_counter()
    trainer = mb.train.compile_step(model, "cross_entropy",
                                    mb.train.SGD(lr=LR, momentum=MOMENTUM))
    info = {"compile_s": time.perf_counter() - t0, "calls": len(trainer.executable.plan.steps)}
    ref = NumpyMLP(trainer.params)
    for _ in range(3):
        got, want = trainer.step(x, y), ref.step(x, y)
        if not np.isclose(got, want, rtol=1e-4):
            raise SystemExit(f"mlcbook and numpy disagree: loss {got} vs {want}")
    out = []
    for t in THREADS:
        out.append(Case("train", "numpy", t, lambda r=ref: r.step(x, y)))
        out.append(Case("train", "mlcbook", t, lambda tr=trainer: tr.step(x, y)))
    return out, info


def report(all_cases: list[Case], info: dict) -> str:
    by = by_key(all_cases)
    rows = []
    for t in THREADS:
        mb_s, np_s = by[("mlcbook", t)].median, by[("numpy", t)].median
        ratio = np_s / mb_s
        rows.append([t, f"{mb_s * 1e3:.2f}", f"{np_s * 1e3:.2f}", f"{ratio:.2f}x",
                     "met" if ratio >= TARGET else "MISSED"])
    return table(["threads", "mlcbook ms/step", "numpy ms/step", "numpy / mlcbook",
                  f"target {TARGET}x"], rows) + \
        f"\n\n{info['calls']} kernel calls per step; compiled in {info['compile_s']:.1f} s."


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_train.md")))
    args = ap.parse_args(argv)
    cs, info = cases()
    measure(cs, args.rounds)
    title = "Training step: mlcbook vs numpy"
    text = (f"Written by `python bench/train.py` ({args.rounds} rounds; each figure the median "
            f"over interleaved rounds, same thread count for both). MLP "
            f"{'-'.join(map(str, SIZES))}, batch {BATCH}, momentum SGD.\n\n"
            f"{report(cs, info)}\n\nMachine: {machine()}\n")
    print(f"# {title}\n\n{text}")
    write_results(args.out, title, text)


if __name__ == "__main__":
    main()
