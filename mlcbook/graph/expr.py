"""Graph IR nodes: a model is a :class:`Function` whose body is a dataflow graph of typed
values — inputs (:class:`Var`), weights (:class:`Constant`), op calls (:class:`Call`),
calls of loop-level functions (:class:`CallTIR`) and tuples.

    >>> x = Var("x", TensorType((1, 4), "float32"))
    >>> w = Constant(np.ones((4, 2), "float32"), name="fc.weight")
    >>> y = Call("matmul", (x, w), name="fc")
    >>> y.type                               # inferred when the call is built
    Tensor((1, 2), "float32")
    >>> f = Function((x,), Call("relu", (y,)), name="main")
    >>> f.weights["fc.weight"].owner         # the op call that uses the weight
    'fc'

Nodes are immutable and compared by identity; the same node used twice is one value (the
body is a DAG). :mod:`mlcbook.graph.structural` compares graphs up to renaming.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..printing import printer
from ..errors import GraphError, UnboundVarError
from ..ops import get as get_op
from ..ops.types import Attrs, TensorType, TupleType, Type, type_of_array
from ..tir.names import fresh_name


class Expr:
    """Base of graph values. Every expression has a ``type`` known when it is built."""

    __slots__ = ()
    __hash__ = object.__hash__
    type: Type

    @property
    def shape(self) -> tuple[int, ...]:
        if not isinstance(self.type, TensorType):
            raise GraphError(f"{self!r} is a tuple and has no shape; pick an item first")
        return self.type.shape

    @property
    def dtype(self) -> str:
        if not isinstance(self.type, TensorType):
            raise GraphError(f"{self!r} is a tuple and has no dtype; pick an item first")
        return self.type.dtype

    def __getitem__(self, index: int) -> "TupleGetItem":
        return TupleGetItem(self, index)

    def __repr__(self) -> str:
        label = getattr(self, "name", "") or ""
        return f"<{type(self).__name__} {label} : {self.type}>".replace("  ", " ")


@dataclass(frozen=True, eq=False, repr=False)
class Var(Expr):
    """An input of a graph function: ``Var("x", TensorType((64, 784), "float32"))``."""

    name: str
    type: Type

    def __post_init__(self):
        if not isinstance(self.type, (TensorType, TupleType)):
            raise GraphError(f"variable {self.name!r} needs a TensorType, got {self.type!r}")


@dataclass(frozen=True, eq=False, repr=False)
class Constant(Expr):
    """A tensor known at compile time. A *named* constant is a model parameter (a weight);
    its ``owner`` is the name of the op call that uses it (filled in by :class:`Function`)."""

    data: np.ndarray
    name: str = ""
    owner: str = ""
    type: Type = field(init=False)

    def __post_init__(self):
        data = np.array(self.data)  # a private copy, frozen below: weights are values
        data.setflags(write=False)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "type", type_of_array(data))

    @property
    def is_param(self) -> bool:
        return bool(self.name)


def _label(name: str, op: str) -> str:
    return f"call {name!r} ({op})" if name else f"call of {op!r}"


@dataclass(frozen=True, eq=False, repr=False)
class Call(Expr):
    """``op(*args, **attrs)`` for a registered op; the type is inferred on construction."""

    op: str
    args: tuple[Expr, ...]
    attrs: Attrs = field(default_factory=Attrs)
    name: str = ""
    type: Type = field(init=False)

    def __post_init__(self):
        args = tuple(self.args)
        for k, a in enumerate(args):
            if not isinstance(a, Expr):
                raise GraphError(f"argument {k} of the {_label(self.name, self.op)} is "
                                 f"{a!r}, not a graph expression; wrap arrays in Constant")
        object.__setattr__(self, "args", args)
        op = get_op(self.op)
        try:
            attrs = op.normalize_attrs(self.attrs)
            ty = op.infer_type([a.type for a in args], attrs)
        except GraphError as e:
            if not self.name:
                raise
            raise type(e)(f"call {self.name!r}: {e.message}") from None
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "type", ty)


@dataclass(frozen=True, eq=False, repr=False)
class CallTIR(Expr):
    """Call the loop-level PrimFunc named ``func`` of the module, destination-passing style:
    the caller allocates outputs of ``out_type`` (a TupleType for several outputs).
    ``attrs`` are what the steps after legalization know of the call (see
    :mod:`mlcbook.graph.compile`): ``inplace=1`` (its kernel is elementwise: it may write its
    output over an input that dies there), ``concat_axis=k`` (one concat of distinct values:
    they may be written straight into its output's slices)."""

    func: str
    args: tuple[Expr, ...]
    out_type: Type
    name: str = ""
    attrs: Attrs = field(default_factory=Attrs)
    type: Type = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "attrs", Attrs(self.attrs))
        if not isinstance(self.out_type, (TensorType, TupleType)):
            raise GraphError(f"call_tir of {self.func!r}: out_type must be a TensorType or a "
                             f"TupleType, got {self.out_type!r}")
        object.__setattr__(self, "type", self.out_type)

    @property
    def out_types(self) -> tuple[TensorType, ...]:
        return self.out_type.fields if isinstance(self.out_type, TupleType) else (self.out_type,)


