"""Judging induction honestly, on a corpus where every candidate was trained to the same
budget on every problem and seed (so the true rank of any pick is known): leave one
*family* out, fit on the rest, and rank the held-out family's candidates.

    >>> cases = leave_one_family_out(corpus)
    >>> summary(cases)["induction"]                  # the shipped corpus
    {'mean_rank': 3.373, 'interval': (2.683, 4.095), 'regret': 0.0397, ...}
    >>> learning_curve(corpus, fractions=(0.25, 0.5, 1.0), repeats=2)
    [(0.25, 3.893), (0.5, 4.02), (1.0, 3.373)]

Each case is one held-out (problem, seed) with the true rank (1 = best, ties averaged) and
the regret (best score minus the pick's) of each method's pick:

- ``induction``: the structure model's best-ranked start;
- ``random``: a random pick (its expectation: the mean rank);
- ``blind``: the problem-blind prior, the start with the best mean rank on the training
  families;
- ``search``: random search at the same compute as one run: ``trials`` random candidates
  trained ``steps / trials`` steps each (a run's validation score at that point — the
  runtime's policy looks only back, so that is a shorter run), the best kept (expectation
  over 200 draws);
- ``guided``: the same search over the model's ``trials`` best-ranked candidates;
- ``oracle``: not a method but a ceiling — the start with the best mean rank on the
  *other* seeds of the same problem: how much of a start's rank the problem decides at
  all (the rest is the seed's noise), the most any problem features could give.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...errors import InductionError
from .model import fit
from .proposal import rank
from .structures import Structure

METHODS = ("induction", "guided", "search", "blind", "random", "oracle")


def _groups(corpus):
    groups = defaultdict(dict)
    for r in corpus:
        groups[(r["problem"], r["seed"])][r["name"]] = r
    return groups


def _ranks(scores: dict) -> dict:
    """1 = best; ties share the mean of their places."""
    names = list(scores)
    s = np.array([scores[n] for n in names])
    return {n: float(1 + (s > s[k]).sum() + ((s == s[k]).sum() - 1) / 2)
            for k, n in enumerate(names)}


def blind_pick(corpus) -> str:
    """The start with the best mean rank over ``corpus``'s (problem, seed) groups."""
    total = defaultdict(list)
    for runs in _groups(corpus).values():
        for name, r in _ranks({n: v["score"] for n, v in runs.items()}).items():
            total[name].append(r)
    return min(total, key=lambda n: (np.mean(total[n]), n))


