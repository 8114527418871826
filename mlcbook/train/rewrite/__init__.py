"""``mb.train.rewrite``: change a model's structure while it trains.

- :mod:`.ownership`: which call owns each parameter, the role of each axis;
- :mod:`.coupling`: the coupled group of a layer's units (DepGraph-style);
- :mod:`.transport`: re-indexing weights, gradients and optimizer state by a unit map;
- :mod:`.rewrites` and :mod:`.deepen`: widen, split, prune, deepen, each with a
  preservation tag; :mod:`.sparse`: RigL's drop/regrow on a masked weight;
- :mod:`.observers`, :mod:`.triggers`, :mod:`.policies`: what is measured, when a change
  may happen, what change is decided;
- :mod:`.snapshots` and :mod:`.runtime`: the loop that pauses, rewrites, rebinds the
  optimizer state, recompiles and resumes; snapshots, rollback and fork.

    >>> r = mb.train.rewrite.widen(model, "fc1", 12, state=trainer.state)
    >>> r.tag                                   # outputs unchanged
    'exact'
"""

from .coupling import Group, Slice, coupled_group
from .deepen import deepen
from .ownership import ParamInfo, parameters, state_of
from .rewrites import EPSILON, EXACT, SEMANTIC, Rewritten, importance_l2, prune, split, widen
from .observers import LossStats, gradient_norms, unit_stats
from .policies import GrowOnPlateau, PruneDead, RollbackOnInstability
from .runtime import Runtime
from .snapshots import Snapshot, SnapshotRing
from .sparse import dense_gradient, mask_of, rigl, sparsify
from .triggers import EpochBoundary, Instability, Plateau, Warmup
from .transport import SLOT_POWER, UnitMap, parameter_count, weight_arrays, with_weights

__all__ = ["Group", "Slice", "coupled_group", "deepen", "ParamInfo", "parameters",
           "state_of", "EPSILON", "EXACT", "SEMANTIC", "Rewritten", "importance_l2", "prune",
           "split", "widen", "SLOT_POWER", "UnitMap", "parameter_count", "weight_arrays",
           "with_weights", "LossStats", "gradient_norms", "unit_stats", "GrowOnPlateau",
           "PruneDead", "RollbackOnInstability", "Runtime", "Snapshot", "SnapshotRing",
           "EpochBoundary", "Instability", "Plateau", "Warmup", "dense_gradient", "mask_of",
           "rigl", "sparsify"]
