"""Moving tensors from a model to its rewritten version, unit by unit, and the rule that
carries optimizer state along.

A rewrite of a coupled group is a *unit map*: new unit j is old unit ``mapping[j]``
(replicated units appear several times, pruned ones not at all). Each slice of the group
is re-indexed by it. Weights, gradients and optimizer state move differently:

- weights: source slices are copied; sink slices are divided by the replica count
  ``c`` (Net2WiderNet), so the replicas' contributions add up to the old one;
- gradients: the reverse — a source slice's gradient is the old one over ``c`` (each
  replica gets ``1/c`` of the downstream signal), a sink slice's is copied;
- optimizer state follows the gradient it accumulates: a momentum buffer or Adam's
  first moment (linear in the gradient) like the gradient, Adam's second moment (the
  gradient squared) over ``c**2``; the step counter is kept.

    >>> t = UnitMap(group, mapping)
    >>> new_w = t.weights(old_weights)
    >>> new_g = t.like_gradient(old_grads)          # power 1; v: power=2
    >>> new_state = t.state(old_state, params)
"""

from __future__ import annotations

import numpy as np

from ...errors import RewriteError
from ...graph.expr import Call, Constant, Function
from ...graph.functor import ExprMutator
from ...ops.types import Attrs
from ..optim import state_owner
from .coupling import SINK, Group, Slice
from .ownership import is_mask

#: how each optimizer slot scales with the gradient (None: not per element; kept)
SLOT_POWER = {"momentum": 1, "m": 1, "v": 2, "step": None}


