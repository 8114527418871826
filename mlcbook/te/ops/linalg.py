"""Matrix products: ``matmul`` (numpy semantics, optional transposes), ``batch_matmul`` and
``gemm`` (``alpha * op(A) @ op(B) + beta * C``, ONNX's fully connected layer).

    >>> C = matmul(A, B)                         # (M, K) @ (K, N) -> (M, N)
    >>> C = matmul(A, W, transpose_b=True)       # (M, K) @ (N, K).T, as a dense layer
    >>> C = batch_matmul(X, Y)                   # (B, M, K) @ (B, K, N) -> (B, M, N)
    >>> Y = gemm(X, W, bias, trans_b=True)       # X @ W.T + bias
"""

from __future__ import annotations

from ...errors import TEError, TEShapeError
from .. import reduction as _r
from ..tensor import Tensor
from .util import (axis_names, broadcast_indices, broadcast_shapes, check_tensor,
                    compute_named, const_like, load, reduce_stage, store)


def _product(a: Tensor, b: Tensor, op: str, transpose_a: bool, transpose_b: bool,
             b_panel: int = 0):
    """Checked shapes of ``op(a) @ op(b)``: (output shape, loop names, body of the sum).
    With ``b_panel=p`` b is packed in panels of p columns: ``b[j // p, k, j % p]``."""
    check_tensor(a, op, "a")
    check_tensor(b, op, "b")
    if a.dtype != b.dtype:
        raise TEError(f"{op}: {a.name!r} is {a.dtype} but {b.name!r} is {b.dtype}; "
                      "cast one of them so both have the same dtype")
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    if a_vec:
        m, ka = 1, a.shape[0]
    else:
        m, ka = (a.shape[-1], a.shape[-2]) if transpose_a else (a.shape[-2], a.shape[-1])
    if b_panel:
        kb, n = b.shape[1], b.shape[0] * b_panel
    elif b_vec:
        kb, n = b.shape[0], 1
    else:
        kb, n = (b.shape[-1], b.shape[-2]) if transpose_b else (b.shape[-2], b.shape[-1])
    if ka != kb:
        raise TEShapeError(
            f"{op}: {a.name!r} has shape {a.shape} and {b.name!r} has shape {b.shape}"
            f"{_flags(transpose_a, transpose_b)}: the contracted dimensions {ka} and {kb} "
            "differ; they must be equal (check the operand order and the transpose flags)")
    a_batch, b_batch = a.shape[:-2], () if b_panel else b.shape[:-2]
    batch = broadcast_shapes(f"{op} (batch dimensions)", a_batch, b_batch)
    out_shape = batch + (() if a_vec else (m,)) + (() if b_vec else (n,))
    k = _r.reduce_axis(ka, name="k")

    def body(*idx):
        bidx, rest = idx[: len(batch)], list(idx[len(batch):])
        i = None if a_vec else rest.pop(0)
        j = None if b_vec else rest.pop(0)
        if a_vec:
            ai = (k,)
        else:
            ai = broadcast_indices(a_batch, bidx) + ((k, i) if transpose_a else (i, k))
        if b_panel:
            bi = (j // b_panel, k, j % b_panel)
        elif b_vec:
            bi = (k,)
        else:
            bi = broadcast_indices(b_batch, bidx) + ((j, k) if transpose_b else (k, j))
        return _r.sum(load(a, ai) * load(b, bi), axis=k)

    return out_shape, axis_names(len(out_shape)), body


def matmul(a: Tensor, b: Tensor, transpose_a: bool = False, transpose_b: bool = False,
           name: str = "matmul") -> Tensor:
    """``numpy.matmul(a, b)``: the last two dimensions are multiplied, leading (batch)
    dimensions broadcast; a 1-D ``a`` is a row vector and a 1-D ``b`` a column vector,
    whose unit dimension is dropped from the result. ``transpose_a``/``transpose_b`` swap
    the last two dimensions of an operand first (ignored for 1-D operands).

    >>> matmul(placeholder((2, 5, 3)), placeholder((3, 4))).shape
    (2, 5, 4)
    """
    shape, names, body = _product(a, b, "matmul", transpose_a, transpose_b)
    return reduce_stage(shape, names, body, a.dtype, name)


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


def gemm(a: Tensor, b: Tensor, c: Tensor | None = None, alpha: float = 1.0, beta: float = 1.0,
         trans_a: bool = False, trans_b: bool = False, b_panel: int = 0,
         name: str = "gemm") -> Tensor:
    """``alpha * op(a) @ op(b) + beta * c`` for 2-D ``a`` and ``b`` (op: transpose when the
    flag is set); ``c`` broadcasts to the output. ``b_panel=p``: b comes packed as
    ``(N // p, K, p)``, ``b_packed[j // p, k, j % p] = B[k, j]``. Stages: the product
    (``<name>_acc`` when an epilogue follows) and the epilogue ``<name>``."""
    for arg, t in (("a", a), ("b", b)):
        check_tensor(t, "gemm", arg)
        if t.ndim != (3 if arg == "b" and b_panel else 2):
            raise TEShapeError(f"gemm: {arg} {t.name!r} has shape {t.shape}; gemm takes 2-D "
                               "operands (b packed (N // p, K, p) with b_panel=p); use matmul")
    shape, names, body = _product(a, b, "gemm", bool(trans_a), bool(trans_b), b_panel)
    if c is None and alpha == 1.0:
        return reduce_stage(shape, names, body, a.dtype, name)
    acc = compute_named(shape, names, body, f"{name}_acc")

    def epilogue(i, j):
        v = acc[i, j] if alpha == 1.0 else acc[i, j] * const_like(alpha, acc[i, j])
        if c is not None:
            cv = load(c, broadcast_indices(c.shape, (i, j)))
            v = v + (cv if beta == 1.0 else cv * const_like(beta, cv))
        return store(v, a.dtype)

    return compute_named(shape, names, epilogue, name)


def _flags(ta: bool, tb: bool) -> str:
    on = [n for n, f in (("transpose_a", ta), ("transpose_b", tb)) if f]
    return f" (with {', '.join(on)})" if on else ""
