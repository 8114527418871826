"""Run every native-code benchmark and write bench/RESULTS.md from this run.

    pip install -e '.[bench]'             # threadpoolctl, to pin numpy's BLAS threads
    python bench/run_all.py               # the full run (~5 min; the naive 2048 alone ~2.5)
    python bench/run_all.py --quick       # sizes 256..1024, fewer rounds: a quick look

All cases (every program at 1 and 2 threads, numpy beside each) are measured in
interleaved rounds and each figure is the median over the rounds, so that a busy moment on
the shared machine costs every program alike.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conv2d  # noqa: E402
import elementwise  # noqa: E402
import matmul  # noqa: E402
from _common import machine, measure, write_results  # noqa: E402


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")))
    args = ap.parse_args(argv)
    sizes = (256, 512, 1024) if args.quick else matmul.SIZES
    rounds = args.rounds or (3 if args.quick else 9)
    t0 = time.time()
    cases = matmul.cases(sizes) + elementwise.cases() + conv2d.cases()
    measure(cases, rounds)
    mm_text, mm = matmul.report(cases)
    ew_text, ew = elementwise.report(cases)
    cv_text, _ = conv2d.report(cases)
    minutes = (time.time() - t0) / 60

    targets = []
    if mm:
        r1 = mm["best1"] / mm["numpy1"]
        r2 = mm["best2"] / mm["best1"]
        targets += [
            f"- best schedule, 1024, 1 thread: {mm['best1']:.1f} GFLOP/s = {r1:.2f}x numpy "
            f"({mm['numpy1']:.1f}); target >= 0.8x: **{_verdict(r1 >= 0.8)}**",
            f"- best schedule, 1024, 2 threads: {mm['best2']:.1f} GFLOP/s = {r2:.2f}x its "
            f"own single-thread speed (numpy: {mm['numpy2'] / mm['numpy1']:.2f}x); "
            f"target >= 1.8x: **{_verdict(r2 >= 1.8)}**"]
    targets.append(f"- fused elementwise, 1 thread: {ew['fused_ratio']:.2f}x numpy's three "
                   f"passes; target >= 2x: **{_verdict(ew['fused_ratio'] >= 2)}**")
    cmd = "python bench/run_all.py" + (" --quick" if args.quick else "")
    title = "Native code benchmarks"
    text = f"""Written by `{cmd}` ({minutes:.1f} min, {rounds} rounds).

Machine: {machine()}

Every figure is the median over interleaved rounds of one run (each round measures every
case once), with numpy's BLAS pinned to the same thread count as mlcbook's thread pool.
The machine is shared with other work: compare ratios from one run, not absolute figures
across runs. The programs are in `bench/_programs.py`.

## Targets (issue 5)

{chr(10).join(targets)}

## fp32 matmul (n x n x n)

{mm_text}

† the naive program has no parallel loop: its single-thread figure is repeated.

## Fused elementwise: relu(x * a + b), 16M float32

{ew_text}

GB/s counts 8 bytes per element (x read, y written) for both programs.

## conv2d 3x3, 64 -> 64 channels, 56x56, padding 1

{cv_text}
"""
    write_results(args.out, title, text)
    print(f"# {title}\n\n{text}")
    return text


if __name__ == "__main__":
    main()
