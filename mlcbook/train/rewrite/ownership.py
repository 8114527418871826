"""Which call owns each parameter, and what each axis of the parameter means.

A structural rewrite (widen, prune) edits a parameter along one axis, so it must know
whether that axis is the owner's output units, its input units, a per-channel vector or a
kernel window. The roles come from the owning op and its attributes:

    >>> info = parameters(mb.train.mlp((4, 8, 3)))
    >>> info["fc1.weight"]
    ParamInfo(name='fc1.weight', owner='fc1', op='gemm', roles=('out', 'in'))
    >>> info["fc1.bias"].roles
    ('out',)

With a compiled step, :func:`state_of` gives the optimizer state each parameter owns
(``{'m': 'fc1.weight.m', ...}``), read from the step's ``state_owners``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import RewriteError
from ...graph.expr import Call, Constant, Function

#: the roles an axis can have
OUT, IN, CHANNEL, FEATURE, KERNEL = "out", "in", "channel", "feature", "kernel"


@dataclass(frozen=True)
class ParamInfo:
    """Parameter ``name`` is argument of call ``owner`` (an ``op``); axis k has ``roles[k]``."""

    name: str
    owner: str
    op: str
    roles: tuple[str, ...]

    def axis(self, role: str) -> int:
        """The axis with ``role`` (``info.axis("out")`` -> 0 for a gemm weight)."""
        if role not in self.roles:
            raise RewriteError(f"parameter {self.name!r} has no {role!r} axis (its axes are "
                               f"{self.roles}). Instead: pick one of those roles")
        return self.roles.index(role)


def _roles(call: Call, position: int, ndim: int) -> tuple[str, ...]:
    if call.op == "gemm":
        if position == 1:
            return (OUT, IN) if call.attrs["trans_b"] else (IN, OUT)
        return (OUT,) * ndim
    if call.op == "conv":
        return (OUT, IN) + (KERNEL,) * (ndim - 2) if position == 1 else (OUT,)
    if call.op == "batch_norm":
        return (CHANNEL,)
    if call.op == "layer_norm":
        return (FEATURE,) * ndim
    if call.op in ("add", "mul") and ndim == 1:
        return (CHANNEL,)
    raise RewriteError(f"parameter {call.args[position].name!r} of the {call.op} call "
                       f"{call.name!r}: no axis roles are known for it. Instead: use gemm, conv, "
                       "batch_norm, layer_norm, or a 1-d add/mul operand")


def parameters(func: Function) -> dict[str, ParamInfo]:
    """Every named weight of ``func`` with its owning call and axis roles."""
    if not isinstance(func, Function):
        raise RewriteError(f"parameters takes a graph Function, got {type(func).__name__}")
    out: dict[str, ParamInfo] = {}
    for call in func.calls():
        for k, a in enumerate(call.args):
            if isinstance(a, Constant) and a.name and a.name not in out:
                out[a.name] = ParamInfo(a.name, call.name, call.op, _roles(call, k, a.data.ndim))
    return out


def state_of(step_function: Function, param: str) -> dict[str, str]:
    """``{slot: state name}`` of the optimizer state ``param`` owns, from a step function's
    ``state_owners`` attribute (see :func:`mlcbook.train.build_step`)."""
    owners = step_function.attrs.get("state_owners")
    if owners is None:
        raise RewriteError(f"function {step_function.name!r} has no state_owners attribute. "
                           "Instead: pass trainer.train_step.function")
    return {slot: name for name, owner, slot in owners if owner == param}


__all__ = ["OUT", "IN", "CHANNEL", "FEATURE", "KERNEL", "ParamInfo", "parameters", "state_of"]
