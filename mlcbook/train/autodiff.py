"""Reverse-mode automatic differentiation of graph functions: ``grad(func, wrt)`` builds a
new graph function that computes ``func``'s outputs and the gradients of its scalar loss.

    >>> loss_fn = Function([x, y], cross_entropy(model(x), y))      # a scalar loss
    >>> g = grad(loss_fn, wrt=["fc1.weight", "fc1.bias"])
    >>> loss, d_w, d_b = mb.graph.interpret(g, x, y)

The backward graph is made of ordinary op calls, so it is legalized and compiled like any
model. Each op's gradient is a *rule*, registered by op name with :func:`register_gradient`:

    >>> @register_gradient("exp")
    ... def _exp(call, g):              # call: the forward Call; g: d loss / d call
    ...     return (op.mul(g, call),)    # d loss / d each input (None: no gradient)

Only the calls on a path from a ``wrt`` value to the loss are differentiated; asking for a
gradient through an op without a rule raises :class:`~mlcbook.errors.NoGradientError`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import NoGradientError, TrainingError, UnknownOpError
from ..graph.expr import (Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, children,
                          post_order)
from ..graph.functor import ExprMutator
from ..ops import get as get_op
from ..ops.types import TensorType, TupleType
from ..te import placeholder
from .graph_math import unbroadcast

#: a rule: (forward call, gradient of its output — an Expr, or a tuple of Expr/None for ops
#: with several outputs) -> one gradient (Expr or None) per input of the call
GradRule = Callable[[Call, object], Sequence[Expr | None]]

_RULES: dict[str, GradRule] = {}
#: ops that read or write bit patterns: their result is not a differentiable function of the
#: input's value, so no rule will come (the error says so rather than "no rule yet")
BIT_OPS = ("bitcast", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitshift")


def register_gradient(op_name: str, *, replace: bool = False):
    """Decorator registering the gradient rule of ``op_name`` (the op must exist)."""
    get_op(op_name)

    def deco(fn: GradRule) -> GradRule:
        if gradient_rule(op_name) is not None and not replace:
            raise TrainingError(f"op {op_name!r} already has a gradient rule; pass "
                                "replace=True to register_gradient to override it")
        _RULES[op_name] = fn
        _REMOVED.discard(op_name)
        return fn
    return deco


def unregister_gradient(op_name: str) -> None:
    """Remove the rule of ``op_name``, registered or declared (for exercises that write
    their own)."""
    _RULES.pop(op_name, None)
    _REMOVED.add(op_name)


#: ops whose declared derivative unregister_gradient removed
_REMOVED: set[str] = set()


def _declared_rule(grad_ops: tuple) -> GradRule:
    """The rule of an elementwise or broadcasting op declared with its derivatives
    (:mod:`mlcbook.ops.declare`): for each input, its gradient op of the inputs, the output
    and the output's gradient, summed over the axes the input was broadcast along."""
    def declared(c: Call, g: Expr):
        return tuple(None if grad_op is None else
                     unbroadcast(Call(grad_op, _read_only(grad_op, (*c.args, c, g), c.attrs),
                                      c.attrs), a.shape)
                     for grad_op, a in zip(grad_ops, c.args))
    return declared


def _read_only(grad_op: str, args: tuple, attrs) -> tuple:
    """``args`` with each one the gradient's compute does not read (for these attributes)
    replaced by a 0-d zero: a forward value no derivative needs then stays fusible and dies
    early (mul's dL/da reads b and g, not a or the product)."""
    # which inputs a compute reads does not depend on the sizes: an empty one reads as one
    ins = [placeholder(tuple(max(d, 1) for d in a.shape), a.dtype, name=f"in{k}")
           for k, a in enumerate(args)]
    read = {id(t) for t in get_op(grad_op).legalize(ins, attrs, None).op.inputs}
    return tuple(a if id(t) in read or a is args[-1] else Constant(np.zeros((), a.dtype))
                 for a, t in zip(args, ins))


def gradient_rule(op_name: str) -> GradRule | None:
    """The rule registered for ``op_name`` (or declared with it), or None."""
    rule = _RULES.get(op_name)
    if rule is None and op_name not in _REMOVED:
        try:
            grad_ops = get_op(op_name).grad_ops
        except UnknownOpError:   # no such op: no rule
            return None
        if grad_ops:
            return _declared_rule(grad_ops)
    return rule


def has_gradient(op_name: str) -> bool:
    return gradient_rule(op_name) is not None


def _is_float(t) -> bool:
    return isinstance(t, TensorType) and t.dtype.startswith("float")


def _accumulate(a: Expr | None, b: Expr | None) -> Expr | None:
    if a is None:
        return b
    if b is None:
        return a
    return Call("add", (a, b))


class _Lift(ExprMutator):
    """Named weights listed in ``names`` become input variables of the same name."""

    def __init__(self, names: set[str]):
        super().__init__()
        self.names = names
        self.vars: dict[str, Var] = {}

    def visit_Constant(self, c: Constant):
        if c.name in self.names:
            return self.vars.setdefault(c.name, Var(c.name, c.type))
        return c


def lift_weights(func: Function, names: Sequence[str] | None = None) -> Function:
    """``func`` with the named weights ``names`` (all float weights if None) turned into
    inputs, appended after the existing ones in weight order: the form a training step needs,
    where parameters change every step.

        >>> lift_weights(mlp).params     # (input, fc1.weight, fc1.bias, ...)
    """
    weights = func.weights
    if names is None:
        names = [n for n, c in weights.items() if _is_float(c.type)]
    missing = [n for n in names if n not in weights]
    if missing:
        raise TrainingError(f"function {func.name!r} has no weight named "
                            f"{', '.join(map(repr, missing))}; its weights are: "
                            f"{', '.join(weights) or 'none'}")
    lift = _Lift(set(names))
    body = lift.visit(func.body)
    new = tuple(lift.vars[n] for n in weights if n in lift.vars)
    return Function(func.params + new, body, func.name, func.attrs)


