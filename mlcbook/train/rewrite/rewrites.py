"""Structural rewrites of a training model, each tagged with what it preserves and
carrying the optimizer state across.

- :func:`widen` (Net2WiderNet): replicate units of a layer; the outgoing weights of a
  unit with ``c`` replicas are divided by ``c``. Tag ``exact``: the outputs do not change.
  ``noise`` adds a zero-sum perturbation to the replicas' outgoing weights (it breaks their
  symmetry and still sums to the old weight, so the outputs stay exact).
- :func:`prune`: remove the least important units of a coupled group physically. Tag
  ``semantic`` (the outputs change), ``exact`` when every removed unit's outgoing weights
  are zero.
- :func:`split`: replace unit k by two units that share its outgoing weight as
  ``ratio`` and ``1 - ratio``; tag ``exact``, or ``epsilon`` when ``offset`` moves the
  two halves' incoming weights apart (by ``+offset*d`` and ``-offset*d``, d a random unit
  direction: splitting steepest descent's symmetric split).
- :func:`deepen` (in :mod:`.deepen`): insert a zero-initialized residual block; ``exact``.

    >>> r = widen(model, "fc1", 12, state=trainer.state, seed=0)
    >>> r.tag, r.model.weights["fc1.weight"].shape
    ('exact', (12, 64))

State rule (see :mod:`.transport`): transported slots follow their gradient; a pruned
unit's slots vanish. Widening never creates a fresh element inside an existing tensor (a
replica inherits its source's moments), so the per-tensor step counter stays valid: the
bias corrections of the copies are the ones their moments were accumulated under.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ...errors import RewriteError
from ...graph.expr import Function
from .coupling import SINK, SOURCE, coupled_group
from .ownership import FEATURE, parameters
from .transport import UnitMap, masks_of, parameter_count, weight_arrays, with_weights

EXACT, EPSILON, SEMANTIC = "exact", "epsilon", "semantic"


@dataclass
class Rewritten:
    """A rewritten model, its transported optimizer state, and what the rewrite keeps.

    ``like_gradient(arrays, power)`` moves per-parameter tensors of the old model the way
    their gradients move (used to check the state transport, and by tests)."""

    kind: str
    tag: str
    model: Function
    state: dict[str, np.ndarray] | None
    detail: dict = field(default_factory=dict)
    like_gradient: Callable[[dict, int], dict] | None = None

    def summary(self, before: Function) -> dict:
        """A log record: the rewrite, its tag, its detail and the parameter counts."""
        return {"rewrite": self.kind, "tag": self.tag, **self.detail,
                "params_before": parameter_count(before),
                "params_after": parameter_count(self.model)}


def _apply(func: Function, umap: UnitMap, state, noise: float, seed) -> tuple[Function, dict]:
    arrays = weight_arrays(func)
    new = umap.weights(arrays)
    if noise:
        rng = np.random.default_rng(seed)
        for s in umap.group.slices:
            if s.kind == SINK:
                new[s.param] = _zero_sum_noise(new[s.param], s, umap, noise, rng)
    # a masked weight's mask moves with it; masked-out elements stay zero (noise included)
    masks = umap.masks(masks_of(func))
    new.update({k: (new[k] * m).astype(new[k].dtype) for k, m in masks.items()})
    names = list(arrays)
    return (with_weights(func, new, masks, umap.reshapes()),
            None if state is None else umap.state(state, names))


def _zero_sum_noise(a, s, umap: UnitMap, scale, rng):
    """Add noise to the replicas' slices of ``a`` that sums to zero over each unit's
    replicas (so their total, the old outgoing weight, is unchanged)."""
    dtype = a.dtype
    a = np.array(a, dtype=np.float64)
    moved = np.moveaxis(a, s.axis, 0)
    sd = float(moved.std()) or 1.0
    for old in np.nonzero(umap.count > 1)[0]:
        reps = np.nonzero(umap.mapping == old)[0]
        rows = (s.offset + reps[:, None] * s.block + np.arange(s.block))
        eps = rng.standard_normal((len(reps),) + moved[rows[0]].shape) * scale * sd
        eps -= eps.mean(axis=0, keepdims=True)
        moved[rows] += eps
    return np.moveaxis(moved, 0, s.axis).astype(dtype)


def _check_norms(func: Function, group, umap: UnitMap) -> str:
    """``exact`` unless a LayerNorm normalizes over the group's units non-uniformly."""
    info = parameters(func)
    over_features = any(FEATURE in info[p].roles for p in group.params(SOURCE))
    if over_features and len(set(umap.count.tolist())) > 1:
        return SEMANTIC
    return EXACT


def widen(func: Function, layer: str, width: int, state: dict | None = None,
          noise: float = 0.0, seed: int = 0, replicate=None) -> Rewritten:
    """``layer`` (a gemm, conv or matmul by a weight; or a reshape splitting off attention
    heads) with ``width`` output units: the old units, then replicas of ``replicate``
    (default: drawn at random by ``seed``). Its coupled group follows."""
    group = coupled_group(func, layer)
    n = group.units
    if width <= n:
        raise RewriteError(f"widen: layer {layer!r} has {n} units; the new width {width} must "
                           "be larger. Instead: use prune to make it narrower")
    if replicate is None:
        replicate = np.random.default_rng(seed).choice(n, width - n, replace=width - n > n)
    if len(replicate) != width - n:
        raise RewriteError(f"widen: replicate lists {len(replicate)} units, need {width - n}")
    umap = UnitMap(group, np.concatenate([np.arange(n), replicate]))
    model, new_state = _apply(func, umap, state, noise, seed)
    detail = {"layer": layer, "from": n, "to": width, "noise": noise,
              "group": [f"{s.param}[{s.axis}]" for s in group.slices]}
    return Rewritten("widen", _check_norms(func, group, umap), model, new_state, detail,
                     umap.like_gradient)


