"""Time the interpreter on a 128x128x128 float32 matmul (with an init block), beside numpy's
time for the same matmul, and the reference evaluator beside the interpreter on a 32x32x32
one (the evaluator walks the tree: it is for small shapes); write the tables to
bench/RESULTS_interpreter.md.

    python bench/interpreter.py            # 5 runs, median
    python bench/interpreter.py --n 64 --eval-n 16 --repeats 3
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from _common import machine, write_results

import mlcbook as mb
from mlcbook.tir import (Block, BlockRealize, Buffer, BufferRegion, BufferStore, For, IterVar,
                         PrimFunc, Var, const, root_block_realize)


def matmul_func(n: int) -> PrimFunc:
    """C[i, j] = sum_k A[i, k] * B[k, j] as one block with an init, inside i, j, k loops."""
    A, B, C = Buffer("A", (n, n)), Buffer("B", (n, n)), Buffer("C", (n, n))
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    block = Block(
        "C", (IterVar(vi, n), IterVar(vj, n), IterVar(vk, n, "reduce")),
        (BufferRegion.point(A, (vi, vk)), BufferRegion.point(B, (vk, vj))),
        (BufferRegion.point(C, (vi, vj)),),
        BufferStore(C, C[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
        init=BufferStore(C, const(0.0, "float32"), (vi, vj)))
    body = For(i, n, For(j, n, For(k, n, BlockRealize((i, j, k), True, block))))
    return PrimFunc("matmul", (A, B, C), root_block_realize(body))


def _median_time(fn, repeats: int, number: int = 1) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=128)
    ap.add_argument("--eval-n", type=int, default=32, help="matmul size for the evaluator")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_interpreter.md")))
    args = ap.parse_args(argv)
    n = args.n

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype("float32")
    b = rng.standard_normal((n, n)).astype("float32")
    c = np.empty((n, n), "float32")
    func = matmul_func(n)

    t0 = time.perf_counter()
    mb.tir.interpret(func, a, b, c)  # the first call translates and compiles
    first = time.perf_counter() - t0
    reference = a.astype("float64") @ b.astype("float64")
    rel_err = float(np.max(np.abs(c - reference)) / np.max(np.abs(reference)))

    interp = _median_time(lambda: mb.tir.interpret(func, a, b, c), args.repeats)
    numpy_t = _median_time(lambda: np.matmul(a, b, out=c), args.repeats, number=200)

    m = args.eval_n
    small = matmul_func(m)
    sa, sb = a[:m, :m].copy(), b[:m, :m].copy()
    sc, sc_ref = np.empty((m, m), "float32"), np.empty((m, m), "float32")
    mb.tir.interpret(small, sa, sb, sc)  # translate once, outside the timing
    evaluate_t, interp_small = [], []
    for _ in range(args.repeats):  # interleaved, so both see the same machine
        evaluate_t.append(_median_time(lambda: mb.tir.evaluate(small, sa, sb, sc_ref), 1))
        interp_small.append(_median_time(lambda: mb.tir.interpret(small, sa, sb, sc), 1))
    evaluate_t, interp_small = statistics.median(evaluate_t), statistics.median(interp_small)
    same_bits = bool(np.array_equal(sc, sc_ref))

    title = "Interpreter: float32 matmul (one block with init)"
    table = "\n".join([
        f"Command: `python bench/interpreter.py --n {n} --repeats {args.repeats}` "
        f"({n}x{n}x{n}; median of {args.repeats} runs; numpy: median of {args.repeats} x 200 "
        "calls).",
        "",
        f"Machine: {machine()}",
        "",
        "| what | time (s) | ratio to numpy |",
        "|---|---:|---:|",
        f"| mb.tir.interpret (cached translation) | {interp:.4f} | {interp / numpy_t:,.0f}x |",
        f"| mb.tir.interpret, first call (translate + compile + run) | {first:.4f} | "
        f"{first / numpy_t:,.0f}x |",
        f"| numpy `a @ b` | {numpy_t:.6f} | 1x |",
        "",
        f"Reference evaluator on a {m}x{m}x{m} matmul (same runs, interleaved):",
        "",
        "| what | time (s) | ratio to the interpreter |",
        "|---|---:|---:|",
        f"| mb.tir.evaluate (tree walk, every access checked) | {evaluate_t:.4f} | "
        f"{evaluate_t / interp_small:,.1f}x |",
        f"| mb.tir.interpret (cached translation) | {interp_small:.4f} | 1x |",
        "",
        f"Evaluator and interpreter results identical bit for bit: {same_bits}.",
        "",
        f"Max error of the interpreter vs float64 numpy, relative to max |C|: {rel_err:.1e} "
        "(the interpreter computes each step in float64 and rounds every store to float32).",
        "",
    ])
    write_results(args.out, title, table)
    print(f"# {title}\n\n{table}")
    return table


if __name__ == "__main__":
    main()
