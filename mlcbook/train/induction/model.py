"""The structure model: from a problem's features and the IR motifs of the structure a run
*started* from to how well that run did, learned from a corpus — boosted shallow trees
(XGBoost), read back as rules, importances and per-proposal reasons.

    >>> sm = fit(corpus)
    >>> sm.predict(problem_features(p), Structure(1, 16))   # expected score above the median
    0.3
    >>> sm.explain(problem_features(p), Structure(1, 16))[:2]
    [('log2_params', 0.385), ('depth', 0.062)]

A structure's row holds its depth, log2 hidden width and log2 parameter count, and the
count of each *motif* — an op feeding another (``gemm>layer_norm``, ``relu>add``,
``add>gemm``...) — in its IR, over the motif vocabulary of the corpus. The target of a
run is its score minus the median score of its problem's runs at the same seed, divided
by their spread: problems differ in how hard they are (and accuracy and R^2 in scale),
and what the model should learn is which start does better *on a given problem*.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache

import numpy as np

from ...errors import InductionError
from ...optional import require
from .features import PROBLEM_FEATURES, structure_of
from .structures import Structure

#: the size features of a structure, before its motif counts
SIZE_FEATURES = ("depth", "log2_width", "log2_params")
_FEATURE = "structural induction (mb.train.induction)"


def structure_features(structure: Structure, inputs: int, outputs: int) -> dict[str, float]:
    """Size features and ``motif:<a>><b>`` counts of ``structure``'s IR."""
    return dict(_structure_features(structure, int(inputs), int(outputs)))


@lru_cache(maxsize=4096)
def _structure_features(structure: Structure, inputs: int, outputs: int) -> dict:
    # building the IR is the costly part, and a fit or a ranking asks for the same few
    s = structure_of(structure.build(inputs, outputs, batch=1))
    out = {"depth": s["depth"], "log2_width": float(np.log2(np.mean(s["widths"] or [1]))),
           "log2_params": float(np.log2(s["params"]))}
    out.update({f"motif:{k}": v for k, v in s["motifs"].items()})
    return out


def _targets(corpus: list[dict]) -> np.ndarray:
    groups = defaultdict(list)
    for k, rec in enumerate(corpus):
        groups[(rec["problem"], rec["seed"])].append(k)
    y = np.zeros(len(corpus))
    for idx in groups.values():
        s = np.array([corpus[k]["score"] for k in idx])
        spread = float(np.percentile(s, 75) - np.percentile(s, 25)) or float(s.std()) or 1.0
        y[idx] = (s - np.median(s)) / max(spread, 1e-3)
    return y


class StructureModel:
    """Boosted regression trees over problem features and structure features (an
    ``xgboost.Booster``), with the feature names it was fit on."""

    def __init__(self, booster, features: tuple[str, ...]):
        self.booster, self.features = booster, features

    def _matrix(self, rows: list[dict]):
        xgboost = require("xgboost", _FEATURE)
        x = np.array([[float(r.get(f, 0.0)) for f in self.features] for r in rows])
        return xgboost.DMatrix(x, feature_names=[_safe(f) for f in self.features])

    def row(self, features: dict, structure: Structure) -> dict:
        """The model's input for ``structure`` on a problem with ``features``."""
        return {**features, **structure_features(structure, features["inputs"],
                                                 features["outputs"])}

    def predict(self, features: dict, structure: Structure) -> float:
        """The expected score of ``structure`` on a problem with ``features``, relative to
        the median start (in units of the scores' spread)."""
        return float(self.booster.predict(self._matrix([self.row(features, structure)]))[0])

    def explain(self, features: dict, structure: Structure, top: int = 3):
        """The ``top`` features that moved this prediction most: ``(name, contribution)``
        (tree SHAP values), largest first."""
        contrib = self.booster.predict(self._matrix([self.row(features, structure)]),
                                       pred_contribs=True)[0][:-1]
        order = np.argsort(-np.abs(contrib))[:top]
        return [(self.features[k], round(float(contrib[k]), 4)) for k in order]

    def importances(self) -> dict[str, float]:
        """Each feature's share of the trees' total gain (features never split on: 0)."""
        gain = self.booster.get_score(importance_type="total_gain")
        total = sum(gain.values()) or 1.0
        return {f: round(gain.get(_safe(f), 0.0) / total, 4) for f in self.features}

    def rules(self, trees: int = 5) -> str:
        """The first ``trees`` trees as if-then rules, one leaf per line."""
        dumps = self.booster.get_dump()
        names = {_safe(f): f for f in self.features}
        lines = []
        for t, dump in enumerate(dumps[:trees]):
            lines.extend(f"tree {t}: {rule}" for rule in _leaf_rules(dump, names))
        if len(dumps) > trees:
            lines.append(f"... and {len(dumps) - trees} more trees")
        return "\n".join(lines)