def split(func: Function, layer: str, unit: int, ratio: float = 0.5, offset: float = 0.0,
          state: dict | None = None, seed: int = 0) -> Rewritten:
    """``layer`` with unit ``unit`` split in two: the unit keeps ``ratio`` of its outgoing
    weights, a new last unit gets ``1 - ratio`` and the same incoming weights (moved apart
    by ``offset`` if given). Optimizer state follows the gradient, scaled by each half's
    share (Adam's ``m`` by it, ``v`` by its square, so both halves take the old step)."""
    group = coupled_group(func, layer)
    n = group.units
    if not 0 <= unit < n:
        raise RewriteError(f"split: layer {layer!r} has units 0..{n - 1}, got unit={unit}")
    if not 0.0 < ratio < 1.0:
        raise RewriteError(f"split: ratio={ratio} must be strictly between 0 and 1 (the "
                           "share of the outgoing weight the unit keeps)")
    share = np.ones(n + 1)
    share[unit], share[n] = ratio, 1.0 - ratio
    umap = UnitMap(group, np.append(np.arange(n), unit), share)
    model, new_state = _apply(func, umap, state, 0.0, seed)
    if offset:
        model = with_weights(model, _offset_halves(model, group, unit, n, offset, seed))
    detail = {"layer": layer, "unit": unit, "ratio": ratio, "offset": offset,
              "from": n, "to": n + 1}
    tag = _check_norms(func, group, umap)   # one unit replicated: uneven under LayerNorm
    return Rewritten("split", EPSILON if offset and tag == EXACT else tag, model, new_state,
                     detail, umap.like_gradient)


def _offset_halves(model: Function, group, unit: int, new: int, offset: float, seed) -> dict:
    """The source slices of ``unit`` moved by ``+offset*d``, of ``new`` by ``-offset*d``."""
    arrays, masks = weight_arrays(model), masks_of(model)
    rng = np.random.default_rng(seed)
    out = {}
    for s in group.slices:
        if s.kind != SOURCE:
            continue
        a = np.moveaxis(np.array(arrays[s.param], dtype=np.float64), s.axis, 0)
        d = rng.standard_normal((s.block,) + a.shape[1:])
        d *= offset / (np.linalg.norm(d) or 1.0)
        a[s.offset + unit * s.block + np.arange(s.block)] += d     # a head: its whole block
        a[s.offset + new * s.block + np.arange(s.block)] -= d
        a = np.moveaxis(a, 0, s.axis) * masks.get(s.param, 1.0)
        out[s.param] = a.astype(arrays[s.param].dtype)
    return out


def importance_l2(func: Function, layer: str) -> np.ndarray:
    """Per unit of ``layer``'s group: the summed squares of all its source and sink slices."""
    group = coupled_group(func, layer)
    arrays = weight_arrays(func)
    score = np.zeros(group.units)
    for s in group.slices:
        a = np.moveaxis(arrays[s.param].astype(np.float64), s.axis, 0)
        region = a[s.offset:s.offset + group.units * s.block] ** 2
        score += region.reshape(group.units, -1).sum(axis=1)
    return score


def prune(func: Function, layer: str, keep: int | None = None, state: dict | None = None,
          importance=None, remove=None) -> Rewritten:
    """``layer`` with ``keep`` units: the most important ones (``importance``, one score per
    unit; default :func:`importance_l2`) or all but ``remove``."""
    group = coupled_group(func, layer)
    n = group.units
    if remove is not None:
        kept = np.setdiff1d(np.arange(n), np.asarray(remove, dtype=np.int64))
    else:
        if keep is None or not 0 < keep < n:
            raise RewriteError(f"prune: layer {layer!r} has {n} units; keep={keep} must be in "
                               f"1..{n - 1}. Instead: pass keep=k or remove=[units]")
        score = importance_l2(func, layer) if importance is None else np.asarray(importance)
        kept = np.sort(np.argsort(-score, kind="stable")[:keep])
    if len(kept) == 0:
        raise RewriteError(f"prune: cannot remove every unit of layer {layer!r}")
    umap = UnitMap(group, kept)
    model, new_state = _apply(func, umap, state, 0.0, 0)
    removed = np.setdiff1d(np.arange(n), kept)
    arrays = weight_arrays(func)
    silent = all(not np.any(np.take(np.moveaxis(arrays[s.param], s.axis, 0),
                                    (s.offset + removed[:, None] * s.block
                                     + np.arange(s.block)).ravel(), axis=0))
                 for s in group.slices if s.kind == SINK)
    detail = {"layer": layer, "from": n, "to": len(kept), "removed": removed.tolist()}
    return Rewritten("prune", EXACT if silent else SEMANTIC, model, new_state, detail,
                     umap.like_gradient)


__all__ = ["EXACT", "EPSILON", "SEMANTIC", "Rewritten", "widen", "split", "prune",
           "importance_l2"]
