"""Fused elementwise chain: y = relu(x * a + b) over 16M float32, one pass (mlcbook) vs
numpy's three passes (multiply, add, maximum into a preallocated output).

    python bench/elementwise.py

GB/s counts the bytes the chain must move at least once: x read and y written (8 bytes per
element), for both, so the ratio is the ratio of times. numpy's ufuncs are single-threaded.
"""

from __future__ import annotations

import argparse

import numpy as np

from _common import Case, by_key, kernel_call, measure, table

N = 16 * 2**20


def cases() -> list[Case]:
    import mlcbook as mb
    import _programs as P
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N).astype("float32")
    a, b = np.array([1.5], "float32"), np.array([-0.25], "float32")
    y = np.empty(N, "float32")

    def numpy_three_passes():
        np.multiply(x, a[0], out=y)
        np.add(y, b[0], out=y)
        np.maximum(y, 0, out=y)

    numpy_three_passes()
    kernel = mb.build(P.fused_relu(N))
    out = kernel(x, a, b)
    # x*a + b is one fused multiply-add (one rounding) in the kernel, two in numpy
    if not np.allclose(out, y, rtol=1e-6, atol=1e-6):
        raise SystemExit("fused kernel gives a different result from numpy")
    call = kernel_call(kernel, x, a, b, out)
    return [Case("elementwise", (w,), t, f) for t in (1, 2)
            for w, f in (("numpy, 3 passes", numpy_three_passes), ("mlcbook fused", call))]


def report(all_cases: list[Case]) -> tuple[str, dict]:
    by = by_key([c for c in all_cases if c.group == "elementwise"])
    gbs = lambda s: 8 * N / s / 1e9  # noqa: E731
    rows = []
    for what in ("numpy, 3 passes", "mlcbook fused"):
        cells = [what]
        for t in (1, 2):
            s = by[((what,), t)].median
            cells += [f"{gbs(s):.1f}", f"{1e3 * s:.2f}",
                      f"{by[(('numpy, 3 passes',), t)].median / s:.2f}x"]
        rows.append(cells)
    text = table(["program", "GB/s, 1 thread", "ms", "speed-up vs numpy", "GB/s, 2 threads",
                  "ms", "speed-up vs numpy"], rows)
    ratio = by[(("numpy, 3 passes",), 1)].median / by[(("mlcbook fused",), 1)].median
    return text, dict(fused_ratio=ratio)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    cs = cases()
    measure(cs, args.rounds)
    print(report(cs)[0])


if __name__ == "__main__":
    main()
