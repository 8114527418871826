"""The model-zoo architectures onnx ships (``onnx/backend/test/data/light``) compiled by
``mb.compile`` beside onnxruntime, batch 1 of 3x224x224, at 1 and 2 threads.

    python bench/zoo.py                          # all 9 models, writes bench/RESULTS_zoo.md
    python bench/zoo.py --models squeezenet --rounds 1 --out /tmp/zoo.md   # a smoke run

Each model is imported from the shipped file with its conv and gemm weights drawn at random
(:func:`mlcbook.frontend.zoo.with_random_weights`: the shipped weights are one repeated
value per layer), compiled once (the compile time is import + ``mb.compile``), checked
against onnxruntime (rtol 1e-3, atol 1e-4), then timed: each latency is the median over
interleaved rounds of a full call (``exe.run``; ``session.run``). The ratio is
mlcbook / onnxruntime (lower is better).

On a host with AVX-512 each model is also compiled for ``-mcpu=x86-64-v3`` (the AVX2 code a
laptop runs) and measured in the same interleaved rounds: the "AVX2 code" columns, its ratio
to onnxruntime beside the native code's. ``--no-avx2`` leaves it out.

The results file keeps one section per CPU (``_common.write_results``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _common import (AVX2_TARGET, add_avx2_argument, by_key, Case, has_avx512, machine,
                     measure, ort_session, table, write_results)

THREADS = (1, 2)
#: the contender of the same model built for AVX2 (``-mcpu=x86-64-v3``) on an AVX-512 host
AVX2 = "mlcbook AVX2 code"


def _check(name: str, got, want) -> None:
    for g, w in zip(got, want):
        if not np.allclose(g, w.reshape(g.shape), rtol=1e-3, atol=1e-4):
            raise SystemExit(f"{name}: mlcbook and onnxruntime disagree "
                             f"(max difference {np.abs(g - w.reshape(g.shape)).max():.2e})")


def cases(models, opt_level: int = 3, avx2: bool = False) -> tuple[list[Case], dict]:
    """The cases to measure, and per model (compile seconds, kernel calls, ops); with ``avx2``
    also each model compiled for :data:`_common.AVX2_TARGET` (contender :data:`AVX2`)."""
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
        exes = {"mlcbook": exe}
        if avx2:
            exes[AVX2] = mb.compile(mb.from_onnx(model), target=AVX2_TARGET,
                                    opt_level=opt_level)
        for t in THREADS:
            sess = ort_session(model, t, quiet=True)
            want = sess.run(None, feed)
            out.append(Case("zoo", (name, "onnxruntime"), t,
                            lambda s=sess, f=feed: s.run(None, f)))
            for contender, e in exes.items():
                got = e.run(feed)
                _check(f"{name} ({contender})", got if isinstance(got, tuple) else (got,), want)
                out.append(Case("zoo", (name, contender), t, lambda e=e, f=feed: e.run(f)))
    return out, info


def report(all_cases: list[Case], info: dict) -> str:
    by = by_key(all_cases)
    avx2 = any(k[0][1] == AVX2 for k in by)
    rows = []
    for name, (compile_s, calls, ops) in info.items():
        for t in THREADS:
            mb_s, ort_s = by[((name, "mlcbook"), t)].median, by[((name, "onnxruntime"), t)].median
            row = [name, t, f"{mb_s * 1e3:.2f}", f"{ort_s * 1e3:.2f}", f"{mb_s / ort_s:.2f}x"]
            if avx2:
                avx2_s = by[((name, AVX2), t)].median
                row += [f"{avx2_s * 1e3:.2f}", f"{avx2_s / ort_s:.2f}x"]
            rows.append(row + [f"{calls} / {ops}", f"{compile_s:.1f}"])
    headers = ["model", "threads", "mlcbook ms", "onnxruntime ms", "ratio"]
    if avx2:
        headers += ["AVX2 code ms", "AVX2 code ratio"]
    return table(headers + ["kernel calls / ops", "compile s"], rows)


def main(argv=None) -> None:
    from mlcbook.frontend.zoo import ZOO
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--models", default=",".join(ZOO))
    ap.add_argument("--opt-level", type=int, default=3)
    add_avx2_argument(ap, "models")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "RESULTS_zoo.md"),
                    help="the results file: this CPU's section of it is replaced, other "
                    "CPUs' are kept")
    args = ap.parse_args(argv)
    avx2 = not args.no_avx2 and has_avx512()
    cs, info = cases(tuple(args.models.split(",")), args.opt_level, avx2)
    measure(cs, args.rounds)
    title = "Model zoo: mlcbook (default schedules) vs onnxruntime"
    text = (f"Written by `python bench/zoo.py` ({args.rounds} rounds; batch 1 of 3x224x224; "
            f"each latency the median over interleaved rounds, same thread count for both; "
            f"opt_level {args.opt_level}; compile s = import + mb.compile; ratio = mlcbook / "
            f"onnxruntime, lower is better"
            + (f"; AVX2 code: the same models compiled for `{AVX2_TARGET}`, measured in the "
               "same rounds" if avx2 else "")
            + f").\n\n{report(cs, info)}\n\nMachine: {machine()}\n")
    print(f"# {title}\n\n{text}")
    write_results(args.out, title, text)


if __name__ == "__main__":
    main()
