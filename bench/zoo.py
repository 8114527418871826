"""The model-zoo architectures onnx ships (``onnx/backend/test/data/light``) compiled by
``mb.compile`` beside onnxruntime, batch 1 of 3x224x224, at 1 and 2 threads.

    python bench/zoo.py                          # all 9 models, writes bench/RESULTS_zoo.md
    python bench/zoo.py --models squeezenet --rounds 3     # a smoke run

Each model is imported from the shipped file with its conv and gemm weights drawn at random
(:func:`mlcbook.frontend.zoo.with_random_weights`: the shipped weights are one repeated
value per layer), compiled once (the compile time is import + ``mb.compile``), checked
against onnxruntime (rtol 1e-3, atol 1e-4), then timed: each latency is the median over
interleaved rounds of a full call (``exe.run``; ``session.run``). The ratio is
mlcbook / onnxruntime (lower is better).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _common import Case, by_key, machine, measure, ort_session, table

THREADS = (1, 2)


def cases(models, opt_level: int = 3) -> tuple[list[Case], dict]:
    """The cases to measure, and per model (compile seconds, kernel calls, ops)."""
    import mlcbook as mb
    from mlcbook.frontend.zoo import data_input, with_random_weights, zoo_path
    out, info = [], {}
    for name in models:
        model = with_random_weights(zoo_path(name))
        vi = data_input(model)
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feed = {vi.name: np.random.default_rng(0).standard_normal(shape).astype("float32")}
        t0 = time.perf_counter()
        exe = mb.compile(mb.from_onnx(model), opt_level=opt_level)
        info[name] = (time.perf_counter() - t0, exe.stats["calls"], exe.stats["ops"])
        got = exe.run(feed)
        got = got if isinstance(got, tuple) else (got,)
        for t in THREADS:
            sess = ort_session(model, t, quiet=True)
            for g, w in zip(got, sess.run(None, feed)):
                if not np.allclose(g, w.reshape(g.shape), rtol=1e-3, atol=1e-4):
                    raise SystemExit(f"{name}: mlcbook and onnxruntime disagree "
                                     f"(max difference {np.abs(g - w.reshape(g.shape)).max():.2e})")
            out.append(Case("zoo", (name, "onnxruntime"), t,
                            lambda s=sess, f=feed: s.run(None, f)))
            out.append(Case("zoo", (name, "mlcbook"), t, lambda e=exe, f=feed: e.run(f)))
    return out, info


def report(all_cases: list[Case], info: dict) -> str:
    by = by_key(all_cases)
    rows = []
    for name, (compile_s, calls, ops) in info.items():
        for t in THREADS:
            mb_s, ort_s = by[((name, "mlcbook"), t)].median, by[((name, "onnxruntime"), t)].median
            rows.append([name, t, f"{mb_s * 1e3:.2f}", f"{ort_s * 1e3:.2f}",
                         f"{mb_s / ort_s:.2f}x", f"{calls} / {ops}", f"{compile_s:.1f}"])
    return table(["model", "threads", "mlcbook ms", "onnxruntime ms", "ratio",
                  "kernel calls / ops", "compile s"], rows)


def main(argv=None) -> None:
    from mlcbook.frontend.zoo import ZOO
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--opt-level", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "RESULTS_zoo.md"))
    args = ap.parse_args(argv)
    cs, info = cases(tuple(args.models.split(",")), args.opt_level)
    measure(cs, args.rounds)
    text = (f"# Model zoo: mlcbook (default schedules) vs onnxruntime\n\n"
            f"Written by `python bench/zoo.py` ({args.rounds} rounds; batch 1 of 3x224x224; "
            f"each latency the median over interleaved rounds, same thread count for both; "
            f"opt_level {args.opt_level}; compile s = import + mb.compile; ratio = mlcbook / "
            f"onnxruntime, lower is better).\n\n{report(cs, info)}\n\nMachine: {machine()}.\n")
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
