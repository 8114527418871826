"""``mlcbook tour``: the built-in end-to-end demo, every layer of the compiler in one run.

It writes ``relu(A @ B)`` as a tensor expression, shows the loop IR it becomes, checks that
IR against numpy with the reference interpreter on a small size, schedules it (tile, reorder,
vectorize, parallelize) while the trace records each step, compiles the naive and the
scheduled program to native code through LLVM, checks both against numpy, and prints a
table of their speed beside numpy's.

    $ mlcbook tour --size 512
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _mm_relu(n: int):
    from . import te
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    C = te.ops.matmul(A, B)
    D = te.ops.relu(C)
    return te.create_prim_func([A, B, D], name="mm_relu")


def _schedule(func, tile: int):
    from .schedule import Schedule
    sch = Schedule(func)
    mm = sch.get_block("matmul")
    i, j, k = sch.get_loops(mm)
    io, ii = sch.split(i, factors=[None, 8])
    jo, ji = sch.split(j, factors=[None, tile])
    sch.reorder(io, jo, k, ii, ji)
    sch.vectorize(ji)
    sch.parallel(io)
    relu = sch.get_block("relu")
    r0, r1 = sch.get_loops(relu)
    r1o, r1i = sch.split(r1, factors=[None, tile])
    sch.vectorize(r1i)
    sch.parallel(r0)
    return sch


def _say(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 72 - len(title)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mlcbook tour", description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512, help="matrix size n of relu(A @ B), n x n")
    parser.add_argument("--repeat", type=int, default=5, help="timing repeats (the median is shown)")
    args = parser.parse_args(argv)
    n = args.size
    if n < 16 or n % 16:
        parser.error(f"--size must be a multiple of 16 and at least 16, got {n}")

    from . import build, time_kernel, tir

    _say("1. the abstraction: relu(A @ B) as a tensor expression, lowered to loop IR")
    small = _mm_relu(16)
    print(small)

    _say("2. its meaning: the reference interpreter agrees with numpy (16 x 16)")
    rng = np.random.default_rng(0)
    a16, b16 = rng.standard_normal((2, 16, 16), dtype=np.float32)
    out16 = np.zeros((16, 16), np.float32)
    tir.interpret(small, a16, b16, out16)
    err = float(np.abs(out16 - np.maximum(a16 @ b16, 0)).max())
    print(f"max |interpreter - numpy| = {err:.2e}")
    if err > 1e-4:
        print("MISMATCH: the interpreter disagrees with numpy")
        return 1

    _say(f"3. an implementation: a schedule for n = {n}, recorded as a trace")
    func = _mm_relu(n)
    sch = _schedule(func, tile=16)
    print(sch.trace)

    _say("4. native code through LLVM, checked against numpy")
    a, b = rng.standard_normal((2, n, n), dtype=np.float32)
    expected = np.maximum(a @ b, 0)
    rows = []
    for label, prog in (("naive loop nest", func), ("scheduled", sch.mod)):
        t0 = time.perf_counter()
        kernel = build(prog)
        compile_s = time.perf_counter() - t0
        out = np.zeros((n, n), np.float32)
        kernel(a, b, out)
        err = float(np.abs(out - expected).max() / max(1.0, np.abs(expected).max()))
        ok = err < 1e-4
        print(f"{label:16s} compiled in {compile_s * 1e3:6.1f} ms; relative error {err:.1e} "
              f"{'ok' if ok else 'MISMATCH'}")
        if not ok:
            return 1
        number = 1 if label.startswith("naive") else 3
        t = time_kernel(kernel, a, b, out, number=number, repeat=args.repeat)
        rows.append((label, t.median))
    np_times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        np.maximum(a @ b, 0)
        np_times.append(time.perf_counter() - t0)
    rows.append(("numpy (a @ b, max)", float(np.median(np_times))))

    _say("5. speed (median of repeats, this machine, now)")
    flops = 2.0 * n ** 3
    base = rows[-1][1]
    print(f"{'program':22s} {'time':>10s} {'GFLOP/s':>9s} {'vs numpy':>9s}")
    for label, secs in rows:
        print(f"{label:22s} {secs * 1e3:8.2f} ms {flops / secs / 1e9:9.2f} {base / secs:8.2f}x")
    print("\n(vs numpy > 1 means faster than numpy. The scheduled version is the chapter-3 "
          "schedule; chapters 4 and 7 go further.)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
