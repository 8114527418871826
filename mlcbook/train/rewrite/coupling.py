"""Coupled axes: everything that must change together when unit k of a layer changes.

Widening or pruning output unit (feature, channel) k of a layer (gemm, conv, or a matmul by
a weight) is only a valid rewrite if every tensor slice indexed by that unit changes with
it: the layer's own weight rows and bias entry (a bias added after a matmul too),
per-channel parameters on the way (BatchNorm, LayerNorm), the *other* operand of a residual
add (its producer must widen too, so the whole residual stream is one group), and the input
slice of each consumer — offset by a concat, spread over ``h*w`` features by a flatten or a
reshape that merges axes. The units live on one axis of each value (axis 1 after a gemm or
conv, the last after ``matmul(x, W)``); transposes, broadcasting and reshapes that keep the
axis are followed, and so are a concat, expand or tile along another axis (a ViT's class
token, whose weight joins the group), a gather along another axis (the class token taken
back out) and fused ``attention``, whose heads (axis 1) are q's, k's and v's together.
:func:`coupled_group` finds that set by walking the graph forward and, through residual
adds, backward (DepGraph's groups).

    >>> g = coupled_group(mb.train.cnn(channels=(4, 6)), "conv2")
    >>> [(s.param, s.axis, s.block, s.kind) for s in g.slices]
    [('conv2.weight', 0, 1, 'source'), ('conv2.bias', 0, 1, 'source'),
     ('fc.weight', 1, 16, 'sink')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import RewriteError
from ...graph.expr import Call, Constant, Expr, Function, Var, post_order
from ...ops import OpKind
from ...ops import get as get_op
from ...ops.types import TensorType
from .ownership import IN, OUT, layer_out_axis, layer_weight, parameters, weight_operand
from .ownership import weight_view

#: a source slice is computed per unit (incoming weights, per-unit parameters); a sink
#: slice reads the unit (the next layer's input weights)
SOURCE, SINK = "source", "sink"
_ON_CHANNELS = ("max_pool", "avg_pool", "global_avg_pool", "batch_norm", "batch_norm_train")
_SAME_AXIS = ("layer_norm", "softmax", "log_softmax", "transpose") + _ON_CHANNELS
_REGROUP = ("flatten", "reshape")
_REDUCE = ("sum", "mean", "max", "min")
#: ops whose operands line up with the output by numpy's trailing alignment, element for
#: element along an axis they do not concatenate or repeat (a class token reaches the
#: batch by expand or tile and joins the patch tokens by a concat on the tokens' axis)
_ALIGNED = ("expand", "tile", "concat")
#: ops with a static target shape, which changes when the units' axis does
_SHAPED = ("reshape", "expand")


@dataclass(frozen=True)
class Slice:
    """Unit k of the group is ``param``'s indices ``offset + k*block + r`` (``r < block``)
    along ``axis``."""

    param: str
    axis: int
    kind: str
    offset: int = 0
    block: int = 1


@dataclass(frozen=True)
class Group:
    """The ``units`` coupled units started from layer ``layer``, and every slice of them."""

    layer: str
    units: int
    slices: tuple[Slice, ...]
    #: reshapes whose output carries the units, ``(call, axis, offset, block, shape)``:
    #: their static target shape changes with the unit count
    reshapes: tuple[tuple[str, int, int, int, tuple], ...] = ()

    def params(self, kind: str | None = None) -> list[str]:
        """The parameters with a slice in the group (of ``kind`` if given)."""
        return [s.param for s in self.slices if kind is None or s.kind == kind]


def follow_reshape(src: tuple, dst: tuple, axis: int) -> tuple[int, int] | None:
    """Where axis ``axis`` of shape ``src`` lands when reshaped to ``dst``: ``(axis', f)``
    if it stays whole as the leading part of ``dst[axis']`` (merged with ``f`` elements of
    the axes after it), None if the reshape splits or scatters it.

        >>> follow_reshape((2, 3, 4, 4), (2, 48), 1)     # a flatten: 16 features per channel
        (1, 16)
        >>> follow_reshape((2, 8, 16), (2, 8, 4, 4), 2)  # heads split off: not followed
    """
    before = math.prod(src[:axis])
    for a in range(len(dst)):
        if math.prod(dst[:a]) != before:
            continue
        run, j = 1, axis
        while j < len(src) and run < dst[a]:
            run, j = run * src[j], j + 1
        if run == dst[a] and j > axis:
            return a, dst[a] // src[axis]
    return None


def regroup(src: tuple, dst: tuple, axis: int, offset: int, block: int):
    """Where units at ``offset + k*block`` of axis ``axis`` of shape ``src`` land when
    reshaped to ``dst``: ``(axis', offset', block')``, or None. Merging the axis with the
    ones after it multiplies the block; splitting it is followed when each unit is whole
    groups of the split-off part (heads of ``dh`` features: ``(B, T, H*dh)`` to
    ``(B, T, H, dh)`` with block ``dh`` gives block 1 on the heads axis).

        >>> regroup((2, 3, 8), (2, 3, 2, 4), 2, 0, 4)
        (2, 0, 1)
    """
    merged = follow_reshape(src, dst, axis)
    if merged is not None:
        return merged[0], offset * merged[1], block * merged[1]
    for a in range(len(dst)):
        if math.prod(dst[:a]) != math.prod(src[:axis]) or src[axis] % dst[a]:
            continue
        inner = src[axis] // dst[a]
        run, j = 1, a + 1
        while j < len(dst) and run < inner:
            run, j = run * dst[j], j + 1
        if run == inner and offset % inner == 0 and block % inner == 0:
            return a, offset // inner, block // inner
    return None


def _shape(node: Expr) -> tuple:
    return tuple(node.type.shape)


def _keeps(call: Call, axis: int) -> bool:
    """Whether :data:`_ALIGNED` ``call`` passes its output axis ``axis`` through as is."""
    if call.op == "concat":
        return call.attrs["axis"] % len(_shape(call)) != axis
    if call.op == "tile":
        return call.attrs["repeats"][axis] == 1
    return True


def _gather_axis(call: Call, axis: int, forward: bool) -> int | None:
    """Through a gather of constant indices along another axis: where data axis ``axis``
    lands in the output (``forward``), or which data axis output axis ``axis`` comes from;
    None if the units are the gathered axis."""
    at, idx = call.attrs["axis"] % len(_shape(call.args[0])), len(_shape(call.args[1]))
    if not isinstance(call.args[1], Constant):
        return None
    if forward:
        return None if axis == at else axis if axis < at else axis - 1 + idx
    return axis if axis < at else None if axis < at + idx else axis + 1 - idx


def _kept_axes(call: Call) -> list[int]:
    """The input axes a reduction keeps, in order: output axis j is input axis ``[j]``."""
    nd = len(_shape(call.args[0]))
    axes = call.attrs["axes"]
    reduced = set(range(nd)) if axes is None else {a % nd for a in axes}
    if call.attrs["keepdims"]:
        return [a if a not in reduced else -1 for a in range(nd)]
    return [a for a in range(nd) if a not in reduced]


class _Walk:
    def __init__(self, func: Function, layer: str):
        self.func, self.layer = func, layer
        self.info = parameters(func)
        self.users: dict[int, list[tuple[Call, int]]] = {}
        self.calls: dict[str, Call] = {}
        for n in post_order(func.body):
            if isinstance(n, Call):
                self.calls[n.name] = n
                for k, a in enumerate(n.args):
                    self.users.setdefault(id(a), []).append((n, k))
        self.seen: set[int] = set()
        self.slices: dict[tuple[str, int], Slice] = {}
        self.reshapes: list[tuple[str, int, int, int, tuple]] = []

    def add(self, c: Constant, axis: int, kind: str, offset: int, block: int) -> None:
        self.slices.setdefault((c.name, axis), Slice(c.name, axis, kind, offset, block))

    def enter(self, node: Expr, axis: int, offset: int, block: int, back: bool = False):
        """``node``'s axis ``axis`` carries the group's units at ``offset + k*block``; with
        ``back``, what produces ``node`` joins the group too (a residual add's operand)."""
        if id(node) in self.seen:
            return
        self.seen.add(id(node))
        if isinstance(node, Call) and node.op in _SHAPED:
            self.reshapes.append((node.name, axis, offset, block, _shape(node)))
        if back:
            self.backward(node, axis, offset, block)
        self.forward(node, axis, offset, block)

    def source(self, call: Call, axis: int, offset: int, block: int) -> bool:
        """Add layer ``call``'s incoming weight (and bias) if it produces the units on
        ``axis``; False if ``call`` is no layer."""
        pos = layer_weight(call)
        if pos is None:
            return False
        if layer_out_axis(call) != axis:
            raise RewriteError(f"the units of layer {self.layer!r} are added to the output of "
                               f"{call.op} {call.name!r} along its axis {axis}, not along its "
                               "units. Instead: rewrite another layer")
        w = weight_operand(call.args[pos])
        self.add(w, self.info[w.name].axis(OUT), SOURCE, offset, block)
        bias = weight_operand(call.args[2]) if len(call.args) > 2 else None
        if call.op in ("gemm", "conv") and bias is not None:
            self.add(bias, 0, SOURCE, offset, block)
        return True

    def backward(self, node: Expr, axis: int, offset: int, block: int) -> None:
        if isinstance(node, Var) or not isinstance(node, Call):
            raise RewriteError(f"the units of layer {self.layer!r} reach the model input "
                               f"{getattr(node, 'name', node)!r} through a residual add; the "
                               "input's width is fixed. Instead: rewrite a layer whose units "
                               "are not added to the input")
        if self.source(node, axis, offset, block):
            return
        if node.op in _REGROUP and not isinstance(node.args[0], Constant):
            back = regroup(_shape(node), _shape(node.args[0]), axis, offset, block)
            if back is not None:
                self.enter(node.args[0], *back, back=True)
                return
        if node.op == "matmul" and len(_shape(node)) >= 2:
            self.matmul_back(node, axis, offset, block)
            return
        if node.op == "attention":
            for a, a_axis in self.attention_args(node, axis):
                self.enter(a, a_axis, offset, block, back=True)
            return
        if node.op in _REDUCE:
            self.enter(node.args[0], _kept_axes(node)[axis], offset, block, back=True)
            return
        if node.op == "gather" and _gather_axis(node, axis, False) is not None:
            self.enter(node.args[0], _gather_axis(node, axis, False), offset, block, back=True)
            return
        if node.op in _REGROUP + ("matmul", "gather") or \
                (node.op in _ALIGNED and not _keeps(node, axis)):
            raise RewriteError(f"the units of layer {self.layer!r} are added to the output of "
                               f"{node.op} {node.name!r}; following a group back through it "
                               "is not supported. Instead: rewrite another layer")
        for a, a_axis in self.arg_axes(node, axis, offset, block):
            self.enter(a, a_axis, offset, block, back=True)

    def matmul_back(self, call: Call, axis: int, offset: int, block: int) -> None:
        """Back through a matmul of computed values: a batch axis is both operands', the
        rows are the left one's, the columns the right one's."""
        nd = len(_shape(call))
        for k, a in enumerate(call.args):
            a_nd = len(_shape(a))
            if axis < nd - 2:
                a_axis = axis - (nd - a_nd)
                if a_axis < 0 or _shape(a)[a_axis] == 1:
                    continue
            elif (axis == nd - 2) != (k == 0) or a_nd < 2:
                continue
            else:
                a_axis = a_nd - (2 if k == 0 else 1)
            self.enter(a, a_axis, offset, block, back=True)

    def arg_axes(self, call: Call, axis: int, offset: int, block: int):
        """The computed arguments of axis-preserving ``call`` that carry the units of its
        output ``axis`` (with their axis); named constants among them become source
        slices."""
        out_nd = len(_shape(call))
        if call.op in _ON_CHANNELS and axis != 1:
            raise RewriteError(f"the units of layer {self.layer!r} reach {call.op} "
                               f"{call.name!r} on axis {axis}; it works per channel (axis 1). "
                               "Instead: rewrite a layer whose units are its channels")
        if call.op in ("softmax", "log_softmax") and axis == call.attrs["axis"] % out_nd:
            raise RewriteError(f"the units of layer {self.layer!r} are normalized together by "
                               f"{call.op} {call.name!r}; replicating one changes the others. "
                               "Instead: rewrite a layer before another axis's softmax")
        out = []
        for k, a in enumerate(call.args):
            if call.op == "transpose":
                perm = call.attrs["perm"] or tuple(reversed(range(out_nd)))
                a_axis = perm[axis]
            elif call.op in ("batch_norm", "batch_norm_train") and k > 0:
                a_axis = 0                              # per-channel vectors
            elif call.op in _ON_CHANNELS or (call.op == "layer_norm" and k == 0):
                a_axis = axis
            else:                                       # numpy broadcasting, trailing axes
                a_axis = axis - (out_nd - len(_shape(a)))
            if a_axis < 0 or _shape(a)[a_axis] == 1:
                continue                                # broadcast along the units
            w, perm = weight_view(a)
            if w is not None:
                self.add(w, a_axis if perm is None else perm[a_axis], SOURCE, offset, block)
            elif isinstance(a, Constant):
                raise RewriteError(f"an unnamed constant of {call.op} {call.name!r} spans the "
                                   f"units of layer {self.layer!r}, so it cannot be rewritten "
                                   "with them. Instead: give the constant a name (an ONNX "
                                   "initializer)")
            else:
                out.append((a, a_axis))
        return out

    def forward(self, node: Expr, axis: int, offset: int, block: int) -> None:
        if node is self.func.body:
            raise RewriteError(f"the units of layer {self.layer!r} are the model's output; its "
                               "width is fixed by the labels. Instead: rewrite a hidden layer")
        for user, pos in self.users.get(id(node), []):
            self.into(user, pos, node, axis, offset, block)

    def into(self, user: Call, pos: int, node: Expr, axis: int, offset: int, block: int):
        """The units, on ``axis`` of ``node`` (argument ``pos`` of ``user``), flow on."""
        op, nd = user.op, len(_shape(node))
        wpos = layer_weight(user)
        if wpos is not None and (user.op == "matmul" or pos == 0):
            self.into_layer(user, wpos, node, axis, offset, block)
        elif op == "matmul":
            self.into_matmul(user, pos, node, axis, offset, block)
        elif op == "attention" and pos < 3:
            for a, a_axis in self.attention_args(user, axis, pos):
                if a is not node:
                    self.enter(a, a_axis, offset, block, back=True)
            self.enter(user, axis, offset, block)
        elif op in _REGROUP:
            to = regroup(_shape(node), _shape(user), axis, offset, block)
            if to is None:
                raise RewriteError(
                    f"the units of layer {self.layer!r} (axis {axis} of shape {_shape(node)}) "
                    f"are split across axes by {op} {user.name!r} to {_shape(user)} (attention "
                    "heads are split off so); following them is not supported. Instead: "
                    "rewrite a layer whose units keep their axis, or whole heads (name the "
                    "reshape that splits them off)")
            self.enter(user, *to)
        elif op in _REDUCE:
            kept = _kept_axes(user)
            if axis not in kept:
                raise RewriteError(f"the units of layer {self.layer!r} are reduced together by "
                                   f"{op} {user.name!r}; replicating one would count it twice. "
                                   "Instead: rewrite a layer whose units the reduction keeps")
            self.enter(user, kept.index(axis), offset, block)
        elif op == "concat" and user.attrs["axis"] % nd == axis:
            before = sum(_shape(a)[axis] for a in user.args[:pos])
            self.enter(user, axis, before + offset, block)
        elif op == "gather" and pos == 0 and _gather_axis(user, axis, True) is not None:
            self.enter(user, _gather_axis(user, axis, True), offset, block)
        elif get_op(op).kind <= OpKind.BROADCAST or op in _SAME_AXIS or \
                (op in _ALIGNED and _keeps(user, axis + len(_shape(user)) - nd)):
            if op == "transpose":
                perm = user.attrs["perm"] or tuple(reversed(range(nd)))
                out_axis = list(perm).index(axis)
            elif op in _SAME_AXIS:
                out_axis = axis
            else:
                out_axis = axis + len(_shape(user)) - nd
            for a, a_axis in self.arg_axes(user, out_axis, offset, block):
                if a is not node:
                    self.enter(a, a_axis, offset, block, back=True)
            self.enter(user, out_axis, offset, block)
        else:
            raise RewriteError(f"the units of layer {self.layer!r} flow into {op} "
                               f"{user.name!r}, whose coupling is unknown. Instead: rewrite "
                               "a layer followed by elementwise ops, norms, pools, residual "
                               "adds, transposes, reshapes that keep the units or split off "
                               "whole heads, reductions over other axes, concat, expand, "
                               "tile, gather on other axes and gemm/conv/matmul")

    def into_layer(self, user: Call, wpos: int, node, axis: int, offset: int, block: int):
        """Into a layer as its input: its weight's input axis is a sink, unless the units
        are rows (or batch entries) a matmul keeps."""
        nd = len(_shape(node))
        contracted = 1 if user.op in ("gemm", "conv") else (nd - 1 if wpos == 1 else nd - 2)
        w = weight_operand(user.args[wpos])
        if axis == contracted:
            self.add(w, self.info[w.name].axis(IN), SINK, offset, block)
            return
        if user.op == "matmul" and nd >= 2:
            kept = nd - 2 if wpos == 1 else nd - 1
            view = _shape(user.args[wpos])
            w_axis = axis - (nd - len(view))
            if axis == kept or (axis < nd - 2 and (w_axis < 0 or view[w_axis] == 1)):
                self.enter(user, axis + len(_shape(user)) - nd, offset, block)
                return
        raise RewriteError(f"the units of layer {self.layer!r} enter {user.op} {user.name!r} "
                           f"on axis {axis}, which it neither contracts nor keeps. Instead: "
                           "rewrite a layer whose units are the next layer's input features")

    def attention_args(self, call: Call, axis: int, pos: int = 2) -> list[tuple[Expr, int]]:
        """The operands of fused ``attention`` that carry the units of its output ``axis``
        (entered from operand ``pos``):
        whole heads (axis 1) are q's, k's and v's heads, each head attending on its own;
        the value features (axis 3) are v's. Query and key features are contracted into the
        scores, where replicas would count twice."""
        q, k, v = call.args[:3]
        if not isinstance(call.type, TensorType) or axis not in (1, 3) or \
                (axis == 3 and pos != 2):
            raise RewriteError(f"the units of layer {self.layer!r} are contracted by attention "
                               f"{call.name!r} (or it returns its scores too); replicating "
                               "them is not exact. Instead: rewrite whole heads (name the "
                               "reshape that splits them off), or the value projection")
        if axis == 3:
            return [(v, 3)]
        mask = call.args[3] if call.attrs["has_mask"] else None
        if _shape(k)[1] != _shape(q)[1] or (mask is not None and len(_shape(mask)) >= 3
                                            and _shape(mask)[-3] != 1):
            raise RewriteError(f"attention {call.name!r} shares key/value heads among query "
                               "heads, or masks each head apart: its heads cannot be "
                               "replicated alone. Instead: rewrite the MLP or the stream")
        return [(q, 1), (k, 1), (v, 1)]

    def into_matmul(self, user: Call, pos: int, node, axis: int, offset: int, block: int):
        """A matmul of two computed values (attention): units on a kept axis flow through;
        contracted ones would be multiplied by replicas of the other operand's."""
        nd, other = len(_shape(node)), user.args[1 - pos]
        kept = nd - 2 if pos == 0 else nd - 1
        if nd < 2 or (axis != kept and axis >= nd - 2):
            raise RewriteError(f"the units of layer {self.layer!r} are contracted with another "
                               f"computed value by matmul {user.name!r} (attention scores "
                               "q.k); replicating them is not exact. Instead: rewrite the MLP "
                               "layers, or the value projection whose units the output "
                               "projection reads")
        out_axis = axis + len(_shape(user)) - nd
        if axis < nd - 2:                   # a batch axis: the other operand's joins
            o_axis = axis - (nd - len(_shape(other)))
            if o_axis >= 0 and _shape(other)[o_axis] != 1:
                self.enter(other, o_axis, offset, block, back=True)
        self.enter(user, out_axis, offset, block)


def _heads_axis(call: Call) -> int | None:
    """The axis a reshape splits off the features as heads: the first output axis that
    merges back into the input's longer last axis ((B, T, H*dh) -> (B, T, H, dh): 2)."""
    for a in range(len(_shape(call))):
        back = follow_reshape(_shape(call), _shape(call.args[0]), a)
        if back is not None and back[1] > 1 and back[0] == len(_shape(call.args[0])) - 1:
            return a
    return None


def coupled_group(func: Function, layer: str) -> Group:
    """The coupled group of the output units of layer ``layer`` (a gemm, conv or a matmul by
    a weight) in ``func``; or, naming a reshape that splits a projection into attention
    heads, the group of those heads (q, k, v and the output projection, whole heads)."""
    walk = _Walk(func, layer)
    call = walk.calls.get(layer)
    if call is not None and call.op == "reshape" and _heads_axis(call) is not None:
        axis = _heads_axis(call)
    elif call is None or layer_weight(call) is None:
        layers = [n for n, c in walk.calls.items() if layer_weight(c) is not None or
                  (c.op == "reshape" and _heads_axis(c) is not None)]
        raise RewriteError(f"{layer!r} is not a layer (a gemm, conv or matmul by a named "
                           f"weight, or a reshape splitting off heads) of {func.name!r}. "
                           f"Instead: one of {layers}")
    else:
        axis = layer_out_axis(call)
    walk.enter(call, axis, 0, 1, back=True)
    return Group(layer, call.type.shape[axis], tuple(walk.slices.values()),
                 tuple(walk.reshapes))


__all__ = ["SOURCE", "SINK", "Slice", "Group", "coupled_group", "follow_reshape", "regroup"]
