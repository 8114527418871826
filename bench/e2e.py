"""Whole models: ``mb.compile`` (default schedules, no tuning) beside onnxruntime, same thread count.

    python bench/e2e.py                 # MLP and CNN, 1 and 2 threads, prints a table
    python bench/e2e.py --threads 2     # one thread count

Models (built by mlcbook.frontend.examples, fixed random weights):

* MLP: 784-512-256-10 (Gemm + ReLU), batch 64;
* CNN: two stages of 3x3 conv (padding 1) + ReLU + 2x2 max pool, then a linear layer,
  batch 8 of 1x28x28.

Each figure is the median latency of a full call (``exe(x)`` including its input checks;
``session.run``) from the same run; the ratio is mlcbook / onnxruntime (lower is better).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from _common import check_threads, emit, machine, run_worker, table

MODELS = ("mlp", "cnn")


def _model(name: str):
    from mlcbook.frontend import examples
    if name == "mlp":
        return examples.mlp(batch=64), (64, 784)
    return examples.cnn(batch=8), (8, 1, 28, 28)


def measure(threads: int, repeat: int) -> list[dict]:
    import onnxruntime as ort

    import mlcbook as mb
    rows = []
    for name in MODELS:
        model, shape = _model(name)
        x = np.random.default_rng(0).standard_normal(shape).astype("float32")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        t0 = time.perf_counter()
        exe = mb.compile(mb.from_onnx(model))
        compile_s = time.perf_counter() - t0
        want = sess.run(None, {"input": x})[0]
        got = exe(x)
        if not np.allclose(got, want, rtol=1e-4, atol=1e-5):
            raise SystemExit(f"{name}: mlcbook and onnxruntime disagree "
                             f"(max difference {np.abs(got - want).max():.2e})")
        t_ort = mb.time_kernel(lambda: sess.run(None, {"input": x}), repeat=repeat)
        t_mb = mb.time_kernel(lambda: exe(x), repeat=repeat)
        rows.append(dict(model=name, threads=threads, mlcbook=t_mb.median, ort=t_ort.median,
                         compile=compile_s, kernels=exe.stats["calls"]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    if args.worker:
        check_threads(args.threads[0])
        emit(measure(args.threads[0], args.repeat))
        return
    rows = []
    for n in args.threads:
        rows += run_worker("e2e.py", n, "--repeat", str(args.repeat))
    print("# End to end: mlcbook (default schedules) vs onnxruntime\n")
    print(table(["model", "threads", "mlcbook ms", "onnxruntime ms", "ratio", "kernel calls",
                 "compile s"],
                [[r["model"], r["threads"], f"{r['mlcbook'] * 1e3:.3f}", f"{r['ort'] * 1e3:.3f}",
                  f"{r['mlcbook'] / r['ort']:.1f}x", r["kernels"], f"{r['compile']:.2f}"]
                 for r in rows]))
    print(f"\nMachine: {machine()}.")


if __name__ == "__main__":
    main()