class UnitMap:
    """The re-indexing of ``group``'s units by ``mapping`` (new unit j = old unit
    ``mapping[j]``). New unit j carries ``share[j]`` of its old unit's outgoing weight
    (default ``1/c``, c its replica count; a split may share unevenly)."""

    def __init__(self, group: Group, mapping, share=None):
        mapping = np.asarray(mapping, dtype=np.int64)
        if mapping.ndim != 1 or len(mapping) == 0 or mapping.min() < 0 or \
                mapping.max() >= group.units:
            raise RewriteError(f"a unit map of layer {group.layer!r} lists old units in "
                               f"0..{group.units - 1}, got {mapping.tolist()}")
        self.group, self.mapping = group, mapping
        self.count = np.bincount(mapping, minlength=group.units)  # replicas per old unit
        self.share = 1.0 / self.count[mapping] if share is None else \
            np.asarray(share, dtype=np.float64)
        if self.share.shape != mapping.shape:
            raise RewriteError(f"a unit map of layer {group.layer!r}: {len(self.share)} "
                               f"shares for {len(mapping)} new units")
        # a parameter may carry the group on two axes (a square gemm inside a residual
        # stream reads and writes the same units): every slice of it moves
        self.slices: dict[str, list[Slice]] = {}
        for s in group.slices:
            self.slices.setdefault(s.param, []).append(s)

    @property
    def units(self) -> int:
        return len(self.mapping)

    def _take(self, a: np.ndarray, s: Slice, per_unit=None) -> np.ndarray:
        size, n, b = a.shape[s.axis], self.group.units, s.block
        region = (s.offset + self.mapping[:, None] * b + np.arange(b)).ravel()
        idx = np.concatenate([np.arange(s.offset), region, np.arange(s.offset + n * b, size)])
        out = np.take(a, idx, axis=s.axis)
        if per_unit is None:
            return out
        scale = np.ones(len(idx))
        scale[s.offset:s.offset + len(region)] = np.repeat(per_unit, b)
        shape = [1] * a.ndim
        shape[s.axis] = -1
        return (out * scale.reshape(shape)).astype(a.dtype)

    def _move(self, name: str, a: np.ndarray, scale, scale_sinks: bool):
        for s in self.slices.get(name, ()):
            a = self._take(a, s, scale if (s.kind == SINK) == scale_sinks else None)
        return a

    def masks(self, masks: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Sparsity masks (by weight name) re-indexed like their weights, never scaled: a
        replica of an active weight is active."""
        return {k: self._move(k, v, None, True) for k, v in masks.items()}

    def reshapes(self) -> dict[str, tuple[int, ...]]:
        """The new target shape of each reshape (or expand) whose output carries the units."""
        out = {}
        for name, axis, _, block, shape in self.group.reshapes:
            new = list(shape)
            new[axis] += (self.units - self.group.units) * block
            out[name] = tuple(new)
        return out

    def weights(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The group's parameters among ``arrays`` re-indexed as weights (others as is)."""
        return {k: self._move(k, v, self.share, True) for k, v in arrays.items()}

    def like_gradient(self, arrays: dict[str, np.ndarray], power: int = 1):
        """Per-parameter tensors re-indexed the way gradients move: source slices times
        ``share**power`` (over ``c**power`` for replicas), sink slices copied."""
        return {k: self._move(k, v, self.share ** power, False) for k, v in arrays.items()}

    def state(self, state: dict[str, np.ndarray], params) -> dict[str, np.ndarray]:
        """Optimizer state (named ``<param>.<slot>``) transported by :data:`SLOT_POWER`."""
        out = {}
        for name, v in state.items():
            owner = state_owner(name, params)
            slot = name[len(owner) + 1:] if owner else None
            if owner is None or slot not in SLOT_POWER:
                raise RewriteError(f"optimizer state {name!r}: no transport rule for it (known "
                                   f"slots: {sorted(SLOT_POWER)}). Instead: add the slot's "
                                   "gradient power to SLOT_POWER")
            power = SLOT_POWER[slot]
            if power is None or owner not in self.slices:
                out[name] = v.copy()
            else:
                out[name] = self.like_gradient({owner: v}, power)[owner]
        return out


class SetWeights(ExprMutator):
    """Replace named constants by new arrays, the sparsity masks of the weights in
    ``masks`` and the target shapes of the reshape calls in ``reshapes`` (the graph
    re-infers every type)."""

    def __init__(self, values: dict[str, np.ndarray], masks: dict | None = None,
                 reshapes: dict | None = None):
        super().__init__()
        self.values, self.masks, self.reshapes = values, masks or {}, reshapes or {}

    def visit_Constant(self, c: Constant):
        if c.name in self.values:
            return Constant(self.values[c.name], c.name, c.owner)
        return c

    def visit_Call(self, call: Call):
        if is_mask(call) and call.args[0].name in self.masks:
            mask = Constant(self.masks[call.args[0].name])
            return Call("mul", (self.visit(call.args[0]), mask), call.attrs, call.name)
        if call.op in ("reshape", "expand") and call.name in self.reshapes:
            attrs = Attrs(dict(call.attrs, shape=self.reshapes[call.name]))
            return Call(call.op, (self.visit(call.args[0]),), attrs, call.name)
        return self.generic_visit(call)


def with_weights(func: Function, values: dict[str, np.ndarray],
                 masks: dict[str, np.ndarray] | None = None,
                 reshapes: dict[str, tuple] | None = None) -> Function:
    """``func`` with the named weights in ``values`` replaced (and the sparsity masks of
    the weights in ``masks``: a masked weight changing shape changes its mask with it; and
    the target shapes of the reshapes in ``reshapes``, which carry a rewritten group)."""
    return SetWeights(values, masks, reshapes).visit_function(func)


def masks_of(func: Function) -> dict[str, np.ndarray]:
    """The sparsity mask of every masked weight of ``func``, by weight name."""
    return {c.args[0].name: np.array(c.args[1].data) for c in func.calls() if is_mask(c)}


def weight_arrays(func: Function) -> dict[str, np.ndarray]:
    """The weights of ``func`` as arrays, by name."""
    return {k: np.array(c.data) for k, c in func.weights.items()}


def parameter_count(func: Function) -> int:
    """The number of weight elements of ``func``."""
    return int(sum(c.data.size for c in func.weights.values()))


__all__ = ["SLOT_POWER", "UnitMap", "SetWeights", "with_weights", "masks_of", "weight_arrays",
           "parameter_count"]