def _targets(func: Function, wrt: Sequence[str]) -> list[Expr]:
    inputs = {p.name: p for p in func.params}
    weights = func.weights
    out = []
    for name in wrt:
        if name in inputs:
            out.append(inputs[name])
        elif name in weights:
            out.append(weights[name])
        else:
            raise TrainingError(
                f"grad: {func.name!r} has no input or weight named {name!r}; inputs: "
                f"{', '.join(inputs) or 'none'}; weights: {', '.join(weights) or 'none'}")
        if not _is_float(out[-1].type):
            raise TrainingError(f"grad: {name!r} has type {out[-1].type}; gradients exist only "
                                "for floating-point values")
    return out


def backward(loss: Expr, targets: Sequence[Expr]) -> list[Expr]:
    """Expressions for d ``loss`` / d each of ``targets`` (nodes of ``loss``'s graph)."""
    if not isinstance(loss.type, TensorType) or loss.type.size != 1 or not _is_float(loss.type):
        raise TrainingError(f"grad: the loss must be a float tensor with one element, got "
                            f"{loss.type}; reduce it first (op.sum or op.mean)")
    order = post_order(loss)
    wanted = {id(t) for t in targets}
    # which nodes depend on a target: only their gradients are needed
    live: set[int] = set()
    for n in order:
        if id(n) in wanted or any(id(c) in live for c in children(n)):
            if id(n) in wanted or _is_float(n.type) or isinstance(n.type, TupleType):
                live.add(id(n))
    adj: dict[int, object] = {id(loss): Constant(np.ones(loss.shape, loss.dtype))}
    for n in reversed(order):
        g = adj.get(id(n))
        if g is None or id(n) not in live:
            continue
        if isinstance(n, Call):
            _propagate_call(n, g, adj, live)
        elif isinstance(n, Tuple):
            for f, gf in zip(n.fields, g):
                if gf is not None and id(f) in live:
                    adj[id(f)] = _accumulate(adj.get(id(f)), gf)
        elif isinstance(n, TupleGetItem):
            src = n.tuple_value
            if id(src) in live:
                cur = list(adj.get(id(src)) or (None,) * len(src.type.fields))
                cur[n.index] = _accumulate(cur[n.index], g)
                adj[id(src)] = tuple(cur)
        elif not isinstance(n, (Var, Constant)):
            raise NoGradientError(f"grad: cannot differentiate through {n!r}; legalize after "
                                  "taking gradients, not before")
    return [adj.get(id(t)) or Constant(np.zeros(t.shape, t.dtype)) for t in targets]


def _propagate_call(n: Call, g, adj: dict, live: set) -> None:
    if not any(id(a) in live for a in n.args):
        return
    rule = gradient_rule(n.op)
    if rule is None and n.op in BIT_OPS:
        raise NoGradientError(
            f"grad: the op {n.op!r} (call {n.name!r}) is not differentiable: it works on the "
            "bits of its input, not on its value, and the loss depends on a parameter through "
            "it. Instead: stop the gradient before it (compute its input from values that do "
            "not depend on a parameter)")
    if rule is None:
        raise NoGradientError(
            f"grad: the op {n.op!r} (call {n.name!r}) has no gradient rule, and the loss "
            f"depends on a parameter through it. Instead: register one with "
            f"@mb.train.register_gradient({n.op!r}), or stop the gradient before it")
    grads = tuple(rule(n, g))
    if len(grads) != len(n.args):
        raise TrainingError(f"the gradient rule of {n.op!r} returned {len(grads)} gradients "
                            f"for {len(n.args)} inputs")
    for a, ga in zip(n.args, grads):
        if ga is None or id(a) not in live:
            continue
        if ga.type != a.type:
            raise TrainingError(f"the gradient rule of {n.op!r} (call {n.name!r}) gave a "
                                f"gradient of type {ga.type} for an input of type {a.type}")
        adj[id(a)] = _accumulate(adj.get(id(a)), ga)


def grad(func: Function, wrt: Sequence[str] | None = None) -> Function:
    """A function with ``func``'s inputs returning ``(*outputs, *gradients)``.

    ``func`` returns a scalar loss, or a tuple whose first item is the loss; ``wrt`` names
    inputs or weights of ``func`` (default: every float weight). Gradients come in ``wrt``
    order, each with the type of the value it belongs to.

        >>> g = grad(loss_fn, wrt=["w"]); loss, dw = mb.graph.interpret(g, x, w)
    """
    if not isinstance(func, Function):
        raise TrainingError(f"grad takes a graph Function, got {type(func).__name__}")
    if wrt is None:
        wrt = [n for n, c in func.weights.items() if _is_float(c.type)]
    if isinstance(wrt, str):
        wrt = [wrt]
    outputs = list(func.body.fields) if isinstance(func.body, Tuple) else [func.body]
    targets = _targets(func, list(wrt))
    grads = backward(outputs[0], targets)
    return Function(func.params, Tuple(outputs + grads), func.name + "_grad", func.attrs)


__all__ = ["grad", "backward", "register_gradient", "unregister_gradient", "gradient_rule",
           "has_gradient", "lift_weights", "GradRule"]
