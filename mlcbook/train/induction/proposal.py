"""Proposing a starting structure for a new problem: every candidate ranked by the structure
model, with the reason (the features that moved its prediction most) and a growth policy
for the runtime read from what it did on the most similar corpus problems.

    >>> ranked = propose(make("moons", seed=7))           # fits on the shipped corpus
    >>> second = ranked[1]
    >>> second.structure.name, second.expected, second.reasons
    ('mlp-1x16-relu', 0.3, [('log2_params', 0.385), ('depth', 0.062), ...])
    >>> second.policy
    {'grow': True, 'max_width': 128, 'widenings': 1.56, 'first_at': 92, 'neighbours': [...]}
    >>> rt = Runtime(trainer, policies=second.policies())  # widen on plateaus up to 128
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ...errors import InductionError
from .corpus import WidenOnPlateau, load_corpus
from .features import PROBLEM_FEATURES, problem_features
from .model import StructureModel, fit
from .problems import Problem
from .structures import CANDIDATES, Structure


@dataclass
class Proposal:
    """A candidate start, its expected relative score, why, and when to grow it."""

    structure: Structure
    expected: float
    reasons: list = field(default_factory=list)
    policy: dict = field(default_factory=dict)

    def policies(self) -> list:
        """The runtime policies the proposal's growth policy asks for (none: don't grow)."""
        if not self.policy.get("grow"):
            return []
        return [WidenOnPlateau(max_width=self.policy["max_width"])]


@lru_cache(maxsize=1)
def shipped_model() -> StructureModel:
    """The structure model fitted to the corpus the package ships (fitted once)."""
    return fit(load_corpus())


def rank(model: StructureModel, features: dict, candidates=CANDIDATES) -> list[Structure]:
    """The candidates, the one ``model`` expects to do best on a problem with ``features``
    first; ties go to the one with fewer parameters."""
    candidates = list(candidates)
    if not candidates:
        raise InductionError("rank/propose: no candidate structures. Instead: pass e.g. "
                             "candidates=[Structure(1, 16), Structure(2, 32)]")
    scored = [(-round(model.predict(features, s), 6),
               model.row(features, s)["log2_params"], k) for k, s in enumerate(candidates)]
    return [candidates[k] for _, _, k in sorted(scored)]


def growth_policy(corpus: list[dict], features: dict, structure: Structure,
                  neighbours: int = 3) -> dict:
    """When to grow ``structure`` on a problem with ``features``: what the runtime did to it
    on the ``neighbours`` most similar corpus problems. Grow (widen on plateaus) up to the
    widest it reached in the runs there that scored at least their problem's median."""
    problems = {r["problem"]: r["features"] for r in corpus}
    names = list(problems)
    table = np.array([[problems[n][f] for f in PROBLEM_FEATURES] for n in names], float)
    scale = table.std(axis=0) + 1e-9
    me = np.array([features[f] for f in PROBLEM_FEATURES], float)
    near = [names[k] for k in np.argsort(((table - me) / scale) ** 2 @ np.ones(len(me)))
            [:neighbours]]
    runs = [r for r in corpus if r["problem"] in near and r["name"] == structure.name]
    median = {n: np.median([r["score"] for r in corpus if r["problem"] == n]) for n in near}
    good = [r for r in runs if r["score"] >= median[r["problem"]]]
    widest = max((max(r["final"]["widths"] or [0]) for r in good), default=0)
    firsts = [r["rewrites"][0]["step"] for r in runs if r["rewrites"]]
    return {"grow": structure.depth > 0 and widest > structure.width,
            "max_width": int(max(widest, structure.width)),
            "widenings": round(float(np.mean([len(r["rewrites"]) for r in runs] or [0])), 2),
            "first_at": int(np.median(firsts)) if firsts else None, "neighbours": near}


def propose(problem: Problem | None, model: StructureModel | None = None,
            candidates=CANDIDATES, corpus: list[dict] | None = None,
            features: dict | None = None) -> list[Proposal]:
    """Every candidate as a :class:`Proposal`, best first (``model``: default the shipped
    corpus's; ``features``: the problem's, if computed already)."""
    if problem is None and features is None:
        raise InductionError("propose needs a problem or its features. Instead: "
                             "propose(make('moons', 7))")
    feats = features or problem_features(problem)
    model = model or shipped_model()
    corpus = load_corpus() if corpus is None else corpus
    return [Proposal(s, round(model.predict(feats, s), 4), model.explain(feats, s),
                     growth_policy(corpus, feats, s))
            for s in rank(model, feats, candidates)]


__all__ = ["Proposal", "shipped_model", "rank", "growth_policy", "propose"]
