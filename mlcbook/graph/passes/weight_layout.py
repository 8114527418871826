"""Weights laid out for the kernels that read them: a rewrite that is right only for
inference, where weights never change, so their new layout is computed once, at compile time.

A gemm's weight ``B`` is what its kernel streams through: for each tile of output columns it
reads the tile's columns of every row of ``B``. This pass hands the kernel ``B`` ready for
that, as a constant: transposed when the model uses ``B`` transposed (ONNX's ``transB=1``,
so rows are read with unit stride), and packed in panels of the tile's width
(``gemm(b_panel=p)``, ``B_packed[j // p, k, j % p]``), so one tile's part of ``B`` is one
contiguous block instead of ``K`` pieces a row apart.

    >>> func = pack_weights(func)       # a graph Function, before legalization
"""

from __future__ import annotations

import numpy as np

from ...ops.linalg import pack_panels
from ...ops.types import Attrs
from ...rules.tile_size import register_tile
from ..expr import Call, Constant, Function
from ..functor import ExprMutator


def pack_weights(func: Function, target=None) -> Function:
    """``func`` with every gemm whose B is a constant given B transposed and packed in panels
    as wide as ``target``'s register tile (default: this machine's)."""
    return _PackWeights(target).visit_function(func)


class _PackWeights(ExprMutator):
    def __init__(self, target=None):
        super().__init__()
        self.target = target

    def visit_Call(self, call: Call):
        call = self.generic_visit(call)
        if call.op != "gemm" or not isinstance(call.args[1], Constant) or call.attrs["b_panel"]:
            return call
        w = call.args[1]
        b = w.data.T if call.attrs["trans_b"] else w.data
        # panels as wide as the target's register tile (a kernel scheduled for another one
        # still reads the panels right, only less contiguously)
        a = call.args[0].shape
        p = register_tile(a[1] if call.attrs["trans_a"] else a[0], b.shape[1], self.target)[1]
        attrs = dict(call.attrs, trans_b=0)
        if p < b.shape[1]:
            b, attrs["b_panel"] = pack_panels(b, p), p
        packed = Constant(np.ascontiguousarray(b), w.name, w.owner)
        return Call("gemm", (call.args[0], packed) + call.args[2:], Attrs(attrs), call.name)
