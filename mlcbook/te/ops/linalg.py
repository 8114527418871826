"""Matrix products: ``matmul`` (numpy semantics, optional transposes) and ``batch_matmul``.

    >>> C = matmul(A, B)                         # (M, K) @ (K, N) -> (M, N)
    >>> C = matmul(A, W, transpose_b=True)       # (M, K) @ (N, K).T, as a dense layer
    >>> C = batch_matmul(X, Y)                   # (B, M, K) @ (B, K, N) -> (B, M, N)
"""

from __future__ import annotations

from ...errors import TEError, TEShapeError
from .. import reduction as _r
from ..tensor import Tensor
from ._util import broadcast_indices, broadcast_shapes, check_tensor, compute_named


def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False,
           name: str = "matmul") -> Tensor:
    """``numpy.matmul(a, b)``: the last two dimensions are multiplied, leading (batch)
    dimensions broadcast; a 1-D ``a`` is a row vector and a 1-D ``b`` a column vector,
    whose unit dimension is dropped from the result. ``transpose_a``/``transpose_b`` swap
    the last two dimensions of an operand first (ignored for 1-D operands).

    >>> matmul(placeholder((2, 5, 3)), placeholder((3, 4))).shape
    (2, 5, 4)
    """
    check_tensor(a, "matmul", "a")
    check_tensor(b, "matmul", "b")
    if a.dtype != b.dtype:
        raise TEError(f"matmul: {a.name!r} is {a.dtype} but {b.name!r} is {b.dtype}; "
                      "cast one of them so both have the same dtype")
    # (rows, contracted) of a and (contracted, cols) of b, as positions in the operands
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        m, ka = 1, a.shape[0]
    else:
        m, ka = (a.shape[-1], a.shape[-2]) if transpose_a else (a.shape[-2], a.shape[-1])
    if b_vec:
        kb, n = b.shape[0], 1
    else:
        kb, n = (b.shape[-1], b.shape[-2]) if transpose_b else (b.shape[-2], b.shape[-1])
    if ka != kb:
        raise TEShapeError(
            f"matmul: {a.name!r} has shape {a.shape} and {b.name!r} has shape {b.shape}"
            f"{_flags(transpose_a, transpose_b)}: the contracted dimensions {ka} and {kb} "
            "differ; they must be equal (check the operand order and the transpose flags)")
    a_batch, b_batch = a.shape[:-2], b.shape[:-2]
    batch = broadcast_shapes("matmul (batch dimensions)", a_batch, b_batch)
    out_shape = batch + (() if a_vec else (m,)) + (() if b_vec else (n,))
    k = _r.reduce_axis(ka, name="k")
    names = [f"b{d}" for d in range(len(batch))] + (["i"] if not a_vec else []) + \
        (["j"] if not b_vec else [])

    def body(*idx):
        bidx = idx[: len(batch)]
        rest = list(idx[len(batch):])
        i = 0 if a_vec else rest.pop(0)
        j = 0 if b_vec else rest.pop(0)
        if a_vec:
            a_val = a[k]
        else:
            a_last = (k, i) if transpose_a else (i, k)
            a_val = a[broadcast_indices(a_batch, bidx) + a_last]
        if b_vec:
            b_val = b[k]
        else:
            b_last = (j, k) if transpose_b else (k, j)
            b_val = b[broadcast_indices(b_batch, bidx) + b_last]
        return _r.sum(a_val * b_val, axis=k)

    return compute_named(out_shape, names, body, name)


def batch_matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False,
                 name: str = "batch_matmul") -> Tensor:
    """``(B, M, K) @ (B, K, N) -> (B, M, N)``; a batch of size 1 broadcasts. The flags
    transpose the last two dimensions of an operand, as in :func:`matmul`."""
    check_tensor(a, "batch_matmul", "a")
    check_tensor(b, "batch_matmul", "b")
    for arg, t in (("a", a), ("b", b)):
        if t.ndim != 3:
            raise TEShapeError(
                f"batch_matmul: operand {arg} ({t.name!r}) has shape {t.shape} but must be "
                "3-D (batch, rows, cols); use matmul for other ranks")
    return matmul(a, b, transpose_a, transpose_b, name)


def _flags(ta: bool, tb: bool) -> str:
    on = [n for n, f in (("transpose_a", ta), ("transpose_b", tb)) if f]
    return f" (with {', '.join(on)})" if on else ""
