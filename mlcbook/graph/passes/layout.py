"""Data layouts chosen for the kernels (opt_level 3): convolutions run on blocked channels.

In NCHW a convolution's natural vector is a run of output pixels, and late layers of a
network have few pixels (7x7) and many channels (512): vectors are short and predicated.
:func:`convert_layout` rewrites every suitable ``conv`` to ``conv_nchwc`` (see
:mod:`mlcbook.te.ops.layout`): channels in blocks as wide as the target's vectors make them
(:func:`~mlcbook.rules.tile_size.channel_block`: 16, ``NCHW16c``), weights repacked once at
compile time, a ``to_blocked`` before and a ``from_blocked`` after. Then the
``from_blocked`` sinks through everything that does not care about the layout (elementwise
ops, per-channel constants, pooling, channel concatenation, global average pooling) until
it meets the next ``to_blocked``, where the pair cancels. What is left are transforms at
the edges of the network, where the layout really changes.

A channel count the block does not divide is padded with zeros to whole blocks (1000
channels: 63 blocks of 16) rather than left in NCHW, and a grouped conv (AlexNet's 2 groups,
shufflenet's 4) is blocked per group, each group's channels padded on their own
(:class:`Layout`); a padded layout flows on only through ops that keep its zeros finite
(:data:`FINITE_ON_ZERO`), so the next conv's zero weights cancel them. A grouped 1x1 conv
whose groups would be padded (shufflenet's 4 groups of 34 or 68 channels) runs instead as a
batched matmul in NCHW (:func:`_grouped_matmul`), and the elementwise ops after it on its
rows, where fusion puts them in its kernel. A depthwise conv runs
in blocks (``depthwise_nchwc``, each channel in its own lane) when its input already is;
else it stays in NCHW.

    >>> func = convert_layout(func)
    >>> [c.op for c in func.calls()][:4]
    ['to_blocked', 'conv_nchwc', 'add', 'relu']
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...codegen.target import Target
from ...ops import get as get_op
from ...ops.layout import blocked, blocked_weight, depthwise_weight, nchwc_takes_pads
from ...ops.registry import OpKind
from ...ops.types import Attrs
from ..expr import Call, Constant, Expr, Function
from ..functor import ExprMutator
from ...rules.tile_size import channel_block

#: ops a padded layout may flow through: each maps the zeros of the padding to finite values
#: (a later conv multiplies them by zero weights, which a NaN or an infinity would survive)
FINITE_ON_ZERO = frozenset({"add", "sub", "mul", "relu", "clip", "leaky_relu", "sigmoid",
                            "tanh", "hard_sigmoid", "hard_swish", "swish", "gelu", "elu",
                            "selu", "celu", "maximum", "minimum", "neg", "abs", "exp", "erf"})
#: broadcast ops whose other inputs are one value or one per index of an ``axis`` attribute
_AXIS_PARAMETERS = frozenset({"quantize_linear", "dequantize_linear"})
#: most output lanes a padded block may spend per useful one (34 channels in 3 blocks of 16:
#: 1.41); beyond it the conv stays in NCHW
MAX_PADDING = 1.5


@dataclass(frozen=True)
class Layout:
    """How ``channels`` NCHW channels lie in blocks of ``block``: in ``groups`` groups, each
    padded with zeros to whole blocks (``groups`` is 1 when nothing is padded: then every
    grouping is the same memory).

        >>> Layout.of(16, 4, 272)     # shufflenet: 4 groups of 68 channels, 5 blocks each
        Layout(block=16, groups=4, channels=272)
        >>> Layout.of(16, 4, 256)     # 64 per group: no padding, one layout
        Layout(block=16, groups=1, channels=256)
    """

    block: int
    groups: int
    channels: int

    @staticmethod
    def of(block: int, groups: int, channels: int) -> "Layout":
        return Layout(block, groups if (channels // groups) % block else 1, channels)

    @property
    def padded(self) -> bool:
        return (self.channels // self.groups) % self.block != 0

    def to_blocked(self, x: Expr) -> Call:
        attrs = Attrs(block=self.block, groups=self.groups) if self.padded \
            else Attrs(block=self.block)
        return Call("to_blocked", (x,), attrs)

    def from_blocked(self, y: Expr) -> Call:
        attrs = Attrs(channels=self.channels, groups=self.groups) if self.padded else Attrs()
        return Call("from_blocked", (y,), attrs)

    def constant(self, values: np.ndarray) -> np.ndarray:
        """Per-channel ``values`` (C,) as a blocked constant (C'/b, 1, 1, b)."""
        v = values.reshape(1, self.channels, 1, 1)
        return blocked(v, self.block, self.groups)[0]


def _in_block(c: int, lanes: int) -> int:
    """Input channels per block (of one group): the lanes, or half of them, where they
    divide; else 1: the input read as it is, NCHW being NCHW1c (no copy). The conv
    broadcasts one input value per step whatever the block, so a block of 1 costs nothing
    there, and blocking a stem's 3 channels or shufflenet's 68 per group was a transposing
    copy (shufflenet ran 10% faster without them, resnet50 3%, on Zen 5)."""
    return next((b for b in (lanes, lanes // 2) if b and c % b == 0), 1)


def _out_block(k: int, lanes: int) -> int | None:
    """Output channels per block (of one group): the lanes, the last block padded when they
    do not divide, unless that wastes more than :data:`MAX_PADDING`; then half the lanes
    where they divide; else None (the conv stays in NCHW)."""
    if -(-k // lanes) * lanes <= MAX_PADDING * k:
        return lanes
    return lanes // 2 if k % (lanes // 2) == 0 else None


def _unblocked_source(e: Expr) -> tuple[Expr, Layout] | None:
    """(blocked value, its layout) if ``e`` is ``from_blocked`` of it."""
    if isinstance(e, Call) and e.op == "from_blocked":
        return e.args[0], Layout.of(e.args[0].shape[-1], e.attrs.get("groups", 1), e.shape[1])
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


def _with_bias(y: Call, conv: Call, layout: Layout) -> Call:
    """``y``, a blocked conv, plus ``conv``'s bias (if it has one) as a blocked constant."""
    if len(conv.args) < 3:
        return y
    b = conv.args[2]
    return Call("add", (y, Constant(layout.constant(b.data), b.name, b.owner)), Attrs(),
                f"{conv.name}_bias")


def _pointwise(conv: Call) -> bool:
    """Whether ``conv`` is a 1x1 convolution of stride 1 without padding: a matrix product
    over the channels at every pixel."""
    a = conv.args[1].data.shape[2:]
    return (tuple(a) == (1, 1) and all(s == 1 for s in conv.attrs.get("strides") or (1, 1))
            and not any(conv.attrs.get("pads") or ()))


def _grouped_matmul(conv: Call) -> Call:
    """A grouped 1x1 conv whose channels per group do not fill blocks (shufflenet's 4 groups
    of 34 or 68) as a batched matrix product in NCHW, the groups as its batch and the pixels
    as its columns: ``W[g] @ X[g]`` with ``X[g]`` the group's (channels, H*W) rows. Blocked,
    each group's channels were padded to whole blocks (34 -> 48) and the shuffle that follows
    such convs needed a copy out of the blocks and back; here the reshapes are views and
    the vector runs along the pixels.

        >>> _grouped_matmul(conv).op      # (1, 136, 28, 28) in 4 groups
        'reshape'
    """
    x, w = conv.args[0], conv.args[1]
    n, c, h, wd = x.shape
    k, g = w.data.shape[0], conv.attrs["group"]
    rows = Call("reshape", (x,), Attrs(shape=(n, g, c // g, h * wd)), f"{conv.name}_rows")
    wg = Constant(np.ascontiguousarray(w.data.reshape(g, k // g, c // g)), w.name, w.owner)
    y = Call("matmul", (wg, rows), Attrs(), conv.name)
    if len(conv.args) == 3:
        b = conv.args[2]
        y = Call("add", (y, Constant(b.data.reshape(g, k // g, 1), b.name, b.owner)), Attrs(),
                 f"{conv.name}_bias")
    return Call("reshape", (y,), Attrs(shape=(n, k, h, wd)), f"{conv.name}_nchw")


def _rows_source(e: Expr) -> Expr | None:
    """The (N, groups, channels, pixels) value ``e`` reshapes to NCHW, if ``e`` is such a
    reshape (:func:`_grouped_matmul`'s output), else None."""
    if not (isinstance(e, Call) and e.op == "reshape" and len(e.shape) == 4):
        return None
    inner = e.args[0].shape
    n, c, h, w = e.shape
    if len(inner) == 4 and inner[0] == n and inner[1] * inner[2] == c and inner[3] == h * w:
        return e.args[0]
    return None


def _into_rows(call: Call) -> Call:
    """An elementwise ``call`` on a grouped matmul's NCHW view computed on its rows instead and
    viewed as NCHW after it, so that fusion (which stops at views) puts it in the matmul's
    kernel: a same-shaped operand (a residual) is viewed as rows too, a per-channel constant
    reshaped to (groups, channels, 1); anything else leaves ``call`` as it is."""
    rows = [_rows_source(a) for a in call.args]
    inner = next((r for r in rows if r is not None), None)
    if inner is None:
        return call
    n, g, k, p = inner.shape
    args = []
    for a, r in zip(call.args, rows):
        v = _per_channel(a, g * k, 4)
        if r is not None and tuple(r.shape) == tuple(inner.shape):
            args.append(r)
        elif tuple(a.shape) == tuple(call.shape):
            args.append(Call("reshape", (a,), Attrs(shape=tuple(inner.shape)), f"{a.name}_rows"))
        elif v is not None:
            args.append(Constant(np.ascontiguousarray(v.reshape(g, k, 1)), a.name, a.owner))
        else:
            return call
    y = Call(call.op, tuple(args), call.attrs, call.name)
    return Call("reshape", (y,), Attrs(shape=tuple(call.shape)), f"{call.name}_nchw")


class _ConvertLayout(ExprMutator):
    def __init__(self, target: Target):
        super().__init__()
        self.lanes = channel_block(target)

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op == "conv":
            return self._conv(new)
        sources = [_unblocked_source(a) for a in new.args]
        kind = get_op(new.op).kind
        if not any(sources):
            if kind <= OpKind.BROADCAST and len(new.shape) == 4:
                return _into_rows(new)
            return new
        if new.op == "to_blocked":
            src, layout = sources[0]
            wanted = Layout.of(new.attrs["block"], new.attrs.get("groups", 1), new.args[0].shape[1])
            return src if layout == wanted else new
        if kind <= OpKind.BROADCAST and len(new.shape) == 4:
            return self._elementwise(new, sources)
        if new.op in ("max_pool", "avg_pool") and sources[0] and len(new.shape) == 4:
            return self._pool(new, *sources[0])
        if new.op == "global_avg_pool" and sources[0] and len(new.shape) == 4:
            src, layout = sources[0]
            return layout.from_blocked(Call("mean", (src,), Attrs(axes=(2, 3), keepdims=1),
                                            new.name))
        if new.op == "concat" and new.attrs["axis"] in (1, -3) and len(new.shape) == 4:
            return self._concat(new, sources)
        return new

    def _conv(self, conv: Call) -> Call:
        x, w = conv.args[0], conv.args[1]
        group = conv.attrs["group"]
        if (len(x.shape) != 4 or not isinstance(w, Constant)
                or (len(conv.args) == 3 and not isinstance(conv.args[2], Constant))):
            return conv
        k, cg = w.data.shape[:2]
        if group > 1 and cg == 1:
            return self._depthwise(conv)
        if not nchwc_takes_pads(conv.attrs.get("pads"), w.data.shape[2:],
                                conv.attrs.get("dilations")):
            return conv   # a pad wider than the kernel: NCHW's conv takes it, NCHWc's not
        co = _out_block(k // group, self.lanes)
        ci = _in_block(cg, self.lanes)
        if group > 1 and _pointwise(conv) and (co is None or Layout.of(co, group, k).padded
                                               or ci == 1):
            return _grouped_matmul(conv)
        if co is None:
            return conv
        src = _unblocked_source(x)
        if src and Layout.of(src[1].block, group, x.shape[1]) == src[1]:
            ci = src[1].block  # read the layout the input already has
        layout_in, layout_out = Layout.of(ci, group, x.shape[1]), Layout.of(co, group, k)
        xb = src[0] if src and src[1] == layout_in else layout_in.to_blocked(x)
        wb = Constant(blocked_weight(w.data, ci, co, group), w.name, w.owner)
        attrs = dict(strides=conv.attrs.get("strides"), pads=conv.attrs.get("pads"),
                     dilations=conv.attrs.get("dilations"))
        if group > 1:
            attrs["group"] = group
        y = Call("conv_nchwc", (xb, wb), Attrs(attrs), conv.name)
        return layout_out.from_blocked(_with_bias(y, conv, layout_out))

    def _depthwise(self, conv: Call) -> Call:
        """A depthwise conv (one input channel per output channel) whose input is already in
        blocks of the lanes (a conv's output) stays in them, each channel's taps in its lane
        (``depthwise_nchwc``): in blocks every load is a whole vector, strided or not, and no
        copy leaves the layout. On NCHW data (shufflenet's, after a channel shuffle) it
        stays in NCHW: copying a 56x56 map of 272 channels into blocks took longer (95 us on
        Zen 5) than the strided NCHW conv gained (153 -> 84 us); so do a channel multiplier
        and channels that are not whole blocks."""
        x, w = conv.args[0], conv.args[1]
        c, b = x.shape[1], self.lanes
        layout = Layout(b, 1, c)
        src = _unblocked_source(x)
        if w.data.shape[0] != c or c % b or not (src and src[1] == layout) \
                or not nchwc_takes_pads(conv.attrs.get("pads"), w.data.shape[2:],
                                        conv.attrs.get("dilations")):
            return conv
        xb = src[0]
        wb = Constant(depthwise_weight(w.data, b), w.name, w.owner)
        y = Call("depthwise_nchwc", (xb, wb),
                 Attrs(strides=conv.attrs.get("strides"), pads=conv.attrs.get("pads"),
                       dilations=conv.attrs.get("dilations")), conv.name)
        return layout.from_blocked(_with_bias(y, conv, layout))

    def _elementwise(self, call: Call, sources) -> Call:
        layouts = {layout for s in sources if s for _, layout in [s]}
        if len(layouts) != 1:
            return call
        layout = layouts.pop()
        if layout.padded and call.op not in FINITE_ON_ZERO:
            return call
        c = call.shape[1]
        args = []
        for a, s in zip(call.args, sources):
            if s:
                args.append(s[0])
                continue
            if call.op in _AXIS_PARAMETERS:
                # a scale or zero point is one value or one per index of ``axis``, never a
                # broadcast shape: only one value reads the same in any layout
                if not (isinstance(a, Constant) and a.data.size == 1):
                    return call
                args.append(a)
                continue
            v = _per_channel(a, c, 4)
            if v is not None:
                args.append(Constant(layout.constant(v), a.name))
            elif tuple(a.shape) == tuple(call.shape):
                args.append(layout.to_blocked(a))  # e.g. a residual input
            else:
                return call  # broadcasts some other way: stay in NCHW here
        return layout.from_blocked(Call(call.op, tuple(args), call.attrs, call.name))

    def _concat(self, cat: Call, sources) -> Call:
        layouts = [layout for s in sources if s for _, layout in [s]]
        if any(layout.padded for layout in layouts):
            return cat
        b = min(layout.block for layout in layouts)
        if any(layout.block != b for layout in layouts) or any(a.shape[1] % b for a in cat.args):
            return cat
        whole = Layout(b, 1, cat.shape[1])
        args = tuple(s[0] if s else Layout(b, 1, a.shape[1]).to_blocked(a)
                     for a, s in zip(cat.args, sources))
        return whole.from_blocked(Call("concat", args, Attrs(axis=1), cat.name))

    def _pool(self, pool: Call, src: Expr, layout: Layout) -> Call:
        a = pool.attrs
        k = tuple(a["kernel_shape"]) + (1,)
        strides = tuple(a.get("strides") or (1, 1)) + (1,)
        p = tuple(a.get("pads") or (0, 0, 0, 0))
        pads = (p[0], p[1], 0, p[2], p[3], 0)
        dil = tuple(a.get("dilations") or (1, 1)) + (1,)
        attrs = dict(a, kernel_shape=k, strides=strides, pads=pads, dilations=dil)
        return layout.from_blocked(Call(pool.op, (src,), Attrs(attrs), pool.name))


def _moves_no_element(call: Call) -> bool:
    """Whether ``call``, a ``to_blocked`` or ``from_blocked``, keeps every element where it is
    in memory: a block of 1 channel, or no spatial extent (e.g. after a global pooling),
    leaves NCHW and NCHW[b]c in the same element order."""
    nchw, blocked = ((call.args[0], call) if call.op == "to_blocked" else (call, call.args[0]))
    nchw, block = nchw.shape, blocked.shape[-1]
    return nchw[1] == blocked.shape[1] * block and (block == 1 or math.prod(nchw[2:]) == 1)


class _LayoutsAsViews(ExprMutator):
    """Identity layout conversions become reshapes, which the plan makes views: no copy."""

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op in ("to_blocked", "from_blocked") and _moves_no_element(new):
            return Call("reshape", new.args, Attrs(shape=tuple(new.shape)), new.name)
        return new


def convert_layout(func: Function, target=None) -> Function:
    """``func`` with convolutions in blocked channels, as many per block as
    :func:`~mlcbook.rules.tile_size.channel_block` gives for ``target`` (default: this
    machine), and the layout kept between them (see the module docstring); a conversion that
    moves no element is a reshape (a view, no kernel)."""
    mutator = _ConvertLayout(Target(target or "llvm"))
    return _LayoutsAsViews().visit_function(mutator.visit_function(func))
