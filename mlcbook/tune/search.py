"""The search: simulated annealing over a space's decisions, guided by a cost model, measuring
a batch of the most promising unmeasured points each round (AutoTVM's loop).

    >>> result = tune(func, trials=64, model="xgboost", database="records.jsonl")
    >>> result.best_seconds, result.best.decisions
    >>> result.curve()                        # best seconds after each trial

Each round:

1. anneal: start from the best points measured so far and random ones, mutate one knob
   at a time, keep a change if the model scores it higher, or with probability
   ``exp(delta / temperature)`` if lower, the temperature falling each step. Proposals are
   built without the schedule's legality checks (``Space.point(..., checks=False)``, several
   times faster) and their features are computed once per point;
2. pick the ``batch`` best-scored points never measured, each built again with checks (an
   illegal one is dropped), of which a share ``epsilon`` are replaced by random points (so
   the model also learns where it is wrong);
3. measure them (:mod:`.measure`), record them (:mod:`.database`), refit the model on
   every measurement so far.

With ``model="random"`` the annealing is skipped: every point is drawn at random.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import ScheduleError
from ..graph.default_schedule import default_schedule
from ..tir.function import PrimFunc
from .cost_model import CostModel, RandomModel, make_model
from .database import DEFAULT_TRACE, Database, Record, workload_key
from .errors import TuneArgumentError
from .features import features, flop_count
from .measure import Job, Measurer
from .space import Point, Space


@dataclass
class TuneResult:
    """What a tuning run found: ``history`` holds the seconds (None: an error) of each trial
    in the order measured, previous runs' records first; ``default_seconds`` the default
    schedule's, when the run measured it as a baseline (not a trial)."""

    func: PrimFunc
    workload: str
    flops: int
    history: list = field(default_factory=list)
    best: Optional[Point] = None
    best_seconds: Optional[float] = None
    default_seconds: Optional[float] = None

    def curve(self) -> list:
        """The best seconds after each trial (None until one succeeded)."""
        out, best = [], None
        for s in self.history:
            if s is not None and (best is None or s < best):
                best = s
            out.append(best)
        return out

    def gflops_curve(self) -> list:
        return [0.0 if s is None else self.flops / s / 1e9 for s in self.curve()]


class _Scorer:
    """Features and scores of points, each point's features computed once."""

    def __init__(self, model: CostModel):
        self.model = model
        self._features: dict = {}

    def features(self, p: Point) -> np.ndarray:
        if p.key not in self._features:
            self._features[p.key] = features(p.func)
        return self._features[p.key]

    def scores(self, points: list) -> np.ndarray:
        if not points:
            return np.zeros(0)
        return self.model.predict(np.array([self.features(p) for p in points]))


def _random_point(space: Space, rng: random.Random, tries: int = 20,
                  checks: bool = True) -> Optional[Point]:
    for _ in range(tries):
        try:
            return space.sample(rng.randrange(2**31), checks=checks)
        except ScheduleError:
            continue  # a point the space rejects: draw another
    return None


def _mutate(space: Space, p: Point, rng: random.Random) -> Optional[Point]:
    try:
        return space.mutate(p, rng, checks=False)  # a proposal: checked once picked
    except ScheduleError:
        return None


def anneal(space: Space, scorer: _Scorer, starts: list, measured: set, rng: random.Random,
           steps: int = 4, temperature: float = 1.0) -> list:
    """Points visited by annealing chains from ``starts``, never measured ones, best first."""
    seen: dict = {}
    chain = [p for p in starts if p is not None]
    scores = list(scorer.scores(chain))
    for p, s in zip(chain, scores):
        seen[p.key] = (s, p)
    for step in range(steps):
        t = temperature * (1 - step / max(steps, 1)) + 1e-3
        proposals = [_mutate(space, p, rng) for p in chain]
        ok = [q for q in proposals if q is not None]
        new_scores = iter(scorer.scores(ok))
        for k, q in enumerate(proposals):
            if q is None:
                continue
            s = next(new_scores)
            seen.setdefault(q.key, (s, q))
            if s >= scores[k] or rng.random() < math.exp((s - scores[k]) / t):
                chain[k], scores[k] = q, s
    ranked = sorted(seen.values(), key=lambda sp: -sp[0])
    return [p for _, p in ranked if p.key not in measured]


