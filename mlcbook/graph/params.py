"""What each named constant of a graph function is to training: a **parameter** (the
optimizer updates it), a **buffer** (a training step updates it by its own rule: BatchNorm's
running statistics, Dropout's counter) or a **constant** (never changes).

A function may declare roles in its ``declared`` attribute (``mb.from_onnx(...,
training=True)`` and :func:`declare` do); every named constant it does not declare gets the
role the graph gives it (:func:`declarations` says which and why):

- an integer or bool tensor, a 0-d scalar, or a 1-element operand of elementwise arithmetic
  is a constant; so is a tensor only ``trilu`` reads (a mask), and the mean and variance of
  an inference ``batch_norm``;
- the running mean and variance of ``batch_norm_train`` are buffers updated with ONNX's
  momentum, and the counter of ``dropout`` a buffer incremented at every step;
- any other float tensor is a parameter.

    >>> d = declarations(model)
    >>> d.parameters, d.buffers             # (('conv.weight', ...), ('bn.mean', 'bn.var'))
    >>> print(d)                            # a table: name, role, type, why
    >>> frozen = declare(model, freeze=["conv"])   # conv's weights become constants
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np

from ..errors import GraphError
from ..ops import OpKind
from ..ops import get as get_op
from ..ops.types import Attrs
from .expr import Call, Constant, Expr, Function
from .functor import ExprMutator

PARAMETER, BUFFER, CONSTANT = "parameter", "buffer", "constant"
KINDS = (PARAMETER, BUFFER, CONSTANT)
#: the function attribute holding the explicit declarations: ((name, kind, reason, update),)
DECLARED = "declared"
#: buffer update rules: ``(RUNNING_MEAN, call)``, ``(RUNNING_VAR, call)``, ``(COUNT,)``
RUNNING_MEAN, RUNNING_VAR, COUNT = "running_mean", "running_var", "count"


@dataclass(frozen=True)
class Declared:
    """Weight ``name`` is a ``kind`` (parameter, buffer or constant) because of ``reason``;
    a buffer's ``update`` is its rule (``("running_mean", "bn")``: the batch mean of the
    batch_norm_train call ``bn`` with its momentum; ``("count",)``: plus one per step)."""

    name: str
    kind: str
    reason: str
    update: tuple = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise GraphError(f"weight {self.name!r}: role {self.kind!r} is not one of "
                             f"{', '.join(KINDS)}")
        object.__setattr__(self, "update", tuple(self.update))

    def as_attr(self) -> tuple:
        return (self.name, self.kind, self.reason, self.update)


class Declarations(Mapping):
    """The role of every named constant of a function, in weight order; ``print`` shows a
    table (name, role, type, reason)."""

    def __init__(self, func: Function, entries: dict[str, Declared]):
        self.func, self._entries = func, entries

    def __getitem__(self, name: str) -> Declared:
        if name not in self._entries:
            raise GraphError(f"function {self.func.name!r} has no weight named {name!r}; its "
                             f"weights are: {', '.join(self._entries) or 'none'}")
        return self._entries[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def _of(self, kind: str) -> tuple[str, ...]:
        return tuple(n for n, d in self._entries.items() if d.kind == kind)

    @property
    def parameters(self) -> tuple[str, ...]:
        return self._of(PARAMETER)

    @property
    def buffers(self) -> tuple[str, ...]:
        return self._of(BUFFER)

    @property
    def constants(self) -> tuple[str, ...]:
        return self._of(CONSTANT)

    def __repr__(self) -> str:
        weights = self.func.weights
        rows = [(d.name, d.kind, str(weights[d.name].type), d.reason)
                for d in self._entries.values()]
        head = (f"{self.func.name}: {len(self.parameters)} parameters, "
                f"{len(self.buffers)} buffers, {len(self.constants)} constants")
        if not rows:
            return head
        widths = [max(len(r[k]) for r in rows) for k in range(3)]
        lines = [head] + ["  " + "  ".join(c.ljust(w) for c, w in zip(r[:3], widths)) + "  "
                          + r[3] for r in rows]
        return "\n".join(lines)


def _uses(func: Function) -> dict[str, list[tuple[Call, int]]]:
    uses: dict[str, list[tuple[Call, int]]] = {}
    for call in func.calls():
        for k, a in enumerate(getattr(call, "args", ())):
            if isinstance(a, Constant) and a.name:
                uses.setdefault(a.name, []).append((call, k))
    return uses


def _by_graph(c: Constant, uses: list) -> Declared:
    """The role the graph gives weight ``c`` (used at ``uses``: (call, position) pairs)."""
    name, t = c.name, c.type
    ops = {(u.op if isinstance(u, Call) else "") for u, _ in uses}
    for u, k in uses:
        if isinstance(u, Call) and u.op == "batch_norm_train" and k in (3, 4):
            rule = RUNNING_MEAN if k == 3 else RUNNING_VAR
            return Declared(name, BUFFER, f"running {'mean' if k == 3 else 'variance'} of "
                            f"{u.name!r} (momentum {u.attrs['momentum']:g})", (rule, u.name))
        if isinstance(u, Call) and u.op == "dropout" and k == 1:
            return Declared(name, BUFFER, f"the step counter of dropout {u.name!r}", (COUNT,))
    if not t.dtype.startswith("float"):
        return Declared(name, CONSTANT, f"{t.dtype} values: only float tensors train")
    if t.ndim == 0:
        return Declared(name, CONSTANT, "a 0-d scalar")
    if t.size == 1 and all(isinstance(u, Call) and get_op(u.op).kind <= OpKind.BROADCAST
                           for u, _ in uses):
        return Declared(name, CONSTANT, "a 1-element operand of elementwise arithmetic")
    if ops == {"trilu"}:
        return Declared(name, CONSTANT, "a mask: only trilu reads it")
    if uses and all(isinstance(u, Call) and u.op == "batch_norm" and k in (3, 4)
                    for u, k in uses):
        return Declared(name, CONSTANT, "running statistics of an inference batch_norm "
                        "(mb.from_onnx(..., training=True) makes them buffers)")
    owner = c.owner or (uses[0][0].name if uses else "")
    return Declared(name, PARAMETER, f"a float weight of {owner!r}")


def declarations(func: Function) -> Declarations:
    """The role of every named constant of ``func``: its declared one, else the graph's."""
    if not isinstance(func, Function):
        raise GraphError(f"declarations takes a graph Function, got {type(func).__name__}. "
                         "Instead: pass mod['main'] of a module")
    explicit = {e[0]: Declared(*e) for e in func.attrs.get(DECLARED, ())}
    uses = _uses(func)
    return Declarations(func, {n: explicit.get(n) or _by_graph(c, uses.get(n, []))
                               for n, c in func.weights.items()})


