"""Gradient rules of the training-mode ops (:mod:`mlcbook.ops.training`), in graph ops.

- ``batch_norm_train``: with ``xh = (x - mean) / sqrt(var + eps)`` over the batch,
  ``dbias = sum(g)``, ``dscale = sum(g * xh)`` and
  ``dx = scale / sqrt(var + eps) * (g - mean(g) - xh * mean(g * xh))`` (sums and means over
  every axis but the channel axis 1: the batch statistics depend on ``x`` too). The running
  statistics get no gradient: they are buffers.
- ``dropout``: the same mask scales the gradient, so ``dx = dropout(g, counter)`` with the
  same attributes.

    >>> dx, dscale, dbias, _, _ = gradient_rule("batch_norm_train")(bn_call, g)

Importing this module registers the rules.
"""

from __future__ import annotations

from ..graph.expr import Call, Expr
from .autodiff import register_gradient
from .graph_math import call, reshape, scalar


def _channel_axes(x: Expr) -> tuple[int, ...]:
    return tuple(d for d in range(x.type.ndim) if d != 1)


@register_gradient("batch_norm_train")
def _batch_norm_train(c: Call, g: Expr):
    x, scale = c.args[0], c.args[1]
    axes, dt = _channel_axes(x), x.dtype
    per_channel = (1, x.shape[1]) + (1,) * (x.type.ndim - 2)
    dev = call("sub", x, call("mean", x, axes=axes, keepdims=1))
    var = call("mean", call("mul", dev, dev), axes=axes, keepdims=1)
    inv = call("div", scalar(1.0, dt), call("sqrt", call("add", var, scalar(c.attrs["epsilon"],
                                                                              dt))))
    xh = call("mul", dev, inv)
    gxh = call("mul", g, xh)
    dbias = reshape(call("sum", g, axes=axes, keepdims=0), (x.shape[1],))
    dscale = reshape(call("sum", gxh, axes=axes, keepdims=0), (x.shape[1],))
    centered = call("sub", call("sub", g, call("mean", g, axes=axes, keepdims=1)),
                    call("mul", xh, call("mean", gxh, axes=axes, keepdims=1)))
    dx = call("mul", call("mul", reshape(scale, per_channel), inv), centered)
    return dx, dscale, dbias, None, None


@register_gradient("dropout")
def _dropout(c: Call, g: Expr):
    return Call("dropout", (g, c.args[1]), c.attrs), None
