"""The structure model: from a problem's features and a structure to how well that
structure does on that problem, learned from a corpus of runs — shallow boosted trees
(xgboost, depth 2), read back as rules and feature importances.

    >>> sm = fit(corpus)
    >>> sm.predict(problem_features(p), (32, 32))       # expected score above the median
    0.031
    >>> print(sm.rules())
    tree 0: if linear_score < 0.62 and depth >= 1.5: +0.021 ...
    >>> sm.importances()                                  # gain per feature
    {'linear_score': 0.41, 'depth': 0.22, ...}

The target of a run is its score minus the median score of its problem's runs: problems
differ in how hard they are, and what the model should learn is which structure does
better *on a given problem*, not which problems are easy.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from ...errors import InductionError
from ...optional import require
from .features import PROBLEM_FEATURES

#: the structure features, after the problem's
STRUCTURE_FEATURES = ("depth", "log2_width", "log2_params")
FEATURES = PROBLEM_FEATURES + STRUCTURE_FEATURES


def structure_features(widths, inputs: int, outputs: int) -> dict[str, float]:
    """Depth, log2 of the mean hidden width, log2 of the parameter count."""
    widths = [int(w) for w in widths]
    sizes = [inputs, *widths, outputs]
    params = sum((a + 1) * b for a, b in zip(sizes[:-1], sizes[1:]))
    return {"depth": len(widths), "log2_width": float(np.log2(np.mean(widths))),
            "log2_params": float(np.log2(params))}


def _row(features: dict, widths) -> list[float]:
    s = structure_features(widths, int(features["inputs"]), int(features["outputs"]))
    return [float(features[k]) for k in PROBLEM_FEATURES] + [s[k] for k in STRUCTURE_FEATURES]


def training_rows(corpus: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: one row per run (problem features, the run's final structure), the
    target its score relative to the median of its problem."""
    if not corpus:
        raise InductionError("the corpus is empty. Instead: build one with build_corpus")
    by_problem = defaultdict(list)
    for rec in corpus:
        by_problem[rec["problem"]].append(rec["score"])
    median = {k: float(np.median(v)) for k, v in by_problem.items()}
    x = np.array([_row(rec["features"], rec["final"]["widths"]) for rec in corpus])
    y = np.array([rec["score"] - median[rec["problem"]] for rec in corpus])
    return x, y


class StructureModel:
    """Boosted depth-2 regression trees over :data:`FEATURES` (an ``xgboost.Booster``)."""

    def __init__(self, booster):
        self.booster = booster

    def predict(self, features: dict, widths) -> float:
        """The expected score of ``widths`` on a problem with ``features``, relative to the
        median structure."""
        xgboost = require("xgboost", "structural induction (mb.train.induction)")

        row = xgboost.DMatrix(np.array([_row(features, widths)]), feature_names=list(FEATURES))
        return float(self.booster.predict(row)[0])

    def importances(self) -> dict[str, float]:
        """Each feature's share of the trees' total gain (features never split on: 0)."""
        gain = self.booster.get_score(importance_type="total_gain")
        total = sum(gain.values()) or 1.0
        return {name: round(gain.get(name, 0.0) / total, 4) for name in FEATURES}

    def rules(self, trees: int = 5) -> str:
        """The first ``trees`` trees as if-then rules, one leaf per line."""
        dumps = self.booster.get_dump()
        lines = []
        for t, dump in enumerate(dumps[:trees]):
            lines.extend(f"tree {t}: {rule}" for rule in _leaf_rules(dump))
        if len(dumps) > trees:
            lines.append(f"... and {len(dumps) - trees} more trees")
        return "\n".join(lines)


_SPLIT = re.compile(r"(\d+):\[(\S+)<([-\d.e+]+)\] yes=(\d+),no=(\d+)")
_LEAF = re.compile(r"(\d+):leaf=([-\d.e+]+)")


def _leaf_rules(dump: str) -> list[str]:
    """'if a < 1 and b >= 2: +0.03' for each leaf of one tree's text dump."""
    splits, leaves = {}, {}
    for line in dump.splitlines():
        if m := _SPLIT.search(line):
            splits[int(m[1])] = (m[2], float(m[3]), int(m[4]), int(m[5]))
        elif m := _LEAF.search(line):
            leaves[int(m[1])] = float(m[2])
    out = []

    def walk(node, conds):
        if node in leaves:
            cond = " and ".join(conds) or "always"
            out.append(f"if {cond}: {leaves[node]:+.4f}")
            return
        name, cut, yes, no = splits[node]
        walk(yes, conds + [f"{name} < {cut:g}"])
        walk(no, conds + [f"{name} >= {cut:g}"])
    walk(0, [])
    return out


def fit(corpus: list[dict], trees: int = 40, depth: int = 2, seed: int = 0) -> StructureModel:
    """A :class:`StructureModel` fitted to ``corpus`` (records of :func:`train_run`)."""
    xgboost = require("xgboost", "structural induction (mb.train.induction)")

    x, y = training_rows(corpus)
    if len(x) < 4:
        raise InductionError(f"fit: the corpus has {len(x)} runs; a structure model needs at "
                             "least 4. Instead: more problems or structures in build_corpus")
    params = {"max_depth": depth, "eta": 0.3, "min_child_weight": 2.0, "lambda": 1.0,
              "nthread": 1, "seed": seed, "objective": "reg:squarederror"}
    data = xgboost.DMatrix(x, label=y, feature_names=list(FEATURES))
    return StructureModel(xgboost.train(params, data, num_boost_round=trees))


__all__ = ["STRUCTURE_FEATURES", "FEATURES", "structure_features", "training_rows",
           "StructureModel", "fit"]