def _safe(name: str) -> str:
    """XGBoost feature names may not hold '<', '>', '[' or ','."""
    return name.replace(">", "->").replace("<", "_").replace("[", "(").replace(",", ";")


_SPLIT = re.compile(r"(\d+):\[(\S+)<([-\d.e+]+)\] yes=(\d+),no=(\d+)")
_LEAF = re.compile(r"(\d+):leaf=([-\d.e+]+)")


def _leaf_rules(dump: str, names: dict) -> list[str]:
    """'if a < 1 and b >= 2: +0.03' for each leaf of one tree's text dump."""
    splits, leaves = {}, {}
    for line in dump.splitlines():
        if m := _SPLIT.search(line):
            splits[int(m[1])] = (names.get(m[2], m[2]), float(m[3]), int(m[4]), int(m[5]))
        elif m := _LEAF.search(line):
            leaves[int(m[1])] = float(m[2])
    out = []

    def walk(node, conds):
        if node in leaves:
            out.append(f"if {' and '.join(conds) or 'always'}: {leaves[node]:+.4f}")
            return
        name, cut, yes, no = splits[node]
        walk(yes, conds + [f"{name} < {cut:g}"])
        walk(no, conds + [f"{name} >= {cut:g}"])
    walk(0, [])
    return out


def training_rows(corpus: list[dict]) -> tuple[list[dict], np.ndarray]:
    """One input row per run (problem features, the *starting* structure's features) and
    the targets (see the module docstring)."""
    if not corpus:
        raise InductionError("the corpus is empty. Instead: build one with build_corpus")
    rows = [{**rec["features"], **structure_features(Structure.from_json(rec["structure"]),
                                                     rec["features"]["inputs"],
                                                     rec["features"]["outputs"])}
            for rec in corpus]
    return rows, _targets(corpus)


def fit(corpus: list[dict], trees: int = 60, depth: int = 3, seed: int = 0,
        problem_features=PROBLEM_FEATURES) -> StructureModel:
    """A :class:`StructureModel` fitted to ``corpus`` (records of :func:`.train_run`);
    ``problem_features=()`` fits a problem-blind model (structure features only)."""
    xgboost = require("xgboost", _FEATURE)
    rows, y = training_rows(corpus)
    if len(rows) < 4:
        raise InductionError(f"fit: the corpus has {len(rows)} runs; a structure model needs "
                             "at least 4. Instead: more problems or structures in build_corpus")
    motifs = sorted({k for r in rows for k in r if k.startswith("motif:")})
    model = StructureModel(None, tuple(problem_features) + SIZE_FEATURES + tuple(motifs))
    params = {"max_depth": depth, "eta": 0.1, "min_child_weight": 3.0, "lambda": 1.0,
              "subsample": 0.8, "nthread": 1, "seed": seed, "objective": "reg:squarederror"}
    data = model._matrix(rows)
    data.set_label(y)
    model.booster = xgboost.train(params, data, num_boost_round=trees)
    return model


__all__ = ["SIZE_FEATURES", "structure_features", "training_rows", "StructureModel", "fit"]
