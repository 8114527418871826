"""``mb.fuzz``: differential fuzzing of the ONNX path against onnxruntime.

    python -m mlcbook.fuzz --models 2000 --seed 1 --out fuzz-failures

Each random model (:func:`~mlcbook.fuzz.generate.random_model`) is imported, compiled at
every ``opt_level`` and compared with onnxruntime (rtol 1e-4, atol 1e-5); a failing model
is shrunk to a minimal one and saved as ``.onnx`` + ``.npz`` inputs + a ``.md`` repro note.
Besides random DAGs, the generators of :mod:`mlcbook.fuzz.hard` make nested and output
concats, convs padded wider than their kernel, ops of 9+ inputs, long elementwise chains,
integer dtypes through the elementwise ops, and models at old opsets.

    >>> report = fuzz(models=20, seed=0)
    >>> report.failures
    []
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .check import Failure, check, save, shrink
from .generate import Case, random_model


@dataclass
class Report:
    models: int = 0
    seconds: float = 0.0
    op_counts: Counter = field(default_factory=Counter)
    #: (model index, failure, path of the saved minimal model or None)
    failures: list = field(default_factory=list)
    #: (model index, error) of generated models onnxruntime refused: generator bugs
    rejected: list = field(default_factory=list)

    def summary(self) -> str:
        ops = ", ".join(f"{k} {v}" for k, v in sorted(self.op_counts.items()))
        lines = [f"{self.models} models, {len(self.failures)} failing, {self.seconds:.0f} s",
                 f"op nodes generated: {ops}"]
        for i, error in self.rejected:
            lines.append(f"  model {i}: onnxruntime refused it (not counted): {error}")
        for i, f, path in self.failures:
            lines.append(f"  model {i}: {f.kind} at opt_level {f.opt_level}: {f.detail}"
                         + (f" -> {path}" if path else ""))
        return "\n".join(lines)


def fuzz(models: int, seed: int, out: str | None = None, large: float = 0.01,
         progress=None, start: int = 0) -> Report:
    """Run ``models`` random models from ``seed`` (numbers ``start`` on, so that a long run
    can be split into chunks that run the same models); save shrunk failures under ``out``."""
    report = Report()
    t0 = time.perf_counter()
    for i in range(start, start + models):
        case = random_model(np.random.default_rng([seed, i]), large=large)
        report.op_counts.update(case.ops)
        try:
            failure = check(case)
        except Exception as e:  # noqa: BLE001 - check() catches mlcbook's errors; this one is
            # onnxruntime's: the generator made a model it does not run, which proves nothing
            report.rejected.append((i, f"{type(e).__name__}: {str(e)[:200]}"))
            continue
        path = None
        if failure is not None:
            small = shrink(case, failure)
            if out is not None:
                path = save(small, check(small) or failure, out, f"seed{seed}-model{i}")
            report.failures.append((i, failure, path))
        report.models += 1
        if progress is not None:
            progress(i, failure)
    report.seconds = time.perf_counter() - t0
    return report


__all__ = ["Case", "Failure", "Report", "check", "fuzz", "random_model", "save", "shrink"]