def _search(runs: dict, ranks: dict, pool: list[str], trials: int) -> tuple[float, float]:
    """Best-by-early-validation among ``pool``: (true rank, regret) of the pick."""
    any_run = next(iter(runs.values()))
    at = str(max(1, any_run["steps"] // trials))
    if at not in any_run["val"]:
        raise InductionError(f"search with trials={trials}: the runs have validation scores "
                             f"at steps {sorted(any_run['val'], key=int)}, not at {at}. "
                             "Instead: trials=2 or 4")
    pick = max(pool, key=lambda n: (runs[n]["val"][at], -ranks[n]))
    best = max(r["score"] for r in runs.values())
    return ranks[pick], best - runs[pick]["score"]


def leave_one_family_out(corpus: list[dict], trials: int = 4, draws: int = 200,
                         seed: int = 0, fraction: float = 1.0, **fit_kw) -> list[dict]:
    """One case per held-out (problem, seed), over every family of ``corpus`` in turn;
    ``fraction`` < 1 fits each fold on that share of its training problems."""
    families = sorted({r["family"] for r in corpus})
    if len(families) < 2:
        raise InductionError(f"leave_one_family_out: the corpus has the families "
                             f"{families}; holding one out needs at least 2. Instead: a "
                             "corpus over several problem families (suite())")
    rng = np.random.default_rng(seed)
    cases = []
    for fam in families:
        train = [r for r in corpus if r["family"] != fam]
        if fraction < 1.0:
            names = sorted({r["problem"] for r in train})
            keep = set(rng.choice(names, max(2, int(round(fraction * len(names)))),
                                  replace=False))
            train = [r for r in train if r["problem"] in keep]
        model, blind = fit(train, **fit_kw), blind_pick(train)
        held = _groups([r for r in corpus if r["family"] == fam])
        for (problem, s), runs in sorted(held.items()):
            others = [r for (p, k), r in held.items() if p == problem and k != s]
            cases.append(_case(model, blind, problem, fam, s, runs, trials, draws, rng,
                               blind_pick([v for o in others for v in o.values()])
                               if others else blind))
    return cases


def _case(model, blind, problem, family, seed, runs, trials, draws, rng, oracle) -> dict:
    names = sorted(runs)
    ranks = _ranks({n: runs[n]["score"] for n in names})
    best = max(r["score"] for r in runs.values())
    feats = next(iter(runs.values()))["features"]
    structures = [Structure.from_json(runs[n]["structure"]) for n in names]
    order = [s.name for s in rank(model, feats, structures)]
    searched = [_search(runs, ranks, list(rng.choice(names, min(trials, len(names)),
                                                     replace=False)), trials)
                for _ in range(draws)]
    guided = _search(runs, ranks, order[:trials], trials)
    return {"problem": problem, "family": family, "seed": seed, "candidates": len(names),
            "pick": order[0], "blind_pick": blind, "best": min(ranks, key=ranks.get),
            "rank": {"induction": ranks[order[0]], "guided": guided[0],
                     "search": float(np.mean([r for r, _ in searched])),
                     "blind": ranks[blind], "random": float(np.mean(list(ranks.values()))),
                     "oracle": ranks[oracle]},
            "regret": {"induction": best - runs[order[0]]["score"], "guided": guided[1],
                       "search": float(np.mean([g for _, g in searched])),
                       "blind": best - runs[blind]["score"],
                       "random": float(np.mean([best - r["score"] for r in runs.values()])),
                       "oracle": best - runs[oracle]["score"]}}


def bootstrap(cases: list[dict], value, resamples: int = 2000, seed: int = 0):
    """The mean of ``value(case)`` and its 95% bootstrap interval, resampling *problems*
    (a problem's seeds are not independent of each other)."""
    by_problem = defaultdict(list)
    for c in cases:
        by_problem[c["problem"]].append(value(c))
    groups = list(by_problem.values())
    rng = np.random.default_rng(seed)
    means = []
    for _ in range(resamples):
        pick = rng.integers(0, len(groups), len(groups))
        means.append(np.mean([v for k in pick for v in groups[k]]))
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(np.mean([value(c) for c in cases])), (float(lo), float(hi))


def summary(cases: list[dict]) -> dict:
    """Per method: mean rank with its interval, mean regret, and the interval of the mean
    rank difference to induction (negative: induction is better)."""
    out = {}
    for m in METHODS:
        mean, interval = bootstrap(cases, lambda c: c["rank"][m])
        diff = bootstrap(cases, lambda c: c["rank"]["induction"] - c["rank"][m])
        out[m] = {"mean_rank": round(mean, 3), "interval": tuple(round(v, 3) for v in interval),
                  "regret": round(float(np.mean([c["regret"][m] for c in cases])), 4),
                  "induction_minus": (round(diff[0], 3),
                                      tuple(round(v, 3) for v in diff[1]))}
    return out


def learning_curve(corpus: list[dict], fractions=(0.25, 0.5, 0.75, 1.0), repeats: int = 3,
                   **kw) -> list[tuple[float, float]]:
    """``(fraction, mean rank of induction)``: leave one family out with each fold fit on
    that share of its training problems (``repeats`` draws each)."""
    out = []
    for f in fractions:
        reps = 1 if f >= 1.0 else repeats
        ranks = [c["rank"]["induction"] for k in range(reps)
                 for c in leave_one_family_out(corpus, draws=1, seed=k, fraction=f, **kw)]
        out.append((f, round(float(np.mean(ranks)), 3)))
    return out


__all__ = ["METHODS", "blind_pick", "leave_one_family_out", "bootstrap", "summary",
           "learning_curve"]
