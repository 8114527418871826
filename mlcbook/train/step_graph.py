"""Rewrites of a training step's graph that keep its values and make its kernels faster:
where a weight that changes every step would be transposed every step, and how the
gradient of a bias is summed.

    >>> body = feature_major(forward_body, params)   # before differentiating
    >>> body = after_backward(step_body)              # after

* :func:`feature_major` (before differentiating): a wide layer ``gemm(x, W, trans_b=1)``
  computes its transposed product ``W x^T``, so neither it nor its gradients transpose
  ``W``; only activations are transposed, and between two such layers none.
* :func:`after_backward`: the remaining ``trans_b=1`` gemms of a parameter read it through
  an explicit transpose (mlcbook's gemm kernel reads a transposed, unpacked B slowly, and
  ``mb.compile`` cannot pre-pack a weight that changes every step, as it does for
  inference); and a sum over the batch and trailing axes (a conv bias's gradient) sums over
  the batch first.
"""

from __future__ import annotations

import math

from ..graph.expr import Call, Expr, Var
from ..graph.functor import ExprMutator
from ..ops import OpKind
from ..ops import get as get_op
from ..ops.types import Attrs


#: the smallest batch :func:`feature_major` transposes a product for: the transposed product
#: runs its vectors along the batch, and below a vector of float32 (8 lanes of 256-bit
#: registers) it ran on partial vectors or scalars (784-512-256-10 MLP, Zen 5, 1 thread,
#: sums of kernel medians on a busy machine: batch 1 took 1.9x, batch 2 2.6x the step with
#: transposed weights; batch 4 to 64 took 0.66-0.84x of it)
MIN_BATCH = 8


def _t(e: Expr) -> Call:
    return Call("transpose", (e,), Attrs(perm=(1, 0)))


def _is_transpose(e) -> bool:
    return isinstance(e, Call) and e.op == "transpose" and tuple(e.attrs["perm"]) == (1, 0)


class _FeatureMajor(ExprMutator):
    def __init__(self, params: set[str]):
        super().__init__()
        self.params = params

    def visit_Call(self, call: Call):
        call = self.generic_visit(call)
        a = call.attrs
        if call.op != "gemm" or not a["trans_b"] or a["trans_a"] or a["b_panel"]:
            return call
        x, w = call.args[:2]
        if not (isinstance(w, Var) and w.name in self.params):
            return call
        (m, k), n = x.shape, w.shape[0]
        if m < MIN_BATCH or n * k <= m * (k + n):
            return call
        args = (w, transposed(x)) + tuple(_addend_transposed(c) for c in call.args[2:])
        return Call("transpose", (Call("gemm", args, Attrs(dict(a, trans_b=0))),),
                    Attrs(perm=(1, 0)), call.name)


def feature_major(body: Expr, params: set[str]) -> Expr:
    """``body`` with each ``gemm(x, W, c, trans_b=1)`` whose ``W`` (``N x K``) is one of
    ``params`` and bigger than the activations in and out (``N K > M (K + N)``, ``x`` being
    ``M x K``: a wide layer at a small batch, of at least :data:`MIN_BATCH`) computed as
    ``transpose(gemm(W, x^T, c^T))``.
    ``x^T`` is :func:`transposed`: a transpose sunk through the elementwise ops on the way
    (``relu``) cancels the previous wide layer's, so two such layers pass their activation
    as it comes. Its gradients are then gemms whose operands need no transpose of ``W``
    (``dW = g x``, ``dx^T = W^T g`` read as ``trans_a``).

        >>> feature_major(mlp_784_512_10.body, {"fc1.weight"})   # fc1 only: fc2 is narrow
    """
    return _FeatureMajor(params).visit(body)


def transposed(e: Expr) -> Expr:
    """The transpose of the matrix ``e``: ``t`` for ``transpose(t)``; for an elementwise
    ``f(transpose(t), ...)`` whose other operands are scalars or transposes too,
    ``f(t, ...)``; else a transpose.

        >>> transposed(relu(transpose(t)))    # relu(t)
    """
    if _is_transpose(e):
        return e.args[0]
    if isinstance(e, Call) and get_op(e.op).kind == OpKind.ELEMWISE \
            and any(_is_transpose(x) for x in e.args) \
            and all(_is_transpose(x) or x.type.ndim == 0 for x in e.args):
        return Call(e.op, tuple(x if x.type.ndim == 0 else x.args[0] for x in e.args),
                    e.attrs)
    return _t(e)


def _addend_transposed(c: Expr) -> Expr:
    """The addend ``c`` of a gemm, broadcast as the transposed product's: a bias ``(n,)``
    becomes ``(n, 1)``, a matrix its transpose."""
    if c.type.ndim == 0:
        return c
    shape = (1,) * (2 - c.type.ndim) + tuple(c.shape)
    if 1 in shape:
        return Call("reshape", (c,), Attrs(shape=shape[::-1]))
    return _t(c)


class _AfterBackward(ExprMutator):
    def visit_Call(self, call: Call):
        call = self.generic_visit(call)
        if call.op == "gemm" and call.attrs["trans_b"] and isinstance(call.args[1], Var):
            return Call("gemm", (call.args[0], _t(call.args[1])) + call.args[2:],
                        Attrs(dict(call.attrs, trans_b=0)), call.name)
        if call.op == "sum":
            return _batch_first(call)
        return call


def _batch_first(call: Call) -> Expr:
    """``sum(x, axes)`` over the batch axis, the last axis and others between as
    ``sum(sum(x, axes=(0,)), the rest)``: the first is a vector sum along the contiguous
    last axis of a row of the output, the rest a short sum along rows, where the whole
    was a sum along rows of scattered terms (one term per batch item and pixel of each
    channel of a conv's bias gradient, added in one scalar chain)."""
    x, a = call.args[0], call.attrs
    nd = x.type.ndim
    axes = sorted(ax % nd for ax in (a.get("axes") or ()))
    if nd < 3 or not axes or axes[0] != 0 or axes[-1] != nd - 1 or len(axes) == nd:
        return call
    # over the batch as one long row (a view): a tile of several vectors, not one of a row
    rows = Call("reshape", (x,), Attrs(shape=(x.shape[0], math.prod(x.shape[1:]))))
    first = Call("reshape", (Call("sum", (rows,), Attrs(dict(a, axes=(0,), keepdims=0))),),
                 Attrs(shape=x.shape[1:]))
    rest = Call("sum", (first,), Attrs(dict(a, axes=tuple(ax - 1 for ax in axes[1:]),
                                            keepdims=0)))
    return Call("reshape", (rest,), Attrs(shape=call.shape), call.name) \
        if rest.shape != call.shape else Call(rest.op, rest.args, rest.attrs, call.name)


def after_backward(body: Expr) -> Expr:
    """``body`` (a differentiated step) with each ``gemm(a, W, trans_b=1)`` of an input
    ``W`` as ``gemm(a, transpose(W))``, and each sum over the batch, the last axis and
    axes between them (not all) summed over the batch first (:func:`_batch_first`).

        >>> after_backward(step.body)    # sum(g, axes=(0, 2, 3)) -> sum(sum(g, (0,)), (1, 2))
    """
    return _AfterBackward().visit(body)


__all__ = ["feature_major", "transposed", "after_backward", "MIN_BATCH"]
