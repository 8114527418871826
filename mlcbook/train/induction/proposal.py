"""Proposing an initial structure for a new problem, and the check against random
architecture search at an equal training budget.

    >>> propose(sm, problem)                  # the candidate the structure model rates best
    (32, 32)
    >>> rank(sm, problem)[:3]                 # the candidates, best expected first
    [(32, 32), (32,), (64,)]
    >>> compare(sm, held_back, budget=480, trials=4, seeds=(0, 1, 2))
    {'rows': [...], 'median_induction': 0.84, 'median_guided': 0.85, 'median_random': 0.81,
     'wins': 8, 'guided_wins': 9, 'runs': 12, ...}

Equal budget: random search trains ``trials`` structures drawn from the same candidates
for ``budget // trials`` steps each and keeps the best by validation score; induction
trains its one proposal for all ``budget`` steps; *guided* search spends the budget like
random search but on the model's ``trials`` best-ranked candidates. All report the
validation score — which favours the two searches, since they also *select* on it.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...errors import InductionError
from .corpus import train_run
from .features import problem_features
from .model import StructureModel, structure_features
from .problems import Problem

#: the structures induction and random search choose from: 1 or 2 hidden layers of 8..64
CANDIDATES = tuple((w,) * depth for depth, w in itertools.product((1, 2), (8, 16, 32, 64)))


def rank(model: StructureModel, problem: Problem | None, candidates=CANDIDATES,
         features: dict | None = None) -> list[tuple]:
    """The candidate structures (hidden widths), the one ``model`` expects to do best on
    ``problem`` first; ties go to the one with fewer parameters."""
    if not candidates:
        raise InductionError("rank/propose: no candidate structures. Instead: pass e.g. "
                             "candidates=[(16,), (32, 32)]")
    feats = features or problem_features(problem)

    def key(widths):
        size = structure_features(widths, feats["inputs"], feats["outputs"])["log2_params"]
        return (-round(model.predict(feats, widths), 6), size)
    return [tuple(c) for c in sorted(candidates, key=key)]


def propose(model: StructureModel, problem: Problem | None, candidates=CANDIDATES,
            features: dict | None = None) -> tuple:
    """The candidate structure ``model`` expects to do best on ``problem`` (``features``,
    if given, instead of computing them)."""
    return rank(model, problem, candidates, features)[0]


def _search(problem: Problem, picks, budget: int, seed: int, feats, **kw) -> dict:
    runs = [train_run(problem, widths, budget // len(picks), seed, features=feats, **kw)
            for widths in picks]
    return dict(max(runs, key=lambda r: r["score"]), tried=[list(w) for w in picks])


def random_search(problem: Problem, budget: int, trials: int, seed: int,
                  candidates=CANDIDATES, **kw) -> dict:
    """The best of ``trials`` distinct random candidates, each trained ``budget // trials``
    steps; its run record with the candidates tried."""
    if not 1 <= trials <= len(candidates):
        raise InductionError(f"random_search: trials={trials} must be in "
                             f"1..{len(candidates)} (the number of candidates)")
    picks = np.random.default_rng(seed).choice(len(candidates), trials, replace=False)
    return _search(problem, [candidates[i] for i in picks], budget, seed,
                   problem_features(problem), **kw)


def compare(model: StructureModel, problems, budget: int, trials: int = 4, seeds=(0, 1, 2),
            candidates=CANDIDATES, **kw) -> dict:
    """Induction vs random search on each of ``problems`` and ``seeds``: the rows and the
    medians of both scores."""
    rows = []
    for p in problems:
        feats = problem_features(p)
        ranked = rank(model, p, candidates, feats)
        for seed in seeds:
            ind = train_run(p, ranked[0], budget, seed, features=feats, **kw)
            gd = _search(p, ranked[:trials], budget, seed, feats, **kw)
            rnd = random_search(p, budget, trials, seed, candidates, **kw)
            rows.append({"problem": p.name, "seed": seed, "proposal": list(ranked[0]),
                         "induction": ind["score"], "induction_final": ind["final"]["widths"],
                         "guided": gd["score"], "guided_pick": gd["initial"],
                         "random": rnd["score"], "random_pick": rnd["initial"],
                         "random_tried": rnd["tried"]})
    ind, gd, rnd = ([r[k] for r in rows] for k in ("induction", "guided", "random"))
    return {"rows": rows, "median_induction": float(np.median(ind)),
            "median_guided": float(np.median(gd)), "median_random": float(np.median(rnd)),
            "wins": int(sum(a > b for a, b in zip(ind, rnd))),
            "ties": int(sum(a == b for a, b in zip(ind, rnd))),
            "guided_wins": int(sum(a > b for a, b in zip(gd, rnd))),
            "guided_ties": int(sum(a == b for a, b in zip(gd, rnd))), "runs": len(rows)}


__all__ = ["CANDIDATES", "rank", "propose", "random_search", "compare"]