@dataclass(frozen=True, eq=False, repr=False)
class Tuple(Expr):
    """A tuple of values, e.g. the several outputs of a function."""

    fields: tuple[Expr, ...]
    type: Type = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "type", TupleType(tuple(f.type for f in self.fields)))


@dataclass(frozen=True, eq=False, repr=False)
class TupleGetItem(Expr):
    """Item ``index`` of a tuple-typed value (``split(...)[1]``)."""

    tuple_value: Expr
    index: int
    type: Type = field(init=False)

    def __post_init__(self):
        t = self.tuple_value.type
        if not isinstance(t, TupleType):
            raise GraphError(f"cannot take item {self.index} of {self.tuple_value!r}: it is a "
                             "tensor, not a tuple")
        if not 0 <= self.index < len(t.fields):
            raise GraphError(f"item {self.index} is out of range for a tuple of "
                             f"{len(t.fields)} values")
        object.__setattr__(self, "type", t.fields[self.index])


def children(e: Expr) -> tuple[Expr, ...]:
    """The values ``e`` uses directly."""
    if isinstance(e, (Call, CallTIR)):
        return e.args
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    return ()


def post_order(root: Expr) -> list[Expr]:
    """Every node under ``root`` once, each after the values it uses. Iterative, so deep
    models do not hit Python's recursion limit."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for c in reversed(children(node)):
            if id(c) not in seen:
                stack.append((c, False))
    return order


@dataclass(frozen=True, eq=False, repr=False)
class Function:
    """A graph function: ``params`` (the inputs) and the ``body`` computing the result.

    On construction every op call gets a unique name (``relu``, ``relu_1``, ...) unless it
    has one, and every weight without an owner is owned by the first call that uses it.
    """

    params: tuple[Var, ...]
    body: Expr
    name: str = "main"
    attrs: Attrs = field(default_factory=Attrs)
    ret_type: Type = field(init=False)

    __hash__ = object.__hash__

    def __post_init__(self):
        params = tuple(self.params)
        object.__setattr__(self, "params", params)
        object.__setattr__(self, "attrs", Attrs(self.attrs))
        names = [p.name for p in params]
        for n in names:
            if names.count(n) > 1:
                raise GraphError(f"function {self.name!r} has two inputs named {n!r}")
        object.__setattr__(self, "body", _normalize(self.name, params, self.body))
        object.__setattr__(self, "ret_type", self.body.type)

    @property
    def weights(self) -> dict[str, Constant]:
        """The named constants (parameters) of the function, by name, in use order."""
        return {n.name: n for n in post_order(self.body) if isinstance(n, Constant) and n.name}

    def calls(self) -> list[Expr]:
        """The op calls and call_tirs of the body in evaluation order."""
        return [n for n in post_order(self.body) if isinstance(n, (Call, CallTIR))]

    def with_body(self, body: Expr, params=None) -> "Function":
        return replace(self, body=body, params=self.params if params is None else params)

    def script(self) -> str:
        """The function as readable Python-like text (what ``print(f)`` shows)."""
        return printer("graph.function")(self)

    __str__ = script

    def __repr__(self) -> str:
        return f"<graph.Function {self.name}({', '.join(p.name for p in self.params)})>"

    def _repr_html_(self) -> str:
        return printer("graph.html")(self.script())


def _normalize(fname: str, params: tuple[Var, ...], body: Expr) -> Expr:
    """Check that the body only uses ``params``; name calls uniquely; set weight owners; make
    two constants of one name, one owner and the same value one weight (a pass that re-lays
    a weight two ops share makes one for each; a weight is owned once a function has it)."""
    nodes = post_order(body)
    pset = {id(p) for p in params}
    taken: set[str] = set()
    weights: dict[str, Constant] = {}
    owners: dict[int, str] = {}
    renames: dict[int, str] = {}
    merged: dict[int, Constant] = {}
    for n in nodes:
        if isinstance(n, Var) and id(n) not in pset:
            raise UnboundVarError(
                f"function {fname!r} uses the variable {n.name!r}, which is not one of its "
                f"inputs ({', '.join(p.name for p in params) or 'none'}); add it to the inputs")
        if isinstance(n, Constant) and n.name:
            other = weights.setdefault(n.name, n)
            if other is not n:
                if not (n.owner and n.owner == other.owner and other.data.dtype == n.data.dtype
                        and np.array_equal(other.data, n.data)):
                    raise GraphError(f"function {fname!r} has two different weights named "
                                     f"{n.name!r}; rename one")
                merged[id(n)] = other
        if isinstance(n, (Call, CallTIR)):
            base = n.name or (n.op if isinstance(n, Call) else n.func)
            name = fresh_name(base, taken)
            if name != n.name:
                renames[id(n)] = name
            for a in n.args:
                if isinstance(a, Constant) and a.name and not a.owner:
                    owners.setdefault(id(a), name)
    if not renames and not owners and not merged:
        return body
    memo: dict[int, Expr] = {}
    for n in nodes:
        if id(n) in merged:
            first = merged[id(n)]
            memo[id(n)] = memo.get(id(first), first)
            continue
        if isinstance(n, Constant) and id(n) in owners:
            memo[id(n)] = Constant(n.data, n.name, owners[id(n)])
            continue
        kids = children(n)
        new_kids = tuple(memo.get(id(c), c) for c in kids)
        changed = any(a is not b for a, b in zip(kids, new_kids))
        if not changed and id(n) not in renames:
            continue
        memo[id(n)] = _rebuild(n, new_kids, renames.get(id(n)))
    return memo.get(id(body), body)


def _rebuild(n: Expr, kids: tuple[Expr, ...], name: str | None) -> Expr:
    """``n`` with new children (and a new name if given), its type re-inferred."""
    if isinstance(n, Call):
        return Call(n.op, kids, n.attrs, name if name is not None else n.name)
    if isinstance(n, CallTIR):
        return CallTIR(n.func, kids, n.out_type, name if name is not None else n.name, n.attrs)
    if isinstance(n, Tuple):
        return Tuple(kids)
    if isinstance(n, TupleGetItem):
        return TupleGetItem(kids[0], n.index)
    return n


def call(op: str, *args: Expr, name: str = "", **attrs: Any) -> Call:
    """``call("conv", x, w, pads=(1, 1, 1, 1))``: build an op call."""
    return Call(op, tuple(_as_expr(a) for a in args), Attrs(attrs), name)


def _as_expr(a: Any) -> Expr:
    if isinstance(a, Expr):
        return a
    if isinstance(a, (np.ndarray, np.generic, int, float, bool)):
        return Constant(np.asarray(a))
    raise GraphError(f"{a!r} is not a graph value; use a Var, a Constant or an op call")


def rebuild(n: Expr, kids: tuple[Expr, ...]) -> Expr:
    """``n`` with its children replaced by ``kids`` (same name; type re-inferred)."""
    return _rebuild(n, kids, None)


__all__ = ["Expr", "Var", "Constant", "Call", "CallTIR", "Tuple", "TupleGetItem", "Function",
           "children", "post_order", "call", "rebuild"]
