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
a reduction adds its reduce axes as trailing dimensions and reduces them away, one block of
the output at a time (at most :data:`CHUNK_VALUES` values held: a 56x56x64 3x3 convolution
evaluates in under a second in ~100 MiB). The graph interpreter runs declared
operators this way (:mod:`mlcbook.ops.declare`): a reference, not a fast path.
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
#: the most values a reduction stage holds at once (float64: 32 MiB)
CHUNK_VALUES = 1 << 22


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


def _grid(values: np.ndarray, d: int, rank: int) -> np.ndarray:
    """``values`` along dimension ``d`` of a ``rank``-dimensional index grid."""
    return values.reshape([-1 if k == d else 1 for k in range(rank)])


def _run_stage(t: Tensor, env: dict) -> np.ndarray:
    op: ComputeOp = t.op
    body, ndim = op.body, len(op.axis)
    reduce_axes = body.axis if isinstance(body, Reduce) else ()
    rank = ndim + len(reduce_axes)
    bound: dict = dict(env)
    for d, v in enumerate(op.axis):
        bound[v] = _grid(np.arange(t.shape[d]), d, rank)
    for d, r in enumerate(reduce_axes, start=ndim):
        bound[r] = _grid(np.arange(r.extent) + r.start, d, rank)
    if not isinstance(body, Reduce):
        return np.broadcast_to(evaluate_expr(body, bound), t.shape).copy()
    if not ndim:
        return _reduce(body, bound, (), 0, rank).astype(t.dtype).reshape(())
    # a reduction holds one value per output element and reduction step at once: blocks of
    # the output keep that under CHUNK_VALUES (whole trailing axes, a run of one axis, and
    # single indices of the axes before it)
    steps = int(np.prod([r.extent for r in reduce_axes], dtype=np.int64))
    split = next((k for k in range(ndim)
                  if int(np.prod(t.shape[k + 1:], dtype=np.int64)) * steps <= CHUNK_VALUES),
                 ndim - 1)
    per_row = int(np.prod(t.shape[split + 1:], dtype=np.int64)) * steps
    rows = max(1, CHUNK_VALUES // per_row)
    out = np.empty(t.shape, t.dtype)
    for lead in np.ndindex(*t.shape[:split]):
        for d, i in enumerate(lead):
            bound[op.axis[d]] = _grid(np.arange(i, i + 1), d, rank)
        for lo in range(0, t.shape[split], rows):
            hi = min(lo + rows, t.shape[split])
            bound[op.axis[split]] = _grid(np.arange(lo, hi), split, rank)
            shape = (1,) * split + (hi - lo,) + tuple(t.shape[split + 1:])
            out[lead + (slice(lo, hi),)] = _reduce(body, bound, shape, ndim, rank).reshape(
                shape[split:])
    return out


def _reduce(body: Reduce, bound: dict, shape: tuple, ndim: int, rank: int) -> np.ndarray:
    full = shape + tuple(r.extent for r in body.axis)
    values = np.broadcast_to(evaluate_expr(body.source, bound), full)
    if body.where is not None:
        keep = np.broadcast_to(evaluate_expr(body.where, bound), full)
        values = np.where(keep, values, evaluate_expr(body.identity(), {}))
    with np.errstate(all="ignore"):
        return np.asarray(_REDUCE[body.combiner](
            values.astype(np.float64) if values.dtype.kind == "f" else values,
            axis=tuple(range(ndim, rank))))


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
