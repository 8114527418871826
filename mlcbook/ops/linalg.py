"""Matrix products: ``matmul`` (numpy's batched, broadcasting ``@``) and ``gemm``
(``alpha * op(A) @ op(B) + beta * C``, ONNX's fully connected layer).

``gemm`` has one attribute ONNX lacks: ``b_panel=p`` says B comes packed in panels of ``p``
columns, ``B_packed[j // p, k, j % p] = B[k, j]``, so a kernel that computes ``p`` output
columns at a time reads its part of B from consecutive memory. ``mb.compile`` packs constant
weights that way (:mod:`mlcbook.graph.passes.weight_layout`). Both are declared once from
their te computes (:mod:`.declare`).

    >>> get("matmul").infer_type([TensorType((8, 1, 4, 5)), TensorType((3, 5, 6))], {})
    Tensor((8, 3, 4, 6), "float32")
"""

from __future__ import annotations

import numpy as np

from ..errors import OpShapeError
from ..te import ops as T
from ..te.ops import linalg as TL
from . import declare
from ._infer import NUMBERS, require_dtype, same_dtype
from .registry import OpKind


def matmul_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``a @ b`` for numpy semantics (1-D operands are promoted and squeezed),
    checked by te's rule."""
    return TL.product_shape("matmul", a, b)


def _matmul_check(types, attrs):
    same_dtype("matmul", types)
    require_dtype("matmul", types[0], NUMBERS)
    matmul_shape(types[0].shape, types[1].shape)     # the compute never sees an empty one


def _matmul_empty(types, attrs, arrays):
    """A product over no terms is 0; one with no rows or columns is empty."""
    if not any(0 in t.shape for t in types):
        return None
    return np.zeros(matmul_shape(types[0].shape, types[1].shape), types[0].dtype)


declare.op("matmul", T.matmul, kind=OpKind.OUT_ELEMWISE_FUSABLE, num_inputs=(2, 2),
           check=_matmul_check, empty=_matmul_empty, onnx="MatMul",
           doc="a @ b with numpy's rules (batched, broadcasting, 1-D promoted)")


def _gemm_shape(types, attrs) -> tuple[int, int]:
    """The output shape of gemm (the check of its declaration)."""
    same_dtype("gemm", types)
    require_dtype("gemm", types[0], NUMBERS)
    return TL.gemm_shape(types[0].shape, types[1].shape,
                         types[2].shape if len(types) == 3 else None, attrs["trans_a"],
                         attrs["trans_b"], attrs["b_panel"])


def pack_panels(b: np.ndarray, p: int) -> np.ndarray:
    """``B`` (K, N) as panels of ``p`` columns, shape (N // p, K, p), for ``gemm(b_panel=p)``.

        >>> pack_panels(np.arange(8).reshape(2, 4), 2)[1]     # columns 2 and 3
        array([[2, 3],
               [6, 7]])
    """
    k, n = b.shape
    if p < 1 or n % p:
        raise OpShapeError(f"pack_panels: {n} columns do not split into panels of {p}")
    return np.ascontiguousarray(b.reshape(k, n // p, p).transpose(1, 0, 2))


def _gemm_empty(types, attrs, arrays):
    """With no terms the product is 0, and the output is beta * C."""
    if not any(0 in t.shape for t in types):
        return None
    y = np.zeros(_gemm_shape(types, attrs), types[0].dtype)
    if arrays is not None and len(arrays) == 3:
        y = (y + attrs["beta"] * arrays[2]).astype(y.dtype)
    return y


declare.op("gemm", T.gemm, kind=OpKind.OUT_ELEMWISE_FUSABLE,
           attrs={"alpha": 1.0, "beta": 1.0, "trans_a": 0, "trans_b": 0, "b_panel": 0},
           num_inputs=(2, 3), check=_gemm_shape, empty=_gemm_empty, onnx="Gemm",
           onnx_attrs=declare.OnnxAttrs(
               names={"trans_a": "transA", "trans_b": "transB"},
               local={"b_panel": "panel-packed weights, mlcbook's compiled layout. Instead: "
                                 "export the graph before mb.compile packs it"}),
           doc="alpha * op(A) @ op(B) + beta * C, op = transpose if trans_a / trans_b; "
               "b_panel=p: B packed as (N // p, K, p)")
