"""Coupled axes: everything that must change together when unit k of a layer changes.

Widening or pruning output unit (feature, channel) k of a gemm or conv is only a valid
rewrite if every tensor slice indexed by that unit changes with it: the layer's own
weight rows and bias entry, per-channel parameters on the way (BatchNorm, LayerNorm, a 1-d
bias added later), the *other* operand of a residual add (its producer must widen too, so
the whole residual stream is one group), and the input slice of each consumer — offset
by a concat, spread over ``h*w`` features by a flatten. :func:`coupled_group` finds that
set by walking the graph forward and, through residual adds, backward (DepGraph's groups).

    >>> g = coupled_group(mb.train.cnn(channels=(4, 6)), "conv2")
    >>> [(s.param, s.axis, s.block, s.kind) for s in g.slices]
    [('conv2.weight', 0, 1, 'source'), ('conv2.bias', 0, 1, 'source'),
     ('fc.weight', 1, 16, 'sink')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import RewriteError
from ...graph.expr import Call, Constant, Expr, Function, Var, children, post_order
from ...ops import OpKind
from ...ops import get as get_op
from .ownership import parameters

#: a source slice is computed per unit (incoming weights, per-unit parameters); a sink
#: slice reads the unit (the next layer's input weights)
SOURCE, SINK = "source", "sink"
_PRODUCERS = ("gemm", "conv")
_PER_CHANNEL = ("max_pool", "avg_pool", "global_avg_pool")


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

    def params(self, kind: str | None = None) -> list[str]:
        """The parameters with a slice in the group (of ``kind`` if given)."""
        return [s.param for s in self.slices if kind is None or s.kind == kind]


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
        self.seen: dict[int, tuple[int, int]] = {}
        self.slices: dict[tuple[str, int], Slice] = {}

    def add(self, c: Constant, axis: int, kind: str, offset: int, block: int) -> None:
        self.slices.setdefault((c.name, axis), Slice(c.name, axis, kind, offset, block))

    def enter(self, node: Expr, offset: int, block: int, back: bool = False) -> None:
        """``node``'s axis 1 carries the group's units at ``offset + k*block``; with
        ``back``, what produces ``node`` joins the group too (a residual add's operand)."""
        if id(node) in self.seen:
            return
        self.seen[id(node)] = (offset, block)
        if back:
            self.backward(node, offset, block)
        self.forward(node, offset, block)

    def backward(self, node: Expr, offset: int, block: int) -> None:
        if isinstance(node, Var) or not isinstance(node, Call):
            raise RewriteError(f"the units of layer {self.layer!r} reach the model input "
                               f"{getattr(node, 'name', node)!r} through a residual add; the "
                               "input's width is fixed. Instead: rewrite a layer whose units "
                               "are not added to the input")
        if node.op in _PRODUCERS:
            if (offset, block) != (0, 1):
                raise RewriteError(f"layer {node.name!r} produces units at an offset; "
                                   "rewrite it on its own")
            w = node.args[1]
            if not isinstance(w, Constant) or not w.name:
                raise RewriteError(f"layer {node.name!r} has no named weight to rewrite")
            self.add(w, self.info[w.name].axis("out"), SOURCE, 0, 1)
            if len(node.args) > 2 and isinstance(node.args[2], Constant) and node.args[2].name:
                self.add(node.args[2], 0, SOURCE, 0, 1)
            return
        if node.op in ("flatten", "concat"):
            raise RewriteError(f"the units of layer {self.layer!r} are added to the output of "
                               f"{node.op} {node.name!r}; following a group back through a "
                               f"{node.op} is not supported. Instead: rewrite another layer")
        for a in self.unit_args(node):
            self.enter(a, offset, block, back=True)

    def unit_args(self, node: Call) -> list[Expr]:
        """The arguments of ``node`` that carry units; 1-d constants become source slices."""
        out = []
        for k, a in enumerate(node.args):
            if isinstance(a, Constant):
                if a.name and a.data.ndim >= 1:
                    self.add(a, 0, SOURCE, 0, 1)
                continue
            if k == 0 or node.op in ("add", "sub", "mul", "maximum", "minimum"):
                out.append(a)
        return out

    def forward(self, node: Expr, offset: int, block: int) -> None:
        if node is self.func.body:
            raise RewriteError(f"the units of layer {self.layer!r} are the model's output; its "
                               "width is fixed by the labels. Instead: rewrite a hidden layer")
        for user, pos in self.users.get(id(node), []):
            op = user.op
            if op in _PRODUCERS and pos == 0:
                w = user.args[1]
                self.add(w, self.info[w.name].axis("in"), SINK, offset, block)
            elif op == "flatten":
                spatial = math.prod(node.type.shape[2:])
                self.enter(user, offset * spatial, block * spatial)
            elif op == "concat" and user.attrs["axis"] in (1, -len(node.type.shape) + 1):
                before = sum(a.type.shape[1] for a in user.args[:pos])
                self.enter(user, before + offset, block)
            elif (get_op(op).kind == OpKind.ELEMWISE or op in _PER_CHANNEL
                  or op in ("batch_norm", "layer_norm") or op in ("add", "sub", "mul")):
                for a in self.unit_args(user):
                    if a is not node:
                        self.enter(a, offset, block, back=True)
                self.enter(user, offset, block)
            else:
                raise RewriteError(f"the units of layer {self.layer!r} flow into {op} "
                                   f"{user.name!r}, whose coupling is unknown. Instead: rewrite "
                                   "a layer followed by elementwise ops, norms, pools, "
                                   "residual adds, flatten, concat and gemm/conv")


def coupled_group(func: Function, layer: str) -> Group:
    """The coupled group of the output units of gemm/conv call ``layer`` in ``func``."""
    walk = _Walk(func, layer)
    call = walk.calls.get(layer)
    if call is None or call.op not in _PRODUCERS:
        layers = [n for n, c in walk.calls.items() if c.op in _PRODUCERS]
        raise RewriteError(f"{layer!r} is not a gemm or conv call of {func.name!r}. Instead: "
                           f"one of {layers}")
    walk.enter(call, 0, 1, back=True)
    units = call.type.shape[1]
    return Group(layer, units, tuple(walk.slices.values()))


__all__ = ["SOURCE", "SINK", "Slice", "Group", "coupled_group"]
