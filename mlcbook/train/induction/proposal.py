"""Proposing an initial structure for a new problem, and the check against random
architecture search at an equal training budget.

    >>> propose(sm, problem)                  # the candidate the structure model rates best
    (32, 32)
    >>> compare(sm, held_back, budget=480, trials=4, seeds=(0, 1, 2))
    {'rows': [...], 'median_induction': 0.84, 'median_random': 0.81, 'wins': 8, 'runs': 12}

Equal budget: random search trains ``trials`` structures drawn from the same candidates
for ``budget // trials`` steps each and keeps the best by validation score; induction
trains its one proposal for all ``budget`` steps. Both report the validation score —
which favours random search, since it also *selects* on it.
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


def propose(model: StructureModel, problem: Problem, candidates=CANDIDATES,
            features: dict | None = None):
    """The candidate structure (hidden widths) ``model`` expects to do best on ``problem``;
    ties go to the one with fewer parameters."""
    if not candidates:
        raise InductionError("propose: no candidate structures. Instead: pass e.g. "
                             "candidates=[(16,), (32, 32)]")
    feats = features or problem_features(problem)

    def key(widths):
        size = structure_features(widths, feats["inputs"], feats["outputs"])["log2_params"]
        return (-round(model.predict(feats, widths), 6), size)
    return tuple(min(candidates, key=key))


def random_search(problem: Problem, budget: int, trials: int, seed: int,
                  candidates=CANDIDATES, **kw) -> dict:
    """The best of ``trials`` distinct random candidates, each trained ``budget // trials``
    steps; its run record with the candidates tried."""
    if not 1 <= trials <= len(candidates):
        raise InductionError(f"random_search: trials={trials} must be in "
                             f"1..{len(candidates)} (the number of candidates)")
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(candidates), trials, replace=False)
    feats = problem_features(problem)
    runs = [train_run(problem, candidates[i], budget // trials, seed, features=feats, **kw)
            for i in picks]
    best = max(runs, key=lambda r: r["score"])
    return dict(best, tried=[list(candidates[i]) for i in picks])


def compare(model: StructureModel, problems, budget: int, trials: int = 4, seeds=(0, 1, 2),
            candidates=CANDIDATES, **kw) -> dict:
    """Induction vs random search on each of ``problems`` and ``seeds``: the rows and the
    medians of both scores."""
    rows = []
    for p in problems:
        feats = problem_features(p)
        proposal = propose(model, p, candidates, feats)
        for seed in seeds:
            ind = train_run(p, proposal, budget, seed, features=feats, **kw)
            rnd = random_search(p, budget, trials, seed, candidates, **kw)
            rows.append({"problem": p.name, "seed": seed, "proposal": list(proposal),
                         "induction": ind["score"], "induction_final": ind["final"]["widths"],
                         "random": rnd["score"], "random_pick": rnd["initial"],
                         "random_tried": rnd["tried"]})
    ind = [r["induction"] for r in rows]
    rnd = [r["random"] for r in rows]
    return {"rows": rows, "median_induction": float(np.median(ind)),
            "median_random": float(np.median(rnd)),
            "wins": int(sum(a > b for a, b in zip(ind, rnd))),
            "ties": int(sum(a == b for a, b in zip(ind, rnd))), "runs": len(rows)}


__all__ = ["CANDIDATES", "propose", "random_search", "compare"]
