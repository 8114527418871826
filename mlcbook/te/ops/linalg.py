"""Matrix products: ``matmul`` (numpy semantics, optional transposes), ``batch_matmul`` and
``gemm`` (``alpha * op(A) @ op(B) + beta * C``, ONNX's fully connected layer).

    >>> C = matmul(A, B)                         # (M, K) @ (K, N) -> (M, N)
    >>> C = matmul(A, W, transpose_b=True)       # (M, K) @ (N, K).T, as a dense layer
    >>> C = batch_matmul(X, Y)                   # (B, M, K) @ (B, K, N) -> (B, M, N)
    >>> Y = gemm(X, W, bias, trans_b=True)       # X @ W.T + bias
"""

from __future__ import annotations

from ...errors import TEDTypeError, TEShapeError
from .. import reduction as _r
from ..tensor import Tensor
from .util import (axis_names, broadcast_indices, broadcast_shapes, check_tensor,
                    compute_named, const_like, load, reduce_stage, store)


def product_shape(op: str, a, b, transpose_a: bool = False, transpose_b: bool = False,
                  b_panel: int = 0) -> tuple[int, ...]:
    """The shape of ``op(a) @ op(b)`` for operands of shapes ``a`` and ``b`` (numpy's
    matmul: batch dimensions broadcast, a 1-D operand is a vector), checked: the products'
    check, which the graph ops share. With ``b_panel=p`` b is packed in panels of p columns.

        >>> product_shape("matmul", (2, 5, 3), (3, 4))
        (2, 5, 4)
    """
    a, b = tuple(a), tuple(b)
    if not a or not b:
        raise TEShapeError(f"{op}: the operands have shapes {a} and {b}; both need at least "
                           "one dimension")
    a_vec, b_vec = len(a) == 1, len(b) == 1
    if a_vec:
        m, ka = 1, a[0]
    else:
        m, ka = (a[-1], a[-2]) if transpose_a else (a[-2], a[-1])
    if b_panel:
        kb, n = b[1], b[0] * b_panel
    elif b_vec:
        kb, n = b[0], 1
    else:
        kb, n = (b[-1], b[-2]) if transpose_b else (b[-2], b[-1])
    if ka != kb:
        raise TEShapeError(
            f"{op}: the operands have shapes {a} and {b}{_flags(op, transpose_a, transpose_b)}: "
            f"the contracted dimensions {ka} and {kb} differ ({m}x{ka} times {kb}x{n}); they "
            "must be equal (check the operand order and the transpose flags)")
    batch = broadcast_shapes(f"{op} (batch dimensions)", a[:-2], () if b_panel else b[:-2])
    return batch + (() if a_vec else (m,)) + (() if b_vec else (n,))


def _product(a: Tensor, b: Tensor, op: str, transpose_a: bool, transpose_b: bool,
             b_panel: int = 0):
    """Checked shapes of ``op(a) @ op(b)``: (output shape, loop names, body of the sum).
    With ``b_panel=p`` b is packed in panels of p columns: ``b[j // p, k, j % p]``."""
    check_tensor(a, op, "a")
    check_tensor(b, op, "b")
    if a.dtype != b.dtype:
        raise TEDTypeError(f"{op}: {a.name!r} is {a.dtype} but {b.name!r} is {b.dtype}; "
                           "cast one of them so both have the same dtype")
    out_shape = product_shape(op, a.shape, b.shape, transpose_a, transpose_b, b_panel)
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    a_batch, b_batch = a.shape[:-2], () if b_panel else b.shape[:-2]
    batch = out_shape[:len(out_shape) - (not a_vec) - (not b_vec)]
    k = _r.reduce_axis(a.shape[0 if a_vec else -2 if transpose_a else -1], name="k")

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


def gemm_shape(a, b, c=None, trans_a: bool = False, trans_b: bool = False,
               b_panel: int = 0) -> tuple[int, int]:
    """The (M, N) of a gemm of operands of shapes ``a``, ``b`` and ``c`` (None: no c),
    checked: gemm's check, which the graph op shares."""
    a, b = tuple(a), tuple(b)
    if b_panel and (trans_b or len(b) != 3 or b[2] != b_panel):
        raise TEShapeError(
            f"gemm: with b_panel={b_panel}, b must be packed as (N // {b_panel}, K, {b_panel}) "
            f"and trans_b must be 0, got b of shape {b} and trans_b={trans_b}; Instead: pack it "
            f"with pack_panels(b, {b_panel})")
    if len(a) != 2 or (len(b) != 2 and not b_panel):
        raise TEShapeError(f"gemm: a and b must be 2-D, got shapes {a} and {b}; Instead: use "
                           "matmul")
    shape = product_shape("gemm", a, b, bool(trans_a), bool(trans_b), b_panel)
    if c is not None and broadcast_shapes("gemm", c, shape) != shape:
        raise TEShapeError(f"gemm: c of shape {tuple(c)} does not broadcast to the output "
                           f"{shape}")
    return shape


def gemm(a: Tensor, b: Tensor, c: Tensor | None = None, alpha: float = 1.0, beta: float = 1.0,
         trans_a: bool = False, trans_b: bool = False, b_panel: int = 0,
         name: str = "gemm") -> Tensor:
    """``alpha * op(a) @ op(b) + beta * c`` for 2-D ``a`` and ``b`` (op: transpose when the
    flag is set); ``c`` broadcasts to the output. ``b_panel=p``: b comes packed as
    ``(N // p, K, p)``, ``b_packed[j // p, k, j % p] = B[k, j]``. Stages: the product
    (``<name>_acc`` when an epilogue follows) and the epilogue ``<name>``."""
    for arg, t in (("a", a), ("b", b)):
        check_tensor(t, "gemm", arg)
    gemm_shape(a.shape, b.shape, None if c is None else check_tensor(c, "gemm", "c").shape,
               trans_a, trans_b, b_panel)
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


def _flags(op: str, ta: bool, tb: bool) -> str:
    names = ("trans_a", "trans_b") if op == "gemm" else ("transpose_a", "transpose_b")
    on = [n for n, f in zip(names, (ta, tb)) if f]
    return f" (with {', '.join(on)})" if on else ""
