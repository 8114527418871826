"""Data layouts chosen for the kernels (opt_level 3): convolutions run on blocked channels.

In NCHW a convolution's natural vector is a run of output pixels, and late layers of a
network have few pixels (7x7) and many channels (512): vectors are short and predicated.
:func:`convert_layout` rewrites every suitable ``conv`` to ``conv_nchwc`` (see
:mod:`mlcbook.te.ops.layout`): channels in blocks of 16 (``NCHW16c``), weights repacked once
at compile time, a ``to_blocked`` before and a ``from_blocked`` after. Then the
``from_blocked`` sinks through everything that does not care about the layout (elementwise
ops, per-channel constants, pooling, channel concatenation, global average pooling) until
it meets the next ``to_blocked``, where the pair cancels. What is left are transforms at
the edges of the network, where the layout really changes.

    >>> func = convert_layout(func)
    >>> [c.op for c in func.calls()][:4]
    ['to_blocked', 'conv_nchwc', 'add', 'relu']
"""

from __future__ import annotations

import math

import numpy as np

from ...ops import get as get_op
from ...ops.layout import blocked_weight
from ...ops.registry import OpKind
from ...ops.types import Attrs
from ..expr import Call, Constant, Expr, Function
from ..functor import ExprMutator

#: channels per block of the output (one AVX-512 register, two AVX2 registers of float32)
BLOCK = 16


def _in_block(c: int) -> int | None:
    """Input channels per block: 16 where it divides, else the whole of a small C (the RGB
    of a stem convolution), else a smaller power of two."""
    for b in (16, 8):
        if c % b == 0:
            return b
    return c if c <= 16 else next((b for b in (4, 2) if c % b == 0), None)


def _out_block(k: int) -> int | None:
    return next((b for b in (BLOCK, 8) if k % b == 0), None)


def _unblocked_source(e: Expr) -> tuple[Expr, int] | None:
    """(blocked value, block) if ``e`` is ``from_blocked`` of it."""
    if isinstance(e, Call) and e.op == "from_blocked":
        return e.args[0], e.args[0].shape[-1]
    return None


def _per_channel(e: Expr, channels: int, ndim: int) -> np.ndarray | None:
    """The per-channel values of a constant that broadcasts along axis 1 of an NCHW tensor
    (shape (C, 1, 1), (1, C, 1, 1) or a single value), as a (C,) array."""
    if not isinstance(e, Constant):
        return None
    shape = e.data.shape
    if e.data.size == 1:
        return np.full(channels, e.data.reshape(()), e.data.dtype)
    pad = (1,) * (ndim - len(shape)) + tuple(shape)
    if len(pad) == ndim and pad[1] == channels and all(s == 1 for k, s in enumerate(pad) if k != 1):
        return e.data.reshape(channels)
    return None


