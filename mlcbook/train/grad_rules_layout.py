"""Gradient rules of the blocked-layout ops (``to_blocked``, ``from_blocked``, ``conv_nchwc``,
``depthwise_nchwc``).

The compiler inserts these ops itself (``mb.compile`` at opt_level 3), so a model rarely has
them before it is differentiated; a graph that does is differentiated through the plain
layout: a blocked conv is the NCHW conv of its unblocked data and weights, and its
gradients are those of that conv, blocked again.
"""

from __future__ import annotations

from ..graph.expr import Call
from ..ops.types import Attrs
from .autodiff import register_gradient
from .graph_math import call
from .grad_rules_nn import conv_gradients


@register_gradient("to_blocked")
def _to_blocked(c, g):
    # the padding's zeros depend on nothing: cropping it off is the whole gradient
    return (call("from_blocked", g, channels=c.args[0].shape[1],
                 groups=c.attrs.get("groups", 1)),)


@register_gradient("from_blocked")
def _from_blocked(c, g):
    return (call("to_blocked", g, block=c.args[0].shape[-1], groups=c.attrs.get("groups", 1)),)


@register_gradient("conv_nchwc")
def _conv_nchwc(c, g):
    x, w = c.args
    kb, cb, kh, kw, ci, co = w.shape
    w4 = call("reshape", call("transpose", w, perm=(0, 5, 1, 4, 2, 3)),
              shape=(kb * co, cb * ci, kh, kw))
    conv = Call("conv", (call("from_blocked", x), w4),
                Attrs(strides=c.attrs.get("strides"), pads=c.attrs.get("pads"),
                      dilations=c.attrs.get("dilations"), group=c.attrs.get("group", 1)))
    dx, dw = conv_gradients(conv, call("from_blocked", g))[:2]
    dw = call("transpose", call("reshape", dw, shape=(kb, co, cb, ci, kh, kw)),
              perm=(0, 2, 4, 5, 3, 1))
    return call("to_blocked", dx, block=ci), dw


@register_gradient("depthwise_nchwc")
def _depthwise_nchwc(c, g):
    x, w = c.args
    cb, kh, kw, ci = w.shape
    w4 = call("reshape", call("transpose", w, perm=(0, 3, 1, 2)), shape=(cb * ci, 1, kh, kw))
    conv = Call("conv", (call("from_blocked", x), w4),
                Attrs(strides=c.attrs.get("strides"), pads=c.attrs.get("pads"),
                      dilations=c.attrs.get("dilations"), group=cb * ci))
    dx, dw = conv_gradients(conv, call("from_blocked", g))[:2]
    dw = call("transpose", call("reshape", dw, shape=(cb, ci, kh, kw)), perm=(0, 2, 3, 1))
    return call("to_blocked", dx, block=ci), dw
