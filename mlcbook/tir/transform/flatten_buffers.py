"""Flatten every buffer to one dimension, the way memory is addressed.

``A[i, j]`` of a ``(n, m)`` buffer becomes ``A[i*m + j]`` of an ``(n*m,)`` buffer (row-major,
as numpy's C order). Buffers of more than 2**31 - 1 elements are indexed in int64.

    >>> str(flatten_buffers(func).body)          # doctest: +SKIP
    ... C[i * 128 + j] = C[i * 128 + j] + A[i * 128 + k] * B[k * 128 + j]
"""

from __future__ import annotations

import math

from ..expr import Buffer, BufferLoad, Const, PrimExpr, cast
from ..function import PrimFunc
from ..functor import Mutator
from ..stmt import BufferStore

_INT32_MAX = 2**31 - 1


def flat_buffer(buf: Buffer) -> Buffer:
    """The one-dimensional buffer holding ``buf``'s elements."""
    return Buffer(buf.name, (math.prod(buf.shape),), buf.dtype, buf.scope)


def flat_index(buf: Buffer, indices: tuple[PrimExpr, ...]) -> PrimExpr:
    """Row-major offset of ``indices`` in ``buf``."""
    wide = math.prod(buf.shape) > _INT32_MAX
    out: PrimExpr | None = None
    for idx, size in zip(indices, buf.shape):
        if wide:
            idx = cast("int64", idx)
        if out is None:
            out = idx
        else:
            out = out * Const(size, out.dtype) + idx
    return Const(0, "int32") if out is None else out  # a 0-d buffer holds one element


def flatten_buffers(func: PrimFunc) -> PrimFunc:
    """``func`` with every multi-dimensional buffer (parameters included) made 1-D.

    The original parameter shapes are kept in the ``param_shapes`` attribute so that a
    compiled kernel can still check its arguments against them.
    """
    flattener = _Flattener()
    params = tuple(flattener.buffer(b) for b in func.params)
    body = flattener.visit(func.body)
    attrs = dict(func.attrs)
    attrs.setdefault("param_shapes", tuple(b.shape for b in func.params))
    return PrimFunc(func.name, params, body, func.num_outputs, attrs)


class _Flattener(Mutator):
    def __init__(self):
        self.map: dict[Buffer, Buffer] = {}

    def buffer(self, b: Buffer) -> Buffer:
        if b.ndim == 1:
            return b
        if b not in self.map:
            self.map[b] = flat_buffer(b)
        return self.map[b]

    def visit_Buffer(self, b: Buffer):
        return self.buffer(b)

    def visit_BufferLoad(self, e: BufferLoad):
        indices = tuple(self.visit(i) for i in e.indices)
        if e.buffer.ndim == 1:
            return e if all(a is b for a, b in zip(indices, e.indices)) else BufferLoad(e.buffer, indices)
        return BufferLoad(self.buffer(e.buffer), (flat_index(e.buffer, indices),))

    def visit_BufferStore(self, s: BufferStore):
        value = self.visit(s.value)
        indices = tuple(self.visit(i) for i in s.indices)
        if s.buffer.ndim == 1:
            return BufferStore(s.buffer, value, indices)
        return BufferStore(self.buffer(s.buffer), value, (flat_index(s.buffer, indices),))
