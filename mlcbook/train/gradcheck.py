"""Gradient checking: compare ``grad``'s gradients with central finite differences,
``(f(x + eps) - f(x - eps)) / (2 eps)`` one element at a time, both run by the reference
interpreter (use float64 inputs: float32 differences are too coarse to check anything).

    >>> err = max_gradient_error(loss_fn, {"x": x, "w": w}, wrt=["w"])
    >>> assert err < 1e-6
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..errors import TrainingError
from ..graph.expr import Function, Tuple
from ..graph.interpret import interpret
from .autodiff import grad


def _loss(func: Function, values: Mapping[str, np.ndarray]) -> float:
    out = interpret(func, **values)
    return float(np.asarray(out[0] if isinstance(func.body, Tuple) else out).reshape(()))


def numeric_gradient(func: Function, inputs: Mapping[str, np.ndarray], name: str,
                     eps: float = 1e-6) -> np.ndarray:
    """d loss / d input ``name`` by central differences (one pair of runs per element)."""
    values = {k: np.array(v) for k, v in inputs.items()}
    x = values[name]
    if x.dtype.kind != "f":
        raise TrainingError(f"numeric_gradient: input {name!r} is {x.dtype}, not a float")
    out = np.zeros(x.shape, np.float64)
    flat, gflat = x.reshape(-1), out.reshape(-1)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + eps
        hi = _loss(func, values)
        flat[i] = keep - eps
        lo = _loss(func, values)
        flat[i] = keep
        gflat[i] = (hi - lo) / (2 * eps)
    return out


def analytic_gradients(func: Function, inputs: Mapping[str, np.ndarray],
                       wrt: Sequence[str]) -> list[np.ndarray]:
    """``grad(func, wrt)``'s gradients, run by the interpreter."""
    outs = interpret(grad(func, wrt), **inputs)
    return list(outs[len(outs) - len(wrt):])


def max_gradient_error(func: Function, inputs: Mapping[str, np.ndarray],
                       wrt: Sequence[str], eps: float = 1e-6) -> float:
    """The largest ``|analytic - numeric| / max(1, |numeric|)`` over the inputs ``wrt``."""
    worst = 0.0
    for name, got in zip(wrt, analytic_gradients(func, inputs, wrt)):
        want = numeric_gradient(func, inputs, name, eps)
        err = np.abs(np.asarray(got, np.float64) - want) / np.maximum(1.0, np.abs(want))
        worst = max(worst, float(err.max(initial=0.0)))
    return worst


__all__ = ["numeric_gradient", "analytic_gradients", "max_gradient_error"]