def _resolve(func: Function, names, arg: str, current: dict) -> list[str]:
    """Weight names for ``names``, each a weight, or a call: the weights it uses that are
    parameters now (a layer's name stands for its parameters, not its buffers)."""
    if isinstance(names, str):
        names = [names]
    weights, uses = func.weights, _uses(func)
    by_call: dict[str, list[str]] = {}
    for w, us in uses.items():
        for u, _ in us:
            by_call.setdefault(u.name, []).append(w)
    out = []
    for n in names:
        if n in weights:
            out.append(n)
        elif n in by_call:
            out.extend(w for w in by_call[n] if current[w].kind == PARAMETER)
        else:
            raise GraphError(f"{arg}: {n!r} is neither a weight nor a call with weights of "
                             f"function {func.name!r}. Instead: name one of its weights "
                             f"({', '.join(weights) or 'none'}) or calls "
                             f"({', '.join(by_call) or 'none'})")
    return list(dict.fromkeys(out))


def declare(func: Function, *, freeze=(), trainable=None, entries=()) -> Function:
    """``func`` with roles declared: ``freeze`` makes constants of the weights it names (a
    buffer named so stops updating) and of the parameters of the calls it names;
    ``trainable`` names the parameters (weights, or calls for their parameters), every other
    parameter becoming a constant; ``entries`` are :class:`Declared` to record as they are.

        >>> declarations(declare(mlp, freeze=["fc1"])).constants
        ('fc1.weight', 'fc1.bias')
    """
    current = dict(declarations(func))
    for e in entries:
        current[e.name] = e
    if trainable is not None:
        chosen = set(_resolve(func, trainable, "trainable", current))
        for n, d in current.items():
            if n in chosen and d.kind != PARAMETER:
                if not func.weights[n].dtype.startswith("float"):
                    raise GraphError(f"trainable: weight {n!r} is {func.weights[n].dtype}; "
                                     "only float tensors train. Instead: leave it out")
                current[n] = Declared(n, PARAMETER, "listed in trainable=")
            elif n not in chosen and d.kind == PARAMETER:
                current[n] = Declared(n, CONSTANT, "not listed in trainable=")
    for n in _resolve(func, freeze, "freeze", current):
        if current[n].kind != CONSTANT:
            current[n] = Declared(n, CONSTANT, f"frozen (was a {current[n].kind})")
    attrs = Attrs(dict(func.attrs, **{DECLARED: tuple(d.as_attr() for d in current.values())}))
    return replace(func, attrs=attrs)


def channel_moments(x: Expr) -> tuple[Call, Call]:
    """Graph calls of the batch mean and population variance (shape (C,)) of each channel
    (axis 1) of ``x``: what ``batch_norm_train`` normalizes with."""
    axes = tuple(d for d in range(len(x.shape)) if d != 1)
    kept = Call("mean", (x,), Attrs(axes=axes, keepdims=1))
    dev = Call("sub", (x, kept))
    var = Call("mean", (Call("mul", (dev, dev)),), Attrs(axes=axes, keepdims=0))
    return Call("reshape", (kept,), Attrs(shape=(x.shape[1],))), var


def running_update(call: Call, rule: str, old: Expr) -> Call:
    """ONNX's running statistic after one training step of ``batch_norm_train`` ``call``:
    ``momentum * old + (1 - momentum) * batch statistic`` (``rule``: running_mean or
    running_var)."""
    mean, var = channel_moments(call.args[0])
    batch = mean if rule == RUNNING_MEAN else var
    m = float(call.attrs["momentum"])
    k = [Constant(np.asarray(v, old.dtype)) for v in (m, 1.0 - m)]
    return Call("add", (Call("mul", (k[0], old)), Call("mul", (k[1], batch))))


class _EvalForm(ExprMutator):
    def visit_Call(self, call: Call):
        call = self.generic_visit(call)
        if call.op == "batch_norm_train":
            return Call("batch_norm", call.args, Attrs(epsilon=call.attrs["epsilon"]), call.name)
        if call.op == "dropout":
            return call.args[0]
        return call


def eval_form(func: Function) -> Function:
    """``func`` for inference: ``batch_norm_train`` normalizes with its running statistics
    (``batch_norm``) and ``dropout`` passes its input through (what ONNX's inference mode
    computes)."""
    return _EvalForm().visit_function(func)


__all__ = ["PARAMETER", "BUFFER", "CONSTANT", "DECLARED", "RUNNING_MEAN", "RUNNING_VAR",
           "COUNT", "Declared", "Declarations", "declarations", "declare", "eval_form", "channel_moments",
           "running_update"]
