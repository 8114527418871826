"""Cleanup passes that remove work without changing a single value.

* :func:`simplify_chains`: a chain of reshapes (flatten, squeeze, unsqueeze, reshape) is one
  reshape; a reshape to the shape it already has is nothing; two transposes are one
  transpose, or nothing when they cancel.
* :func:`eliminate_common_subexpressions`: two calls of the same op with the same attributes
  on the same arguments compute the same value once; so do two equal unnamed constants.

Dead code needs no pass of its own here: a graph function is the set of nodes its result
depends on (:func:`~mlcbook.graph.post_order` from the body), so a value nothing uses is
already gone, and :func:`mlcbook.graph.legalize` only adds the PrimFuncs that are called.

    >>> func = simplify_chains(func)  # reshape(flatten(x)) -> reshape(x)
"""

from __future__ import annotations

from ...ops.types import Attrs
from ..expr import Call, Constant, Expr, Function
from ..functor import ExprMutator

#: ops whose output is their input's elements in the same order, in a new shape
RESHAPES = ("reshape", "flatten", "squeeze", "unsqueeze")


class _SimplifyChains(ExprMutator):
    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        x = new.args[0] if new.args else None
        if new.op in RESHAPES:
            while isinstance(x, Call) and x.op in RESHAPES:
                x = x.args[0]
            if x.shape == new.shape:
                return x
            if x is not new.args[0]:
                return Call("reshape", (x,), Attrs(shape=new.shape), new.name)
        if new.op == "transpose" and isinstance(x, Call) and x.op == "transpose":
            inner, outer = _perm(x), _perm(new)
            perm = tuple(inner[p] for p in outer)
            if perm == tuple(range(len(perm))):
                return x.args[0]
            return Call("transpose", (x.args[0],), Attrs(perm=perm), new.name)
        if new.op == "transpose" and _perm(new) == tuple(range(len(new.shape))):
            return x
        return new


def _perm(call: Call) -> tuple[int, ...]:
    perm = call.attrs.get("perm")
    n = len(call.shape)
    return tuple(perm) if perm is not None else tuple(reversed(range(n)))


def simplify_chains(func: Function) -> Function:
    """``func`` with reshape chains and transpose pairs collapsed (see the module docstring)."""
    return _SimplifyChains().visit_function(func)


def _attrs_key(attrs: Attrs) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in attrs.items()))


class _CSE(ExprMutator):
    def __init__(self):
        super().__init__()
        self.seen: dict[tuple, Expr] = {}

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        key = ("call", new.op, tuple(id(a) for a in new.args), _attrs_key(new.attrs))
        return self.seen.setdefault(key, new)

    def visit_Constant(self, const: Constant):
        if const.name or const.data.size > 4096:
            return const  # parameters stay distinct; big unnamed arrays are rarely equal
        key = ("const", const.data.dtype.str, const.data.shape, const.data.tobytes())
        return self.seen.setdefault(key, const)


def eliminate_common_subexpressions(func: Function) -> Function:
    """``func`` with each value computed once (see the module docstring)."""
    return _CSE().visit_function(func)
