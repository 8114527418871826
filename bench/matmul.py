"""float32 matmul, n x n x n: three loop-IR programs compiled by mlcbook beside numpy's `@`.

    python bench/matmul.py                  # sizes 256..2048, 1 and 2 threads
    python bench/matmul.py --sizes 256 512  # fewer sizes

Variants (see bench/_programs.py): the naive block program, chapter 4's schedule, the
default schedule (what ``mb.compile`` does to a matmul without tuning) and the best hand
schedule; numpy runs with the same number of BLAS threads. The naive program has
no parallel loop and takes seconds to minutes at n >= 1024: it runs once, single-threaded
(its figure is repeated in the 2-thread column).
"""

from __future__ import annotations

import argparse

import numpy as np

from _common import Case, by_key, kernel_call, measure, table

SIZES = (256, 512, 1024, 2048)
VARIANTS = ("naive", "chapter-4", "default", "best")


def cases(sizes=SIZES) -> list[Case]:
    import mlcbook as mb
    import _programs as P
    programs = {"naive": P.matmul_naive, "chapter-4": P.matmul_ch4, "default": _default,
                "best": P.matmul_best}
    rng = np.random.default_rng(0)
    out = []
    for n in sizes:
        a = rng.standard_normal((n, n)).astype("float32")
        b = rng.standard_normal((n, n)).astype("float32")
        ref = a @ b
        c_np = np.empty((n, n), "float32")
        for t in (1, 2):
            out.append(Case("matmul", (n, "numpy"), t,
                            lambda a=a, b=b, c=c_np: np.matmul(a, b, out=c)))
        for variant in VARIANTS:
            kernel = mb.build(programs[variant](n))
            c = np.zeros((n, n), "float32")
            if variant != "naive" or n <= 512:  # check the result (the slow ones: below)
                kernel(a, b, c)
                _check(variant, n, c, ref)
            call = kernel_call(kernel, a, b, c)
            if variant == "naive":
                once = n >= 1024
                out.append(Case("matmul", (n, variant), 1, call, once=once,
                                check=(c, ref) if once else None))
                continue
            for t in (1, 2):
                out.append(Case("matmul", (n, variant), t, call))
    return out


def _default(n: int):
    from mlcbook.graph.kernels.default_schedule import default_schedule
    from mlcbook.ops.legalize import legalize_call
    from mlcbook.ops.types import TensorType
    return default_schedule(legalize_call("matmul", [TensorType((n, n))] * 2))


def _check(variant, n, c, ref) -> None:
    err = float(np.abs(c - ref).max() / np.abs(ref).max())
    if err > 1e-4:
        raise SystemExit(f"matmul {variant} n={n}: wrong result (relative error {err:.1e})")


def gflops(n: int, seconds: float) -> float:
    return 2 * n**3 / seconds / 1e9


def report(all_cases: list[Case]) -> tuple[str, dict]:
    """The markdown table and the figures the targets are judged on."""
    cs = [c for c in all_cases if c.group == "matmul"]
    for c in cs:  # the naive program measured once: check its result now
        if c.check is not None:
            _check(c.key[1], c.key[0], *c.check)
    by = by_key(cs)
    rows = []
    for n in sorted({c.key[0] for c in cs}):
        for v in ("numpy",) + VARIANTS:
            cells = [f"{n}", v]
            for t in (1, 2):
                c = by.get(((n, v), t)) or by.get(((n, v), 1))
                g = gflops(n, c.median)
                ratio = g / gflops(n, by[((n, "numpy"), t)].median)
                mark = " †" if c.threads != t else ""
                runs = "" if not c.once else " (1 run)"
                cells += [f"{g:.1f}{mark}{runs}", f"{ratio:.2f}x"]
            rows.append(cells)
    text = table(["n", "program", "GFLOP/s, 1 thread", "vs numpy", "GFLOP/s, 2 threads",
                  "vs numpy"], rows)
    figures = {}
    if ((1024, "best"), 1) in by:
        g = {(v, t): gflops(1024, by[((1024, v), t)].median)
             for v in ("best", "numpy") for t in (1, 2)}
        figures = dict(best1=g["best", 1], best2=g["best", 2], numpy1=g["numpy", 1],
                       numpy2=g["numpy", 2])
    return text, figures


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    args = ap.parse_args(argv)
    cs = cases(args.sizes)
    measure(cs, args.rounds)
    print(report(cs)[0])


if __name__ == "__main__":
    main()