def tune(func: PrimFunc, trials: int, *, model="xgboost", database=None, target=None,
         space: Optional[Space] = None, measurer: Optional[Measurer] = None, executor=None,
         batch: int = 8, epsilon: float = 0.2, population: int = 8, steps: int = 4,
         seed: int = 0, timeout: float = 60.0, repeat: int = 3, progress: bool = True,
         name: str = "", baseline: bool = False) -> TuneResult:
    """Tune ``func`` with ``trials`` more measurements; returns a :class:`TuneResult`.

    ``database`` (a path or a :class:`Database`) is read first (its points are not measured
    again) and receives every new record; ``measurer`` or ``executor`` say where candidates
    run (default: one local worker process with ``timeout``). With ``baseline`` the default
    schedule is measured too (once per database, not counted as a trial) and recorded with
    :data:`DEFAULT_TRACE`, so that records never make the kernel slower than untuned.
    """
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 0:
        raise TuneArgumentError(f"trials must be a non-negative int, got {trials!r}")
    if not isinstance(batch, int) or batch < 1 or not 0 <= epsilon <= 1:
        raise TuneArgumentError(f"batch must be a positive int and epsilon in [0, 1], got "
                                f"{batch!r} and {epsilon!r}")
    space = space or Space(func, target)
    db = database if isinstance(database, Database) else Database(database)
    cost = make_model(model, seed)
    scorer = _Scorer(cost)
    rng = random.Random(seed)
    key = workload_key(func, space.target)
    result = TuneResult(func, key, flop_count(func))
    X, y, measured, good = [], [], set(), []
    for r in db.records(key):  # resume: learn from what earlier runs measured
        if r.trace == DEFAULT_TRACE:
            if r.seconds is not None:
                result.default_seconds = min(r.seconds, result.default_seconds or r.seconds)
            continue
        measured.add(r.key)
        result.history.append(r.seconds)
        try:
            p = space.point(r.decisions)
        except ScheduleError:
            continue
        X.append(scorer.features(p))
        y.append(0.0 if r.seconds is None else 1.0 / r.seconds)
        if r.seconds is not None:
            good.append((r.seconds, p))
    own = measurer is None
    measurer = measurer or Measurer(executor=executor, timeout=timeout)
    bar = _progress(trials, progress, name or func.name)
    try:
        if baseline and trials and result.default_seconds is None:
            untuned = default_schedule(func, space.target)
            m, = measurer.measure([Job.of(func, untuned, space.target, repeat=repeat,
                                          seed=seed)])
            db.add(Record(key, {}, DEFAULT_TRACE, m.seconds, m.error, name))
            result.default_seconds = m.seconds
        done = 0
        while done < trials:
            n = min(batch, trials - done)
            cost.fit(np.array(X), np.array(y)) if X else None
            picks = _propose(space, scorer, good, measured, rng, n, epsilon, population, steps)
            if not picks:
                break  # the space has no unmeasured point left that we can find
            results = measurer.measure([Job.of(func, p.func, space.target, repeat=repeat,
                                               seed=seed) for p in picks])
            for p, m in zip(picks, results):
                measured.add(p.key)
                db.add(Record(key, p.decisions, p.trace.as_json(), m.seconds, m.error, name))
                result.history.append(m.seconds)
                X.append(scorer.features(p))
                y.append(0.0 if m.seconds is None else 1.0 / m.seconds)
                if m.seconds is not None:
                    good.append((m.seconds, p))
            done += len(picks)
            if bar is not None:
                bar.update(len(picks))
                best = min((s for s, _ in good), default=None)
                if best:
                    bar.set_postfix_str(f"best {best * 1e3:.3f} ms, "
                                        f"{result.flops / best / 1e9:.1f} GFLOP/s")
    finally:
        if bar is not None:
            bar.close()
        if own:
            measurer.close()
    if good:
        result.best_seconds, result.best = min(good, key=lambda sp: sp[0])
    return result


def _propose(space, scorer, good, measured, rng, n, epsilon, population, steps) -> list:
    """``n`` unmeasured points: the best-scored of an annealing run plus ``epsilon`` random."""
    picks: list = []
    keys: set = set()

    def take(p, checked: bool = True):
        if p is None or p.key in measured or p.key in keys:
            return
        if not checked:
            try:
                p = space.point(p.decisions)
            except ScheduleError:
                return  # the checks refuse this proposal
        picks.append(p)
        keys.add(p.key)

    n_random = n if isinstance(scorer.model, RandomModel) else int(round(epsilon * n))
    if n - n_random > 0:
        # chains sized to the batch they feed (at most two per pick): a batch of one
        # should not pay for a population's worth of proposals
        population = max(2, min(population, 2 * (n - n_random)))
        elite = [p for _, p in sorted(good, key=lambda sp: sp[0])[:population // 2]]
        starts = elite + [_random_point(space, rng, checks=False)
                          for _ in range(population - len(elite))]
        for p in anneal(space, scorer, starts, measured, rng, steps):
            if len(picks) >= n - n_random:
                break
            take(p, checked=False)
    for _ in range(4 * n):
        if len(picks) >= n:
            break
        take(_random_point(space, rng))
    return picks


def _progress(total: int, enabled: bool, name: str):
    if not enabled or total == 0:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=f"tune {name}", unit="trial")


__all__ = ["tune", "anneal", "TuneResult"]
