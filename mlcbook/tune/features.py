"""Features of a scheduled program, read from its lowered loops: what a cost model sees.

    >>> x = features(point.func)          # a numpy vector of len(FEATURE_NAMES) floats
    >>> dict(zip(FEATURE_NAMES, x))       # {'store.log_iters': 21.0, ...}

Every buffer access (a load or a store) of the lowered program is described by
:data:`ACCESS_FEATURES`, from the loops around it; the program is then described by the
access features of its **store** that runs most often, the **mean** and the **max** of the
features of the loads (each weighted alike), and the :data:`PROGRAM_FEATURES`. Counts are
``log2(1 + x)``, so that a model compares orders of magnitude. The features are a
deterministic function of the program (same program, same vector).
"""

from __future__ import annotations

import math

import numpy as np

from ..tir.arith import int_values
from ..tir.expr import Binary, BufferLoad, Call, Const, Var
from ..tir.function import PrimFunc
from ..tir.functor import Visitor
from ..tir.stmt import BufferStore, For
from ..tir.transform import lower

#: (name, what it measures) of every feature of one access
ACCESS_FEATURES = (
    ("log_iters", "log2 of how many times the access runs (product of the loop extents around it)"),
    ("inner_extent", "log2 of the extent of the innermost loop around it"),
    ("inner_stride", "log2(1 + |stride|) in elements along the innermost loop: 0 reuses one "
                     "element, 1 is contiguous"),
    ("vector_lanes", "log2 of the lanes of a vectorized innermost loop (0: scalar)"),
    ("unrolled", "log2 of the product of the unrolled loops' extents around it"),
    ("parallel", "log2 of the extent of the parallel loop around it (0: runs on one thread)"),
    ("footprint", "log2 of the bytes it touches (product of the extents of the loops it "
                  "moves along, times the element size; an upper bound)"),
    ("reuse", "log2 of runs per element touched: how often each element is used again"),
    ("reuse_depth", "how many of the loops around it, counted from the innermost, it does "
                    "not move along (a value kept in a register across them)"),
    ("local", "1 if the buffer is local scratch (a register tile), else 0"),
)

#: (name, what it measures) of the features of the whole program
PROGRAM_FEATURES = (
    ("flops", "log2 of the arithmetic operations of all stores (each + - * / min max)"),
    ("bytes", "log2 of the bytes of memory (non-local) buffers all accesses touch"),
    ("intensity", "log2(1 + flops / bytes): arithmetic intensity, the roofline's x axis"),
    ("loops", "how many loops the program has"),
)

FEATURE_NAMES = tuple(
    [f"store.{n}" for n, _ in ACCESS_FEATURES] + [f"load_mean.{n}" for n, _ in ACCESS_FEATURES]
    + [f"load_max.{n}" for n, _ in ACCESS_FEATURES] + [n for n, _ in PROGRAM_FEATURES])

_OPS = {"+", "-", "*", "/", "min", "max"}


def _log(x: float) -> float:
    return math.log2(1.0 + max(x, 0.0))


def _stride(index, var: Var, env: dict) -> int:
    try:
        return int(int_values(index, {**env, var: 1})) - int(int_values(index, env))
    except (ValueError, TypeError):
        return 1  # not a linear index we can evaluate: assume it moves


def _flops(value) -> int:
    count = 0

    class Count(Visitor):
        def visit_Binary(self, node: Binary) -> None:
            nonlocal count
            count += node.op in _OPS and node.dtype.startswith("float")
            self.generic_visit(node)

        def visit_Call(self, node: Call) -> None:
            nonlocal count
            count += 1
            self.generic_visit(node)

    Count().visit(value)
    return count


