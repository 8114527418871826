"""Sparse training as a masked variant (RigL): a layer's weight is multiplied by a fixed
0/1 mask in the IR, and a rewrite now and then drops the smallest active weights and
regrows the same number where the dense gradient is largest.

    W  ->  mul(W, mask)                  the mask a constant of the IR (not trained)

    >>> r = sparsify(model, "fc1", density=0.25, state=trainer.state)   # tag semantic
    >>> g = dense_gradient(r.model, "fc1", x, y)
    >>> r = rigl(r.model, "fc1", fraction=0.3, gradient=g, state=r.state)

The gradient of a masked weight is zero, so a dropped weight stays at zero without any
special handling. State rule: a dropped element's moments are zeroed (it no longer
exists); a regrown element starts at weight 0 with ``m = 0`` and — under Adam —
``v = g**2``, the squared dense gradient that selected it. Zero moments under the tensor's
old step counter would make its first step about ``sqrt(1/(1 - beta2)) * (1 - beta1)``
(~3) times the learning rate, since the bias correction is ~1 by then; starting ``v`` at
``g**2`` makes it ``(1 - beta1)`` times at most. Regrowing alone is ``exact`` (the new
weights are 0); dropping non-zero weights is ``semantic``. Widen, split and prune move a
masked weight's mask with it (:func:`~.transport.UnitMap.masks`): a replica of an active
weight is active.
"""

from __future__ import annotations

import numpy as np

from ...errors import RewriteError
from ...graph.expr import Call, Constant, Expr, Function, Var
from ...graph.functor import ExprMutator
from ...graph.interpret import interpret
from ...ops.types import Attrs
from ..autodiff import grad
from ..losses import get_loss
from ..optim import state_owner
from .observers import labels_type
from .ownership import MASK_SUFFIX, is_mask, layer_weight, weight_operand
from .rewrites import EXACT, SEMANTIC, Rewritten
from .transport import weight_arrays, with_weights


def _mask_name(layer: str) -> str:
    return f"{layer}{MASK_SUFFIX}"


class _SetMask(ExprMutator):
    """``layer``'s weight argument becomes ``mul(weight, mask)`` (or its mask replaced)."""

    def __init__(self, layer: str, mask: np.ndarray):
        super().__init__()
        self.layer, self.mask = layer, mask

    def visit_Call(self, call: Call) -> Expr:
        if call.name == _mask_name(self.layer):
            return Call("mul", (self.visit(call.args[0]), Constant(self.mask)), Attrs(),
                        call.name)
        call = self.generic_visit(call)
        pos = layer_weight(call) if call.name == self.layer else None
        if pos is None or mask_of_call(call.args[pos]) is not None:
            return call
        args = list(call.args)
        args[pos] = self.masked(args[pos])
        return Call(call.op, tuple(args), call.attrs, call.name)

    def masked(self, view: Expr) -> Expr:
        """The weight itself masked, inside the transpose that may present it."""
        if isinstance(view, Call) and view.op == "transpose":
            return Call("transpose", (self.masked(view.args[0]),), view.attrs, view.name)
        return Call("mul", (view, Constant(self.mask)), Attrs(), _mask_name(self.layer))


def mask_of_call(view: Expr) -> Call | None:
    """The mask call inside a layer's weight operand (itself or under a transpose)."""
    if isinstance(view, Call) and view.op == "transpose":
        view = view.args[0]
    return view if is_mask(view) else None


def mask_of(func: Function, layer: str) -> np.ndarray | None:
    """The mask of ``layer``'s weight (None if the layer is dense)."""
    for c in func.calls():
        if isinstance(c, Call) and c.name == _mask_name(layer):
            return np.array(c.args[1].data)
    return None


def _weight_name(func: Function, layer: str) -> str:
    layers = {c.name: c for c in func.calls() if layer_weight(c) is not None}
    if layer not in layers:
        raise RewriteError(f"{layer!r} is not a layer (a gemm, conv or matmul by a named "
                           f"weight). Instead: one of {sorted(layers)}")
    return weight_operand(layers[layer].args[layer_weight(layers[layer])]).name


def _masked_state(state, weight: str, keep: np.ndarray, v_init=None) -> dict | None:
    """State with the elements of ``weight`` outside ``keep`` zeroed (``v`` set from
    ``v_init`` where given)."""
    if state is None:
        return None
    out = {k: v.copy() for k, v in state.items()}
    for name, v in out.items():
        if state_owner(name, [weight]) != weight or v.ndim == 0:
            continue
        v *= keep
        if v_init is not None and name.endswith(".v"):
            v += v_init.astype(v.dtype)
    return out


