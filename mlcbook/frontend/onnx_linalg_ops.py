"""Converters of ONNX's linear algebra beside ``MatMul``, ``Gemm`` and ``Einsum``: ``Det``.

``Det`` is the Leibniz expansion, the sum over the permutations ``p`` of ``n`` of
``sign(p) * x[0, p0] * x[1, p1] * ...``: a gather of the ``n!`` products' factors, a
product and a signed sum, which compile like any graph. It costs ``n! * n`` products, so
mlcbook takes it up to 4 x 4 matrices (24 terms) and refuses larger ones by name.

    >>> leibniz_terms(2)
    (array([[0, 3],
           [1, 2]]), array([ 1., -1.]))
"""

from __future__ import annotations

import itertools

import numpy as np

from ..graph.expr import Constant
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype

#: the largest n whose n x n determinant is expanded (4! = 24 terms)
MAX_DET_SIZE = 4


def leibniz_terms(n: int) -> tuple[np.ndarray, np.ndarray]:
    """For each permutation of ``n``: the flat offsets ``i * n + p[i]`` of its factors in a
    row-major n x n matrix, and its sign."""
    perms = list(itertools.permutations(range(n)))
    where = np.array([[i * n + p[i] for i in range(n)] for p in perms], np.int64)
    # the sign of a permutation: -1 to the number of its inversions
    inversions = [sum(p[i] > p[j] for i in range(n) for j in range(i + 1, n)) for p in perms]
    return where, np.array([(-1.0) ** k for k in inversions])


@converter("Det")
@guard_dtype
def _det(cx, ins, attrs):
    x = ins[0]
    *batch, n, m = x.shape
    if n != m or n > MAX_DET_SIZE:
        raise Unsupported(f"Det of {n} x {m} matrices: mlcbook expands determinants of square "
                          f"matrices up to {MAX_DET_SIZE} x {MAX_DET_SIZE}")
    if x.dtype not in ("float16", "float32", "float64"):
        raise Unsupported(f"Det of {x.dtype} values (ONNX defines it for floats)")
    where, sign = leibniz_terms(n)
    flat = cx.call("reshape", x, shape=tuple(batch) + (n * n,), suffix="_flat")
    factors = cx.call("gather", flat, Constant(where), axis=len(batch), suffix="_factors")
    terms = cx.call("prod", factors, axes=(len(batch) + 1,), keepdims=0, suffix="_terms")
    signed = cx.call("mul", terms, Constant(sign.astype(x.dtype)), suffix="_signed")
    return cx.call("sum", signed, axes=(len(batch),), keepdims=0)


__all__ = ["CONVERTERS", "MAX_DET_SIZE", "leibniz_terms"]