class _ConvertLayout(ExprMutator):
    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op == "conv":
            return self._conv(new)
        sources = [_unblocked_source(a) for a in new.args]
        if not any(sources):
            return new
        kind = get_op(new.op).kind
        if new.op == "to_blocked":
            src, b = sources[0]
            return src if b == new.attrs["block"] else new
        if kind <= OpKind.BROADCAST and len(new.shape) == 4:
            return self._elementwise(new, sources)
        if new.op in ("max_pool", "avg_pool") and sources[0] and len(new.shape) == 4:
            return self._pool(new, *sources[0])
        if new.op == "global_avg_pool" and sources[0] and len(new.shape) == 4:
            src, b = sources[0]
            return _from(Call("mean", (src,), Attrs(axes=(2, 3), keepdims=1), new.name))
        if new.op == "concat" and new.attrs["axis"] in (1, -3) and len(new.shape) == 4:
            return self._concat(new, sources)
        return new

    def _conv(self, conv: Call) -> Call:
        x, w = conv.args[0], conv.args[1]
        if (len(x.shape) != 4 or conv.attrs["group"] != 1 or not isinstance(w, Constant)
                or (len(conv.args) == 3 and not isinstance(conv.args[2], Constant))):
            return conv
        src = _unblocked_source(x)
        ci, co = _in_block(x.shape[1]), _out_block(w.data.shape[0])
        if src and x.shape[1] % src[1] == 0:
            ci = src[1]  # read the layout the input already has
        if ci is None or co is None:
            return conv
        xb = src[0] if src and src[1] == ci else Call("to_blocked", (x,), Attrs(block=ci))
        wb = Constant(blocked_weight(w.data, ci, co), w.name, w.owner)
        attrs = Attrs(strides=conv.attrs.get("strides"), pads=conv.attrs.get("pads"),
                      dilations=conv.attrs.get("dilations"))
        y = Call("conv_nchwc", (xb, wb), attrs, conv.name)
        if len(conv.args) == 3:
            b = conv.args[2]
            bias = b.data.reshape(b.data.shape[0] // co, co)[:, None, None, :]
            y = Call("add", (y, Constant(np.ascontiguousarray(bias), b.name, b.owner)), Attrs(),
                     f"{conv.name}_bias")
        return _from(y)

    def _elementwise(self, call: Call, sources) -> Call:
        blocks = {b for s in sources if s for _, b in [s]}
        if len(blocks) != 1:
            return call
        b = blocks.pop()
        c = call.shape[1]
        args = []
        for a, s in zip(call.args, sources):
            if s:
                args.append(s[0])
                continue
            v = _per_channel(a, c, 4)
            if v is not None:
                args.append(Constant(np.ascontiguousarray(v.reshape(c // b, 1, 1, b)), a.name))
            elif tuple(a.shape) == tuple(call.shape):
                args.append(Call("to_blocked", (a,), Attrs(block=b)))  # e.g. a residual input
            else:
                return call  # broadcasts some other way: stay in NCHW here
        return _from(Call(call.op, tuple(args), call.attrs, call.name))

    def _concat(self, cat: Call, sources) -> Call:
        blocks = {b for s in sources if s for _, b in [s]}
        b = min(blocks)
        if any(s and s[1] != b for s in sources) or any(a.shape[1] % b for a in cat.args):
            return cat
        args = tuple(s[0] if s else Call("to_blocked", (a,), Attrs(block=b))
                     for a, s in zip(cat.args, sources))
        return _from(Call("concat", args, Attrs(axis=1), cat.name))

    def _pool(self, pool: Call, src: Expr, b: int) -> Call:
        a = pool.attrs
        k = tuple(a["kernel_shape"]) + (1,)
        strides = tuple(a.get("strides") or (1, 1)) + (1,)
        p = tuple(a.get("pads") or (0, 0, 0, 0))
        pads = (p[0], p[1], 0, p[2], p[3], 0)
        dil = tuple(a.get("dilations") or (1, 1)) + (1,)
        attrs = dict(a, kernel_shape=k, strides=strides, pads=pads, dilations=dil)
        return _from(Call(pool.op, (src,), Attrs(attrs), pool.name))


def _from(blocked_value: Call) -> Call:
    return Call("from_blocked", (blocked_value,), Attrs())


def _moves_no_element(call: Call) -> bool:
    """Whether ``call``, a ``to_blocked`` or ``from_blocked``, keeps every element where it is
    in memory: a block of 1 channel, or no spatial extent (e.g. after a global pooling),
    leaves NCHW and NCHW[b]c in the same element order."""
    nchw, blocked = ((call.args[0], call) if call.op == "to_blocked" else (call, call.args[0]))
    nchw, block = nchw.shape, blocked.shape[-1]
    return block == 1 or math.prod(nchw[2:]) == 1


class _LayoutsAsViews(ExprMutator):
    """Identity layout conversions become reshapes, which the plan makes views: no copy."""

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op in ("to_blocked", "from_blocked") and _moves_no_element(new):
            return Call("reshape", new.args, Attrs(shape=tuple(new.shape)), new.name)
        return new


def convert_layout(func: Function) -> Function:
    """``func`` with convolutions in NCHW16c and the layout kept between them (see the module
    docstring); a conversion that moves no element is a reshape (a view, no kernel)."""
    return _LayoutsAsViews().visit_function(_ConvertLayout().visit_function(func))
