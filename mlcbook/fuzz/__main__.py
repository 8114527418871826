"""``python -m mlcbook.fuzz --models N --seed S [--out DIR]``: see :mod:`mlcbook.fuzz`."""

from __future__ import annotations

import argparse
import sys

from . import fuzz


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m mlcbook.fuzz",
                                description="differential fuzzing against onnxruntime")
    p.add_argument("--models", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0,
                   help="number of the first model, to split a run into chunks (default: 0)")
    p.add_argument("--out", default="fuzz-failures",
                   help="directory for shrunk failing models (default: %(default)s)")
    p.add_argument("--large", type=float, default=0.01,
                   help="fraction of models that are long reductions (default: %(default)s)")
    args = p.parse_args(argv)
    if args.models < 0 or args.start < 0:
        p.error("--models and --start must be >= 0")

    def progress(i, failure):
        if failure is not None:
            print(f"model {i}: {failure.kind} at opt_level {failure.opt_level}: "
                  f"{failure.detail}", flush=True)
        elif (i + 1) % 50 == 0:
            print(f"{i + 1} models", flush=True)

    report = fuzz(args.models, args.seed, args.out, args.large, progress, args.start)
    print(report.summary())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
