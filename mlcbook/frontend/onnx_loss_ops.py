"""Converters of ONNX's losses, ``NegativeLogLikelihoodLoss`` and
``SoftmaxCrossEntropyLoss``, built from graph ops as their ONNX definitions give them: the
class's value is picked per position with ``gather_elements`` along axis 1, weighted by
``gather`` from the class weights (0 where the target is ``ignore_index``), then reduced.

    >>> CONVERTERS["NegativeLogLikelihoodLoss"].attrs
    frozenset({'ignore_index', 'reduction'})

A target outside ``[-C, C)`` that is not ``ignore_index`` is an index out of range, with the
gathers' policy (an ArgumentError at run time).
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from ..tir.expr import FLOAT_DTYPES
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype


def _check_reduction(attrs):
    r = attrs.get("reduction", "mean")
    return [] if r in ("none", "sum", "mean") else [f"reduction={r!r}"]


def _nll(cx, x, target, weight, attrs):
    """The loss of log-probabilities ``x`` (N, C, d...) for classes ``target`` (N, d...)."""
    if x.dtype not in FLOAT_DTYPES:
        raise Unsupported(f"a loss of {x.dtype} values (mlcbook computes it for floats)")
    ignore = attrs.get("ignore_index")
    keep = None
    if ignore is not None:
        ig = Constant(np.asarray(ignore, target.dtype))
        keep = cx.call("logical_not", cx.call("equal", target, ig, suffix="_ignored"),
                       suffix="_kept")
        target = cx.call("where", keep, target, Constant(np.zeros((), target.dtype)),
                         suffix="_target")
    picked = cx.call("gather_elements", x, cx.call("unsqueeze", target, axes=(1,),
                                                   suffix="_target1"), axis=1, suffix="_pick")
    loss = cx.call("neg", cx.call("squeeze", picked, axes=(1,), suffix="_picked"),
                   suffix="_neg")
    w = None
    if weight is not None:
        w = cx.call("gather", weight, target, axis=0, suffix="_weight")
        if keep is not None:
            w = cx.call("where", keep, w, Constant(np.zeros((), x.dtype)), suffix="_wkept")
    elif keep is not None:
        w = cx.call("cast", keep, dtype=x.dtype, suffix="_weight")
    if w is not None:
        loss = cx.call("mul", loss, w, suffix="_weighted")
    reduction = attrs.get("reduction", "mean")
    if reduction == "none":
        return loss
    if reduction == "sum":
        return cx.call("sum", loss, keepdims=0)
    if w is None:
        return cx.call("mean", loss, keepdims=0)
    return cx.call("div", cx.call("sum", loss, keepdims=0, suffix="_sum"),
                   cx.call("sum", w, keepdims=0, suffix="_wsum"))


@converter("NegativeLogLikelihoodLoss", attrs=("ignore_index", "reduction"),
           check=_check_reduction)
@guard_dtype
def _nll_loss(cx, ins, attrs):
    return _nll(cx, ins[0], ins[1], ins[2] if len(ins) > 2 else None, attrs)


@converter("SoftmaxCrossEntropyLoss", attrs=("ignore_index", "reduction"), outputs=2,
           check=_check_reduction)
@guard_dtype
def _softmax_cross_entropy(cx, ins, attrs):
    log_prob = cx.call("log_softmax", ins[0], axis=1, suffix="_log_prob")
    loss = _nll(cx, log_prob, ins[1], ins[2] if len(ins) > 2 else None, attrs)
    return [loss, log_prob]


__all__ = ["CONVERTERS"]
