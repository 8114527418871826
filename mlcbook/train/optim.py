"""Optimizers as graph builders. Each says which state tensors a parameter owns (its
*slots*, e.g. Adam's ``m``, ``v`` and ``step``) and builds, in graph ops, the parameter's
and its state's next values from the gradient and the learning rate.

    >>> opt = Adam(lr=1e-3)
    >>> opt.slots                                  # fc1.weight owns fc1.weight.m, .v, .step
    ('m', 'v', 'step')
    >>> new_p, new_state = opt.update(p, g, {"m": m, "v": v, "step": t}, lr)

State named ``<param>.<slot>`` belongs to ``<param>``: :func:`state_name` and
:func:`state_owner` are the link, and a compiled step records it in its IR. The step
counter is per parameter, a 0-d state tensor of the parameter's dtype, so a parameter added later starts its
own bias correction at 1.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..errors import TrainingError
from ..graph.expr import Expr
from ..ops.types import TensorType, type_of_array
from .graph_math import call, scalar
from .schedules import Schedule, as_schedule, schedule_from_json


def state_name(param: str, slot: str) -> str:
    """The name of ``param``'s state tensor ``slot``: ``fc1.weight`` + ``m`` -> ``fc1.weight.m``."""
    return f"{param}.{slot}"


def state_owner(name: str, params) -> str | None:
    """The parameter among ``params`` that owns state tensor ``name`` (None if none does)."""
    best = None
    for p in params:
        if name.startswith(p + ".") and (best is None or len(p) > len(best)):
            best = p
    return best


def _mul(a, b):
    return call("mul", a, b)


def _k(v, like: Expr):
    return scalar(v, like.dtype)


class Optimizer:
    """Base of optimizers: ``slots``, ``init_state``, ``update``, ``to_json``."""

    slots: tuple[str, ...] = ()
    lr: float | Schedule

    def __post_init__(self):
        # every field but the learning rate (checked as a schedule) is a plain number that a
        # kernel bakes in: a string or a NaN must not reach the graph
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "lr" or (f.name == "nesterov" and isinstance(value, bool)):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                                 np.floating)) \
                    or not 0 <= value < (1 if f.name.startswith("beta") else np.inf):
                bound = "in [0, 1)" if f.name.startswith("beta") else "of 0 or more"
                raise TrainingError(f"{type(self).__name__}: {f.name}={value!r} must be a "
                                    f"number {bound}; Instead: e.g. "
                                    f"{type(self).__name__}({f.name}={f.default!r})")

    def init_state(self, param: np.ndarray) -> dict[str, np.ndarray]:
        """Fresh state for a parameter: zeros like it, and a 0-d step counter at 0."""
        return {s: np.zeros(t.shape, t.dtype)
                for s, t in self.init_state_types(type_of_array(param)).items()}

    def init_state_types(self, t: TensorType) -> dict[str, TensorType]:
        """The type of each state tensor of a parameter of type ``t`` (the step counter is
        a 0-d tensor of the parameter's dtype)."""
        return {s: (TensorType((), t.dtype) if s == "step" else t) for s in self.slots}

    def update(self, p: Expr, g: Expr, state: dict[str, Expr], lr: Expr):
        """(next value of ``p``, {slot: next value of that state tensor})."""
        raise NotImplementedError

    @property
    def schedule(self) -> Schedule:
        return as_schedule(self.lr)

    def to_json(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d = {k: (v.to_json() if isinstance(v, Schedule) else v) for k, v in d.items()}
        return {"kind": type(self).__name__, **d}


@dataclass(frozen=True)
class SGD(Optimizer):
    """``g += weight_decay * p``; with momentum ``buf = momentum * buf + g`` and the step
    ``buf`` (or ``g + momentum * buf`` with ``nesterov``); ``p -= lr * step`` (PyTorch's SGD
    without dampening)."""

    lr: float | Schedule = 0.01
    momentum: float = 0.0
    nesterov: bool = False
    weight_decay: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        if self.nesterov and self.momentum <= 0:
            raise TrainingError("SGD: nesterov=True needs a momentum > 0")

    @property
    def slots(self) -> tuple[str, ...]:
        return ("momentum",) if self.momentum else ()

    def update(self, p, g, state, lr):
        if self.weight_decay:
            g = call("add", g, _mul(_k(self.weight_decay, p), p))
        new = {}
        if self.momentum:
            buf = call("add", _mul(_k(self.momentum, p), state["momentum"]), g)
            new["momentum"] = buf
            g = call("add", g, _mul(_k(self.momentum, p), buf)) if self.nesterov else buf
        return call("sub", p, _mul(lr, g)), new


@dataclass(frozen=True)
class Adam(Optimizer):
    """``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g**2``, ``t += 1``,
    ``p -= lr * (m / (1 - b1**t)) / (sqrt(v / (1 - b2**t)) + eps)``; ``weight_decay`` adds
    ``wd * p`` to the gradient (L2), as PyTorch's Adam does."""

    lr: float | Schedule = 1e-3
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0

    slots = ("m", "v", "step")

    def _decay(self, p, g):
        return call("add", g, _mul(_k(self.weight_decay, p), p)) if self.weight_decay else g

    def update(self, p, g, state, lr):
        g = self._decay(p, g)
        return self._adam(p, g, state, lr)

    def _adam(self, p, g, state, lr):
        b1, b2 = self.beta1, self.beta2
        t = call("add", state["step"], _k(1, state["step"]))
        m = call("add", _mul(_k(b1, p), state["m"]), _mul(_k(1 - b1, p), g))
        v = call("add", _mul(_k(b2, p), state["v"]), _mul(_k(1 - b2, p), _mul(g, g)))
        c1 = call("sub", _k(1, t), call("pow", _k(b1, t), t))
        c2 = call("sub", _k(1, t), call("pow", _k(b2, t), t))
        denom = call("add", call("sqrt", call("div", v, c2)), _k(self.eps, p))
        step = call("div", _mul(lr, call("div", m, c1)), denom)
        return call("sub", p, step), {"m": m, "v": v, "step": t}


@dataclass(frozen=True)
class AdamW(Adam):
    """Adam with decoupled weight decay: ``p -= lr * weight_decay * p`` before the Adam
    step, instead of adding the decay to the gradient."""

    weight_decay: float = 0.01

    def update(self, p, g, state, lr):
        if self.weight_decay:
            p = call("sub", p, _mul(_mul(lr, _k(self.weight_decay, p)), p))
        return self._adam(p, g, state, lr)


_KINDS = {c.__name__: c for c in (SGD, Adam, AdamW)}


def optimizer_from_json(d: dict) -> Optimizer:
    """The optimizer :meth:`Optimizer.to_json` described."""
    d = dict(d)
    kind = _KINDS.get(d.pop("kind", None))
    if kind is None:
        raise TrainingError(f"unknown optimizer in checkpoint: {d!r}")
    if isinstance(d.get("lr"), dict):
        d["lr"] = schedule_from_json(d["lr"])
    return kind(**d)


__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "state_name", "state_owner",
           "optimizer_from_json"]
