"""Run a tensor-expression program with numpy, one stage at a time, each stage over whole
arrays: the meaning of a ``te.compute`` as data, without loops or compilation.

    >>> A = placeholder((2, 3), name="A")
    >>> B = compute((3, 2), lambda i, j: A[j, i] * 2.0, name="B")
    >>> evaluate(B, {A: np.arange(6, dtype="float32").reshape(2, 3)})
    array([[ 0.,  6.],
           [ 2.,  8.],
           [ 4., 10.]], dtype=float32)

A stage binds each of its index variables to an ``arange`` along its own dimension, so the
body evaluates as one broadcast array expression (:func:`mlcbook.tir.array_eval.evaluate_expr`);
a reduction adds its reduce axes as trailing dimensions and reduces them away. The graph
interpreter runs declared operators this way (:mod:`mlcbook.ops.declare`). A reduction holds
``output elements x reduction extent`` values at once: fine for references, not a fast path.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..errors import TEError
from ..tir.array_eval import evaluate_expr
from ..tir.expr import Buffer, Var
from .reduction import Reduce
from .tensor import ComputeOp, Tensor

_REDUCE = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}


def _stages(outputs: Sequence[Tensor]) -> list[Tensor]:
    """The computed tensors ``outputs`` need, each after the tensors it reads."""
    order: list[Tensor] = []
    seen: set[int] = set()

    def visit(t: Tensor) -> None:
        if id(t) in seen:
            return
        seen.add(id(t))
        if isinstance(t.op, ComputeOp):
            for x in t.op.inputs:
                visit(x)
            order.append(t)

    for t in outputs:
        visit(t)
    return order


def _run_stage(t: Tensor, env: dict) -> np.ndarray:
    op: ComputeOp = t.op
    body, ndim = op.body, len(op.axis)
    reduce_axes = body.axis if isinstance(body, Reduce) else ()
    rank = ndim + len(reduce_axes)
    bound: dict = dict(env)
    for d, v in enumerate(op.axis):
        bound[v] = np.arange(t.shape[d]).reshape([-1 if k == d else 1 for k in range(rank)])
    for d, r in enumerate(reduce_axes, start=ndim):
        bound[r] = (np.arange(r.extent) + r.start).reshape(
            [-1 if k == d else 1 for k in range(rank)])
    if not isinstance(body, Reduce):
        return np.broadcast_to(evaluate_expr(body, bound), t.shape).copy()
    full = tuple(t.shape) + tuple(r.extent for r in reduce_axes)
    values = np.broadcast_to(evaluate_expr(body.source, bound), full)
    if body.where is not None:
        keep = np.broadcast_to(evaluate_expr(body.where, bound), full)
        values = np.where(keep, values, evaluate_expr(body.identity(), {}))
    axes = tuple(range(ndim, rank))
    with np.errstate(all="ignore"):
        out = _REDUCE[body.combiner](values.astype(np.float64) if values.dtype.kind == "f"
                                     else values, axis=axes)
    return np.asarray(out).astype(t.dtype).reshape(t.shape)


def evaluate(outputs: Tensor | Sequence[Tensor],
             inputs: Mapping[Tensor, np.ndarray]) -> np.ndarray | tuple[np.ndarray, ...]:
    """The values of ``outputs`` (one tensor or several) with each placeholder of
    ``inputs`` bound to an array of its shape and dtype."""
    single = isinstance(outputs, Tensor)
    outs = [outputs] if single else list(outputs)
    env: dict[Buffer | Var, np.ndarray] = {}
    for t, a in inputs.items():
        a = np.asarray(a)
        if a.shape != t.shape:
            raise TEError(f"evaluate: the input {t.name!r} has shape {t.shape}, got an array "
                          f"of shape {a.shape}")
        env[t.buffer] = a
    for t in _stages(outs):
        for x in t.op.inputs:
            if x.buffer not in env:
                raise TEError(f"evaluate: the placeholder {x.name!r} that {t.name!r} reads has "
                              "no value; pass it in inputs")
        env[t.buffer] = _run_stage(t, env)
    results = tuple(env[t.buffer] if t.buffer in env else np.asarray(inputs[t]) for t in outs)
    return results[0] if single else results


__all__ = ["evaluate"]
