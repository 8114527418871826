"""Converters of the optimizers of the ``ai.onnx.preview.training`` domain: ``Adagrad``,
``Adam`` and ``Momentum`` (standard and Nesterov). Each takes a learning rate ``R`` and a
step count ``T`` (scalars, run-time inputs), then lists of tensors (``X``, ``G``, ...,
one of each per optimized tensor) and gives the updated tensors, list after list. Every
update is elementwise arithmetic; where ONNX's rule depends on ``T`` (the first step is
treated apart) it is a ``where`` on ``T > 0``.

    >>> OTHER_DOMAINS["ai.onnx.preview.training"]
    ('Adagrad', 'Adam', 'Momentum')
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, OTHER_DOMAINS, converter

#: the outputs a converter may give: one list per state, one tensor per optimized tensor
_ANY_COUNT = 1 << 16


class _Update:
    """Builds one optimizer step's calls in the dtype of the optimized tensors."""

    def __init__(self, cx, ins, states: int):
        self.cx, self.count = cx, 0
        rate, step, tensors = ins[0], ins[1], ins[2:]
        if len(tensors) % states or not tensors:
            raise Unsupported(f"{cx.node.op_type}: after R and T it takes {states} lists of "
                              f"tensors of one length, got {len(tensors)} tensors")
        self.n = len(tensors) // states
        self.lists = [tensors[k * self.n:(k + 1) * self.n] for k in range(states)]
        self.dtype = tensors[0].dtype
        if self.dtype not in ("float32", "float64"):
            raise Unsupported(f"{cx.node.op_type} of {self.dtype} tensors (float32, float64)")
        self.rate = self.call("cast", rate, dtype=self.dtype, suffix="_rate")
        self.step = self.call("cast", step, dtype=self.dtype, suffix="_step")
        self.first = self.call("less_equal", self.step, self.const(0), suffix="_first")

    def const(self, value) -> Constant:
        return Constant(np.asarray(value, self.dtype))

    def call(self, op, *args, suffix=None, **attrs):
        if suffix is None:
            self.count += 1
            suffix = f"_{self.count}"
        return self.cx.call(op, *args, suffix=suffix, **attrs)

    def axpy(self, a, x, y):
        """``a * x + y`` (``a`` a number or a tensor)."""
        a = self.const(a) if isinstance(a, float) else a
        return self.call("add", self.call("mul", a, x), y)

    def regularized(self, x, g, norm: float):
        return self.axpy(norm, x, g) if norm else g


@converter("Adagrad", attrs=("decay_factor", "epsilon", "norm_coefficient"),
           outputs=_ANY_COUNT)
def _adagrad(cx, ins, attrs):
    u = _Update(cx, ins, 3)
    decay, eps = float(attrs.get("decay_factor", 0.0)), float(attrs.get("epsilon", 0.0))
    # the rate decays with the step: R / (1 + T * decay)
    rate = u.call("div", u.rate, u.axpy(decay, u.step, u.const(1.0)))
    xs, hs = [], []
    for x, g, h in zip(*u.lists):
        g = u.regularized(x, g, float(attrs.get("norm_coefficient", 0.0)))
        h = u.axpy(g, g, h)
        scale = u.call("add", u.call("sqrt", h), u.const(eps))
        xs.append(u.call("sub", x, u.call("div", u.call("mul", rate, g), scale)))
        hs.append(h)
    return xs + hs


@converter("Adam", attrs=("alpha", "beta", "epsilon", "norm_coefficient",
                          "norm_coefficient_post"), outputs=_ANY_COUNT)
def _adam(cx, ins, attrs):
    u = _Update(cx, ins, 4)
    alpha, beta = float(attrs.get("alpha", 0.9)), float(attrs.get("beta", 0.999))
    eps, post = float(attrs.get("epsilon", 0.0)), float(attrs.get("norm_coefficient_post", 0.0))
    # after the first step the rate corrects the momentums' bias:
    # R * sqrt(1 - beta**T) / (1 - alpha**T)
    def one_minus_pow(base):
        return u.call("sub", u.const(1.0), u.call("pow", u.const(base), u.step))
    corrected = u.call("div", u.call("mul", u.rate, u.call("sqrt", one_minus_pow(beta))),
                       one_minus_pow(alpha))
    rate = u.call("where", u.first, u.rate, corrected)
    xs, vs, hs = [], [], []
    for x, g, v, h in zip(*u.lists):
        g = u.regularized(x, g, float(attrs.get("norm_coefficient", 0.0)))
        v = u.axpy(alpha, v, u.call("mul", u.const(1 - alpha), g))
        h = u.axpy(beta, h, u.call("mul", u.const(1 - beta), u.call("mul", g, g)))
        scale = u.call("add", u.call("sqrt", h), u.const(eps))
        x = u.call("sub", x, u.call("mul", rate, u.call("div", v, scale)))
        xs.append(u.call("mul", u.const(1 - post), x) if post else x)
        vs.append(v)
        hs.append(h)
    return xs + vs + hs


def _check_momentum(attrs):
    mode = attrs.get("mode", "standard")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    return [] if mode in ("standard", "nesterov") else [f"mode={mode!r} is not 'standard' or "
                                                        "'nesterov'"]


@converter("Momentum", attrs=("alpha", "beta", "mode", "norm_coefficient"),
           check=_check_momentum, outputs=_ANY_COUNT)
def _momentum(cx, ins, attrs):
    u = _Update(cx, ins, 3)
    alpha, beta = float(attrs["alpha"]), float(attrs["beta"])
    mode = attrs.get("mode", "standard")
    nesterov = (mode.decode() if isinstance(mode, bytes) else mode) == "nesterov"
    # the gradient's coefficient is 1 at the first step, beta after it
    coefficient = u.call("where", u.first, u.const(1.0), u.const(beta))
    xs, vs = [], []
    for x, g, v in zip(*u.lists):
        g = u.regularized(x, g, float(attrs["norm_coefficient"]))
        v = u.axpy(alpha, v, u.call("mul", coefficient, g))
        move = u.axpy(alpha, v, g) if nesterov else v
        xs.append(u.call("sub", x, u.call("mul", u.rate, move)))
        vs.append(v)
    return xs + vs


__all__ = ["CONVERTERS", "OTHER_DOMAINS"]
