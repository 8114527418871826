"""ResNet-style 3x3 convolution, 64 -> 64 channels on 56x56 (batch 1, padding 1), mlcbook's
hand schedule vs numpy im2col (pad + sliding-window copy) + matmul.

    python bench/conv2d.py
"""

from __future__ import annotations

import argparse

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from _common import Case, by_key, kernel_call, measure, table

C = F = 64
H = W = 56
FLOP = 2 * F * C * 9 * H * W


def im2col_conv(x, w, out):
    """numpy reference: pad, gather 3x3 windows into a (C*9, H*W) matrix, one matmul."""
    xp = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    cols = sliding_window_view(xp, (3, 3), axis=(1, 2))          # C, H, W, 3, 3
    cols = np.ascontiguousarray(cols.transpose(0, 3, 4, 1, 2)).reshape(C * 9, H * W)
    np.matmul(w.reshape(F, C * 9), cols, out=out.reshape(F, H * W))


def cases() -> list[Case]:
    import mlcbook as mb
    import _programs as P
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, C, H, W)).astype("float32")
    w = rng.standard_normal((F, C, 3, 3)).astype("float32")
    ref = np.empty((1, F, H, W), "float32")
    im2col_conv(x, w, ref)
    kernel = mb.build(P.conv2d_best(C, F, H, W))
    out = kernel(x, w)
    err = float(np.abs(out - ref).max() / np.abs(ref).max())
    if err > 1e-4:
        raise SystemExit(f"conv2d: wrong result (relative error {err:.1e})")
    call = kernel_call(kernel, x, w, out)
    return [Case("conv2d", (what,), t, f) for t in (1, 2)
            for what, f in (("numpy im2col + matmul", lambda: im2col_conv(x, w, ref)),
                            ("mlcbook hand schedule", call))]


def report(all_cases: list[Case]) -> tuple[str, dict]:
    by = by_key([c for c in all_cases if c.group == "conv2d"])
    rows = []
    for what in ("numpy im2col + matmul", "mlcbook hand schedule"):
        cells = [what]
        for t in (1, 2):
            s = by[((what,), t)].median
            cells += [f"{FLOP / s / 1e9:.1f}", f"{1e3 * s:.2f}",
                      f"{by[(('numpy im2col + matmul',), t)].median / s:.2f}x"]
        rows.append(cells)
    return table(["program", "GFLOP/s, 1 thread", "ms", "vs numpy", "GFLOP/s, 2 threads", "ms",
                  "vs numpy"], rows), {}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    cs = cases()
    measure(cs, args.rounds)
    print(report(cs)[0])


if __name__ == "__main__":
    main()