def sparsify(func: Function, layer: str, density: float, state: dict | None = None,
             ) -> Rewritten:
    """``layer``'s weight masked to its ``density`` fraction of largest magnitudes; the
    other weights become 0, and so do their optimizer state elements."""
    if not 0.0 < density <= 1.0:
        raise RewriteError(f"sparsify: density={density} must be in (0, 1] (the fraction "
                           "of weights kept)")
    if mask_of(func, layer) is not None:
        raise RewriteError(f"sparsify: layer {layer!r} is masked already. Instead: change "
                           "its mask with rigl")
    weight = _weight_name(func, layer)
    w = weight_arrays(func)[weight]
    keep = int(round(density * w.size))
    mask = np.zeros(w.size, w.dtype)
    mask[np.argsort(-np.abs(w).ravel(), kind="stable")[:keep]] = 1
    mask = mask.reshape(w.shape)
    model = with_weights(_SetMask(layer, mask).visit_function(func), {weight: w * mask})
    tag = EXACT if not np.any(w * (1 - mask)) else SEMANTIC
    return Rewritten("sparsify", tag, model, _masked_state(state, weight, mask),
                     {"layer": layer, "density": keep / w.size, "active": keep}, None)


def dense_gradient(func: Function, layer: str, x: np.ndarray, y: np.ndarray,
                   loss: str = "cross_entropy") -> np.ndarray:
    """d loss / d (masked weight of ``layer``) on the batch ``(x, y)``, for every element,
    active or not: the gradient the weight would get if the layer were dense."""
    mask = mask_of(func, layer)
    if mask is None:
        raise RewriteError(f"dense_gradient: layer {layer!r} has no mask. Instead: "
                           "sparsify it first")
    dense = _SetMask(layer, np.ones_like(mask)).visit_function(func)
    labels = Var("labels", labels_type(loss, func))
    fn = Function(dense.params + (labels,), get_loss(loss)(dense.body, labels), "loss")
    weight = _weight_name(func, layer)
    return np.asarray(interpret(grad(fn, [weight]), x, y)[1])


def rigl(func: Function, layer: str, fraction: float, gradient: np.ndarray,
         state: dict | None = None) -> Rewritten:
    """One RigL update of masked ``layer``: drop the ``fraction`` of its active weights
    with the smallest magnitude, regrow as many inactive ones with the largest
    ``|gradient|`` (see :func:`dense_gradient`) at 0."""
    mask = mask_of(func, layer)
    if mask is None:
        raise RewriteError(f"rigl: layer {layer!r} has no mask. Instead: sparsify it first")
    if not 0.0 <= fraction < 1.0:
        raise RewriteError(f"rigl: fraction={fraction} must be in [0, 1)")
    weight = _weight_name(func, layer)
    w = weight_arrays(func)[weight]
    if np.shape(gradient) != w.shape:
        raise RewriteError(f"rigl: the gradient has shape {np.shape(gradient)}, {weight!r} "
                           f"{w.shape}. Instead: dense_gradient(model, {layer!r}, x, y)")
    flat_m, flat_w, flat_g = mask.ravel(), w.ravel(), np.abs(np.ravel(gradient))
    active, inactive = np.nonzero(flat_m)[0], np.nonzero(flat_m == 0)[0]
    k = min(int(round(fraction * len(active))), len(inactive))
    drop = active[np.argsort(np.abs(flat_w[active]), kind="stable")[:k]]
    grow = inactive[np.argsort(-flat_g[inactive], kind="stable")[:k]]
    new_mask = flat_m.copy()
    new_mask[drop], new_mask[grow] = 0, 1
    new_mask = new_mask.reshape(w.shape)
    model = with_weights(_SetMask(layer, new_mask).visit_function(func),
                         {weight: w * new_mask})
    grown = np.zeros(w.size)
    grown[grow] = 1
    v_init = (grown * np.ravel(gradient) ** 2).reshape(w.shape)
    kept = new_mask * (1 - grown.reshape(w.shape))
    tag = EXACT if not np.any(flat_w[drop]) else SEMANTIC
    return Rewritten("rigl", tag, model, _masked_state(state, weight, kept, v_init),
                     {"layer": layer, "dropped": int(k), "grown": int(k),
                      "active": int(new_mask.sum())}, None)


__all__ = ["sparsify", "mask_of", "dense_gradient", "rigl"]