class _Accesses(Visitor):
    """Collects (access features, is store, flops, bytes) of every access, loops in scope."""

    def __init__(self):
        self.loops: list[For] = []
        self.rows: list[tuple] = []
        self.flops = 0.0
        self.n_loops = 0

    def visit_For(self, node: For) -> None:
        self.n_loops += 1
        self.loops.append(node)
        self.generic_visit(node)
        self.loops.pop()

    def visit_BufferStore(self, node: BufferStore) -> None:
        iters = self._iters()
        self.flops += iters * _flops(node.value)
        self._access(node.buffer, node.indices, True)
        self.generic_visit(node)

    def visit_BufferLoad(self, node: BufferLoad) -> None:
        self._access(node.buffer, node.indices, False)
        self.generic_visit(node)

    def _iters(self) -> float:
        return float(math.prod(_const(lp.extent) for lp in self.loops))

    def _access(self, buffer, indices, is_store: bool) -> None:
        loops = self.loops
        env = {lp.loop_var: 0 for lp in loops}
        index = indices[0] if len(indices) == 1 else None
        strides = [(_stride(index, lp.loop_var, env) if index is not None else 1) for lp in loops]
        extents = [_const(lp.extent) for lp in loops]
        iters = float(math.prod(extents))
        itemsize = np.dtype(buffer.dtype).itemsize
        size = math.prod(_const(d) for d in buffer.shape)
        touched = min(float(math.prod(e for e, s in zip(extents, strides) if s != 0)), size)
        inner = loops[-1] if loops else None
        depth = 0
        for s in reversed(strides):
            if s != 0:
                break
            depth += 1
        row = [
            _log(iters),
            _log(extents[-1]) if loops else 0.0,
            _log(abs(strides[-1])) if loops else 0.0,
            _log(extents[-1]) if inner is not None and inner.kind == "vectorized" else 0.0,
            _log(math.prod(e for e, lp in zip(extents, loops) if lp.kind == "unrolled")),
            _log(max([e for e, lp in zip(extents, loops) if lp.kind == "parallel"] or [0])),
            _log(touched * itemsize),
            _log(iters / max(touched, 1.0)),
            float(depth),
            1.0 if buffer.scope == "local" else 0.0,
        ]
        nbytes = 0.0 if buffer.scope == "local" else touched * itemsize
        self.rows.append((row, is_store, iters, nbytes))


def _const(e) -> int:
    if isinstance(e, int):
        return e
    return int(e.value) if isinstance(e, Const) else 1


def features(func: PrimFunc) -> np.ndarray:
    """The feature vector of a scheduled PrimFunc (see :data:`FEATURE_NAMES`)."""
    lowered = lower(func)
    acc = _Accesses()
    for f in lowered.functions.values():
        if isinstance(f, PrimFunc):
            acc.visit(f.body)
    n = len(ACCESS_FEATURES)
    stores = [r for r in acc.rows if r[1]]
    loads = np.array([r[0] for r in acc.rows if not r[1]] or [[0.0] * n])
    store = max(stores, key=lambda r: r[2])[0] if stores else [0.0] * n
    total_bytes = sum(r[3] for r in acc.rows)
    program = [_log(acc.flops), _log(total_bytes), _log(acc.flops / max(total_bytes, 1.0)),
               float(acc.n_loops)]
    return np.concatenate([store, loads.mean(axis=0), loads.max(axis=0), program])


def flop_count(func: PrimFunc) -> int:
    """Arithmetic operations of one run of ``func`` (float + - * / min max and calls), as
    counted by the features: 2 n^3 for an n x n matmul."""
    acc = _Accesses()
    for f in lower(func).functions.values():
        if isinstance(f, PrimFunc):
            acc.visit(f.body)
    return int(acc.flops)


def describe() -> str:
    """Every feature and what it measures, one per line."""
    lines = [f"{{store,load_mean,load_max}}.{n}: {doc}" for n, doc in ACCESS_FEATURES]
    lines += [f"{n}: {doc}" for n, doc in PROGRAM_FEATURES]
    return "\n".join(lines)


__all__ = ["features", "flop_count", "describe", "FEATURE_NAMES", "ACCESS_FEATURES", "PROGRAM_FEATURES"]
