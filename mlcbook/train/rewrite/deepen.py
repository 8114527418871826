"""Deepen a model: insert a residual block whose last layer is zero, so it starts as the
identity and the outputs do not change (tag ``exact``).

    h  ->  h + fc_b(relu(fc_a(h)))        fc_a: He-initialized, fc_b: zeros
    h  ->  h + conv_b(relu(conv_a(h)))    on (N, C, H, W) values: 3x3 convolutions, padding
                                          1 (same resolution), conv_b zeros
    h  ->  h + relu(h @ Wa + ba) @ Wb + bb   on (N, T, D) token values (an imported
                                          transformer's), MatMul + Add as ONNX writes them

    >>> r = deepen(model, "relu1", state=trainer.state)
    >>> sorted(set(r.model.weights) - set(model.weights))
    ['relu1.res.a.bias', 'relu1.res.a.weight', 'relu1.res.b.bias', 'relu1.res.b.weight']

The new parameters get fresh optimizer state (zeros, step counter 0: their own bias
correction starts at 1, which is right for tensors that have seen no gradient); every old
parameter keeps its state untouched. At the first step only ``fc_b`` has a gradient
(``fc_a``'s is multiplied by ``fc_b``'s zero weights), so the block opens gradually.
"""

from __future__ import annotations

import numpy as np

from ...errors import RewriteError
from ...graph.expr import Call, Constant, Expr, Function
from ...graph.functor import ExprMutator
from ...ops.types import Attrs
from ..optim import state_name, state_owner
from .rewrites import EXACT, Rewritten


class _Insert(ExprMutator):
    def __init__(self, at: str, hidden: int | None, seed: int):
        super().__init__()
        self.at, self.hidden, self.seed = at, hidden, seed
        self.done: dict[str, np.ndarray] = {}

    def visit_Call(self, call: Call) -> Expr:
        call = self.generic_visit(call)
        if call.name != self.at:
            return call
        ndim = len(call.type.shape)
        if ndim not in (2, 3, 4):
            raise RewriteError(f"deepen: {self.at!r} has shape {call.type.shape}; a residual "
                               "block is inserted after a 2-d (batch, features), 3-d (batch, "
                               "tokens, features) or 4-d (batch, channels, height, width) value. "
                               "Instead: pick the output of a layer or of its activation")
        if ndim == 3:
            return self.tokens(call)
        n, dtype = call.type.shape[1], call.type.dtype
        k = self.hidden or n
        window = (3, 3) if ndim == 4 else ()
        fan_in = n * int(np.prod(window))
        rng = np.random.default_rng(self.seed)
        p = f"{self.at}.res"
        w = {f"{p}.a.weight": (rng.standard_normal((k, n) + window)
                               * np.sqrt(2.0 / fan_in)).astype(dtype),
             f"{p}.a.bias": np.zeros(k, dtype), f"{p}.b.weight": np.zeros((n, k) + window, dtype),
             f"{p}.b.bias": np.zeros(n, dtype)}
        self.done = w
        c = {name: Constant(v, name) for name, v in w.items()}
        op, attrs = ("conv", Attrs(pads=(1, 1, 1, 1))) if ndim == 4 else ("gemm",
                                                                          Attrs(trans_b=1))
        a = Call(op, (call, c[f"{p}.a.weight"], c[f"{p}.a.bias"]), attrs, f"{p}.a")
        a = Call("relu", (a,), Attrs(), f"{p}.relu")
        b = Call(op, (a, c[f"{p}.b.weight"], c[f"{p}.b.bias"]), attrs, f"{p}.b")
        return Call("add", (call, b), Attrs(), f"{p}.add")

    def tokens(self, call: Call) -> Expr:
        """The block on (N, T, D) tokens, its weights (D, k) and (k, D) as MatMul's right
        operand (what an imported transformer's projections are)."""
        n, dtype = call.type.shape[-1], call.type.dtype
        k = self.hidden or n
        rng = np.random.default_rng(self.seed)
        p = f"{self.at}.res"
        self.done = {f"{p}.a.weight": (rng.standard_normal((n, k)) * np.sqrt(2.0 / n)
                                       ).astype(dtype),
                     f"{p}.a.bias": np.zeros(k, dtype), f"{p}.b.weight": np.zeros((k, n), dtype),
                     f"{p}.b.bias": np.zeros(n, dtype)}
        c = {name: Constant(v, name) for name, v in self.done.items()}
        h = call
        for part, act in (("a", True), ("b", False)):
            h = Call("matmul", (h, c[f"{p}.{part}.weight"]), Attrs(), f"{p}.{part}.mm")
            h = Call("add", (h, c[f"{p}.{part}.bias"]), Attrs(), f"{p}.{part}")
            if act:
                h = Call("relu", (h,), Attrs(), f"{p}.relu")
        return Call("add", (call, h), Attrs(), f"{p}.add")


def deepen(func: Function, at: str, state: dict | None = None, hidden: int | None = None,
           seed: int = 0) -> Rewritten:
    """``func`` with a zero-initialized residual block after call ``at``; the new
    parameters' optimizer state is fresh, with the slots the old parameters have."""
    names = {c.name for c in func.calls()}
    if at not in names:
        raise RewriteError(f"deepen: {func.name!r} has no call {at!r}. Instead: one of "
                           f"{sorted(names)}")
    ins = _Insert(at, hidden, seed)
    model = ins.visit_function(func)
    new_state = None
    if state is not None:
        new_state = {k: v.copy() for k, v in state.items()}
        slots = {name[len(o) + 1:] for name in state
                 if (o := state_owner(name, list(func.weights)))}
        for pname, v in ins.done.items():
            for slot in sorted(slots):
                shape = () if slot == "step" else v.shape
                new_state[state_name(pname, slot)] = np.zeros(shape, v.dtype)
    detail = {"at": at, "hidden": ins.done[f"{at}.res.a.bias"].shape[0],
              "new": sorted(ins.done)}
    return Rewritten("deepen", EXACT, model, new_state, detail, None)


__all__ = ["deepen"]
