"""Which call owns each parameter, and what each axis of the parameter means.

A structural rewrite (widen, prune) edits a parameter along one axis, so it must know
whether that axis is the owner's output units, its input units, a per-channel vector or a
kernel window. The roles come from the owning op and its attributes:

    >>> info = parameters(mb.train.mlp((4, 8, 3)))
    >>> info["fc1.weight"]
    ParamInfo(name='fc1.weight', owner='fc1', op='gemm', roles=('out', 'in'))
    >>> info["fc1.bias"].roles
    ('out',)

An imported ``matmul(x, W)`` is a layer too (``W``: ``('in', 'out')``; on the left,
``matmul(W, x)``: ``('out', 'in')``; batched: leading ``'batch'`` axes), and the ``add`` of
its bias gives the bias's axis that meets the units the role ``'out'``.

Each weight's ``kind`` is its declared role (:func:`mlcbook.graph.declarations`):
parameters and buffers (BatchNorm's running statistics) are edited with their layer. A
weight whose use gives no axis roles (a scalar, a table read by gather) has none, and
blocks nothing until a rewrite needs one of its axes. A weight masked by
:func:`~.sparse.sparsify` has its layer's roles (the mask is seen through).
With a compiled step, :func:`state_of` gives the optimizer state each parameter owns
(``{'m': 'fc1.weight.m', ...}``), read from the step's ``state_owners``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import RewriteError
from ...graph.expr import Call, Constant, Function
from ...graph.params import CONSTANT, PARAMETER, declarations

#: the roles an axis can have (``batch``: a batched matmul weight's leading axes;
#: ``element``: an axis of an elementwise operand, ``broadcast``: one of its size-1 axes)
OUT, IN, CHANNEL, FEATURE, KERNEL, BATCH = "out", "in", "channel", "feature", "kernel", "batch"
ELEMENT, BROADCAST = "element", "broadcast"
_ARITHMETIC = ("add", "sub", "mul", "div", "maximum", "minimum")
#: the name suffix of the ``mul(weight, mask)`` call :func:`~.sparse.sparsify` inserts
MASK_SUFFIX = ".mask"


def is_mask(node) -> bool:
    """Whether ``node`` is a sparsity mask call ``mul(weight, mask)`` (see :mod:`.sparse`):
    the weight named, the 0/1 mask an unnamed constant."""
    return (isinstance(node, Call) and node.op == "mul" and node.name.endswith(MASK_SUFFIX)
            and isinstance(node.args[0], Constant) and bool(node.args[0].name)
            and isinstance(node.args[1], Constant) and not node.args[1].name)


def weight_view(node) -> tuple[Constant | None, tuple[int, ...] | None]:
    """The named weight ``node`` is — itself, seen through its sparsity mask, or through a
    transpose (an imported Einsum's ``"bth,ch->btc"`` reads its weight so) — and the
    transpose's permutation (None without one); ``(None, None)`` if it is no weight."""
    perm = None
    if isinstance(node, Call) and node.op == "transpose" and len(node.args) == 1:
        perm = node.attrs["perm"] or tuple(reversed(range(len(node.type.shape))))
        node = node.args[0]
    if is_mask(node):
        node = node.args[0]
    if isinstance(node, Constant) and node.name:
        return node, perm
    return None, None


def weight_operand(node) -> Constant | None:
    """The named weight ``node`` is (see :func:`weight_view`), else None."""
    return weight_view(node)[0]


def is_view(call) -> bool:
    """Whether ``call`` only presents a weight to its layer (a mask, a transpose)."""
    return is_mask(call) or (isinstance(call, Call) and call.op == "transpose"
                             and weight_operand(call) is not None)


def layer_weight(call) -> int | None:
    """The argument position of the weight of a layer call (gemm, conv, or a matmul of a
    value by a weight of 2 or more axes, on either side), or None if ``call`` is no layer.

        >>> layer_weight(matmul_call)          # matmul(x, W["w1"])
        1
    """
    if not isinstance(call, Call):
        return None
    if call.op in ("gemm", "conv"):
        return 1 if weight_operand(call.args[1]) is not None else None
    if call.op != "matmul":
        return None
    named = [weight_operand(a) is not None and a.type.ndim >= 2 for a in call.args]
    return named.index(True) if named.count(True) == 1 else None


def layer_out_axis(call: Call) -> int:
    """The axis of layer ``call``'s output that carries its units: 1 for gemm and conv, the
    last for ``matmul(x, W)``, the one before it for ``matmul(W, x)``."""
    if call.op != "matmul":
        return 1
    return len(call.type.shape) - (1 if layer_weight(call) == 1 else 2)


@dataclass(frozen=True)
class ParamInfo:
    """Weight ``name`` is argument of call ``owner`` (an ``op``); axis k has ``roles[k]``;
    ``kind`` is its declared role (parameter, buffer or constant)."""

    name: str
    owner: str
    op: str
    roles: tuple[str, ...]
    kind: str = PARAMETER

    def axis(self, role: str) -> int:
        """The axis with ``role`` (``info.axis("out")`` -> 0 for a gemm weight)."""
        if not self.roles and self.kind != CONSTANT:
            raise RewriteError(f"parameter {self.name!r} of the {self.op} call {self.owner!r}: "
                               "no axis roles are known for it, so no rewrite can edit it. "
                               "Instead: rewrite a layer built from gemm, conv or matmul (with "
                               "biases, norms and elementwise ops)")
        if role not in self.roles:
            raise RewriteError(f"parameter {self.name!r} has no {role!r} axis (its axes are "
                               f"{self.roles}). Instead: pick one of those roles")
        return self.roles.index(role)


def _roles(call: Call, position: int, ndim: int) -> tuple[str, ...]:
    if call.op == "matmul" and ndim >= 1:
        if ndim == 1:       # a vector operand: contracted away
            return (IN,)
        last = (IN, OUT) if position == 1 else (OUT, IN)
        return (BATCH,) * (ndim - 2) + last
    if call.op == "gemm":
        if position == 1:
            return (OUT, IN) if call.attrs["trans_b"] else (IN, OUT)
        return (OUT,) * ndim
    if call.op == "conv":
        return (OUT, IN) + (KERNEL,) * (ndim - 2) if position == 1 else (OUT,)
    if ndim == 0:
        return ()
    if call.op in ("batch_norm", "batch_norm_train"):
        return (CHANNEL,)
    if call.op == "layer_norm":
        return (FEATURE,) * ndim
    if call.op in _ARITHMETIC and len(call.args) == 2:
        return _operand_roles(call.args[1 - position], call.args[position].type.shape)
    return ()      # unknown: harmless until a rewrite needs one of its axes (ParamInfo.axis)


def _operand_roles(other, shape: tuple) -> tuple[str, ...]:
    """The roles of an elementwise operand of ``shape`` combined with ``other``: added to a
    layer's output (a bias), the axis that broadcasts against the layer's units is ``out``;
    a 1-d operand elsewhere is per-channel."""
    if layer_weight(other) is None:
        if len(shape) == 1:
            return (CHANNEL,)
        return tuple(BROADCAST if d == 1 else ELEMENT for d in shape)
    units = layer_out_axis(other) - (len(other.type.shape) - len(shape))
    return tuple(OUT if j == units else BROADCAST if d == 1 else ELEMENT
                 for j, d in enumerate(shape))


def parameters(func: Function) -> dict[str, ParamInfo]:
    """Every named weight of ``func`` with its owning call, axis roles and declared kind."""
    if not isinstance(func, Function):
        raise RewriteError(f"parameters takes a graph Function, got {type(func).__name__}")
    declared = declarations(func)
    out: dict[str, ParamInfo] = {}
    for call in func.calls():
        if is_view(call):       # a masked or transposed weight's roles are its layer's
            continue
        for k, arg in enumerate(call.args):
            a, perm = weight_view(arg)
            if a is not None and a.name not in out:
                roles = _roles(call, k, a.data.ndim)
                if perm is not None and roles:      # the weight's axis j is the view's
                    roles = tuple(roles[perm.index(j)] for j in range(len(roles)))
                out[a.name] = ParamInfo(a.name, call.name, call.op, roles, declared[a.name].kind)
    return out


def state_of(step_function: Function, param: str) -> dict[str, str]:
    """``{slot: state name}`` of the optimizer state ``param`` owns, from a step function's
    ``state_owners`` attribute (see :func:`mlcbook.train.build_step`)."""
    owners = step_function.attrs.get("state_owners")
    if owners is None:
        raise RewriteError(f"function {step_function.name!r} has no state_owners attribute. "
                           "Instead: pass trainer.train_step.function")
    return {slot: name for name, owner, slot in owners if owner == param}


__all__ = ["OUT", "IN", "CHANNEL", "FEATURE", "KERNEL", "BATCH", "ELEMENT", "BROADCAST",
           "MASK_SUFFIX", "ParamInfo", "is_mask", "is_view", "weight_view", "weight_operand",
           "layer_weight", "layer_out_axis", "parameters", "state_of"]
