"""The search: simulated annealing over a space's decisions, guided by a cost model, measuring
a batch of the most promising unmeasured points each round (AutoTVM's loop).

    >>> result = tune(func, trials=64, model="xgboost", database="records.jsonl")
    >>> result.best_seconds, result.best.decisions
    >>> result.curve()                        # best seconds after each trial

The state of one kernel's search (the cost model, every measurement, each point's features)
lives in a :class:`TaskSearch`, which a whole model's tuning keeps per task across its
batches (:mod:`.tasks`), so a batch costs the same however many came before. Each round:

1. anneal: start from the best points measured so far and random ones, mutate one knob
   at a time, keep a change if the model scores it higher, or with probability
   ``exp(delta / temperature)`` if lower, the temperature falling each step. Proposals are
   built without the schedule's legality checks (``Space.point(..., checks=False)``, several
   times faster) and their features are computed once per point per search;
2. pick the ``batch`` best-scored points never measured, each built again with checks (an
   illegal one is dropped), of which a share ``epsilon`` are replaced by random points (so
   the model also learns where it is wrong);
3. measure them (:mod:`.measure`), record them (:mod:`.database`), refit the model on
   every measurement so far.

**Warm start**: before anything is measured, a model that has not learned yet ranks by its
prior (the analytic model for XGBoost); the first round then scores ``warm_start`` random
points with it, measures its best ones (and the best the chains reach from them), so the
search starts from the analytic model's picks rather than from chance; XGBoost takes over
from the second round, once it has measurements to learn from.

**From the default**: beside the model's picks, a fresh search measures the space's
default point (each knob at its rule's hint: the default schedule's decisions) and its
neighbours in one categorical knob (repack, loop order, vector width, parallel...), then
the neighbours of the best point measured so far, and so on until the best point's
neighbours were all measured (a walk that no single categorical change improves), each
round up to half of its model share: tuning starts where the untuned program is and climbs
from there (TVM's custom of putting the default among the first candidates), while the
other half explores where the prior or the model points.

With ``model="random"`` the annealing is skipped: every point is drawn at random.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import ScheduleError
from ..optional import progress
from ..graph.kernels.default_schedule import default_schedule
from ..tir.function import PrimFunc
from .cost_model import CostModel, RandomModel, make_model
from .database import DEFAULT_TRACE, Database, Record, workload_key
from .errors import TuneArgumentError
from .features import features, flop_count
from .measure import Job, Measurer
from ..rules import RULES
from ..rules.blocks import kind_of
from ..rules.knobs import Point
from .space import Space


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
    #: trials this run measured (``history`` also holds earlier runs' records)
    trials_run: int = 0

    def _repr_html_(self) -> str:
        from .display import result_html
        return result_html(self)

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


class Scorer:
    """Features and scores of points, each point's features computed once (keyed by its
    decisions: equal decisions, equal program)."""

    def __init__(self, model: CostModel):
        self.model = model
        self._features: dict = {}

    def __len__(self) -> int:
        """How many points' features it holds."""
        return len(self._features)

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


def anneal(space: Space, scorer: Scorer, starts: list, measured: set, rng: random.Random,
           steps: int = 4, temperature: float = 1.0, seen: Optional[dict] = None) -> list:
    """Points visited by annealing chains from ``starts`` (and those of ``seen``, a dict
    ``{key: (score, point)}`` of points scored before), never measured ones, best first."""
    seen = dict(seen or {})
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


def propose(space: Space, scorer: Scorer, good: list, measured: set, rng: random.Random,
            n: int, epsilon: float = 0.2, population: int = 8, steps: int = 4,
            warm_start: int = 0, first: Optional[list] = None) -> list:
    """``n`` unmeasured, checked points: the first of ``first`` (points to measure, in
    order; at most half of the model's share of ``n``), the best-scored of an annealing
    run, and a share ``epsilon`` of random ones. ``good`` holds ``(seconds, point)`` of
    the measured points; while it is empty, the chains start from the best-scored of
    ``warm_start`` random points, which are candidates themselves."""
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
    # ``first`` takes at most half of the model's share: the other half stays with the
    # model (with the prior's picks in the first round), so a poor default cannot hold the
    # search back
    for p in first or ():
        if len(picks) >= max(1, (n - n_random + 1) // 2):
            break
        take(p)
    if n - n_random - len(picks) > 0:
        # chains sized to the batch they feed (at most two per pick): a batch of one
        # should not pay for a population's worth of proposals
        population = max(2, min(population, 2 * (n - n_random - len(picks))))
        seen: dict = {}
        if good or not warm_start:
            elite = [p for _, p in sorted(good, key=lambda sp: sp[0])[:population // 2]]
            starts = elite + [_random_point(space, rng, checks=False)
                              for _ in range(population - len(elite))]
        else:
            pool = {p.key: p for p in (_random_point(space, rng, checks=False)
                                       for _ in range(warm_start)) if p is not None}
            pool_points = list(pool.values())
            seen = {p.key: (s, p) for p, s in zip(pool_points, scorer.scores(pool_points))}
            starts = [p for _, p in sorted(seen.values(), key=lambda sp: -sp[0])[:population]]
        for p in anneal(space, scorer, starts, measured, rng, steps, seen=seen):
            if len(picks) >= n - n_random:
                break
            take(p, checked=False)
    for _ in range(4 * n):
        if len(picks) >= n:
            break
        take(_random_point(space, rng))
    return picks


class TaskSearch:
    """One kernel's search, kept across batches: its space, cost model, the features of
    every point seen, and every measurement (read back from ``database`` first: its points
    are not measured again, and each new record goes to it).

        >>> search = TaskSearch(func, model="xgboost", database="records.jsonl")
        >>> search.step(measurer, 8)          # one round: 8 points proposed and measured
        >>> search.result.best_seconds
    """

    def __init__(self, func: PrimFunc, *, model="xgboost", database=None, target=None,
                 space: Optional[Space] = None, epsilon: float = 0.2, population: int = 8,
                 steps: int = 4, warm_start: int = 32, seed: int = 0, name: str = "",
                 from_default: bool = True):
        if not 0 <= epsilon <= 1 or not isinstance(warm_start, int) or warm_start < 0:
            raise TuneArgumentError(f"epsilon must be in [0, 1] and warm_start a non-negative "
                                    f"int, got {epsilon!r} and {warm_start!r}")
        self.func, self.name, self.seed = func, name or func.name, seed
        self.space = space or Space(func, target)
        self.db = database if isinstance(database, Database) else Database(database)
        self.model = make_model(model, seed)
        self.scorer = Scorer(self.model)
        self.rng = random.Random(seed)
        self.options = dict(epsilon=epsilon, population=population, steps=steps,
                            warm_start=warm_start)
        key = workload_key(func, self.space.target)
        self.result = TuneResult(func, key, flop_count(func))
        self._X: list = []
        self._y: list = []
        self._fitted = 0
        self._measured: set = set()
        self._good: list = []
        self._resume()
        self._from_default = from_default
        self._first: Optional[list] = None   # built at the first step (it costs a few builds)
        self._expanded: set = set()          # keys of the points whose neighbours were queued

    def _default_neighbourhood(self) -> list:
        """The space's default point and its neighbours, to measure beside the model's
        picks, when nothing is measured yet and a model guides the search (random search
        stays random)."""
        if isinstance(self.model, RandomModel):
            return []
        try:
            start = self.space.default_point()
        except ScheduleError:
            return []  # the hints do not make a legal point here: start from the model's
        if self._measured - {start.key}:
            return []  # a resumed search: it goes on from its best point instead
        self._expanded.add(start.key)
        return [q for q in (start, *self.space.neighbours(start)) if q.key not in self._measured]

    def _next_neighbourhood(self) -> list:
        """Once the queued neighbours are measured: those of the best point so far, unless
        they were queued before (then the walk from the default has reached a point that
        no single categorical change improves, and stops)."""
        best = self.result.best
        if best is None or best.key in self._expanded:
            return []
        self._expanded.add(best.key)
        return [q for q in self.space.neighbours(best) if q.key not in self._measured]

    def _resume(self) -> None:
        records = self.db.records(self.result.workload)
        # the default point is generated only to recognize its record, so only with records
        default = self.space.default_point().key if records and self._default_rules() \
            else None
        for r in records:
            if r.trace == DEFAULT_TRACE or r.key == default:
                if r.seconds is not None:
                    d = self.result.default_seconds
                    self.result.default_seconds = min(r.seconds, d or r.seconds)
                if r.trace == DEFAULT_TRACE:   # a database of version 0.1: no point to learn
                    continue
            self._measured.add(r.key)
            self.result.history.append(r.seconds)
            try:
                p = self.space.point(r.decisions)
            except ScheduleError:
                continue
            self._learn(p, r.seconds)

    def _learn(self, p: Point, seconds: Optional[float]) -> None:
        self._X.append(self.scorer.features(p))
        self._y.append(0.0 if seconds is None else 1.0 / seconds)
        if seconds is not None:
            self._good.append((seconds, p))
            if self.result.best_seconds is None or seconds < self.result.best_seconds:
                self.result.best_seconds, self.result.best = seconds, p

    def _default_rules(self) -> bool:
        """Whether the space's default point is ``mb.compile``'s default schedule (its rules
        are the defaults)."""
        rules = self.space.rules
        return rules.table == RULES and rules.classify is kind_of

    def baseline(self, measurer: Measurer, repeat: int = 3) -> None:
        """Measure the default schedule once per database (not a trial), so that records
        never make the kernel slower than untuned. It is the space's default point, recorded
        like any point (and learnt from); a space with rules of its own records the
        default schedule with :data:`DEFAULT_TRACE`, as a measurement only."""
        if self.result.default_seconds is not None:
            return
        target = self.space.target
        p = self.space.default_point() if self._default_rules() else None
        untuned = p.func if p is not None else default_schedule(self.func, target)
        m, = measurer.measure([Job.of(self.func, untuned, target, repeat=repeat,
                                      seed=self.seed)])
        self.result.default_seconds = m.seconds
        if p is None:
            self.db.add(Record(self.result.workload, {}, DEFAULT_TRACE, m.seconds, m.error,
                               self.name))
            return
        self.db.add(Record(self.result.workload, p.decisions, p.trace.as_json(), m.seconds,
                           m.error, self.name))
        self._measured.add(p.key)
        self._learn(p, m.seconds)

    def confirm(self, measurer: Measurer, top: int, times: int = 2, repeat: int = 3) -> None:
        """Measure the ``top`` fastest points so far ``times`` more times each (recorded,
        not trials) and make :attr:`TuneResult.best` the one with the fastest median: the
        best of many noisy measurements is often a lucky one (the winner's curse)."""
        ranked = sorted(self._good, key=lambda sp: sp[0])[:top]
        if len(ranked) < 2:
            return
        target = self.space.target
        again = measurer.measure([Job.of(self.func, p.func, target, repeat=repeat,
                                          seed=self.seed) for _ in range(times)
                                  for _, p in ranked])
        seconds = {p.key: [s] for s, p in ranked}
        for (_, p), m in zip(ranked * times, again):
            self.db.add(Record(self.result.workload, p.decisions, p.trace.as_json(),
                               m.seconds, m.error, self.name))
            if m.seconds is not None:
                seconds[p.key].append(m.seconds)
        best = min(ranked, key=lambda sp: statistics.median(seconds[sp[1].key]))[1]
        self.result.best = best
        self.result.best_seconds = statistics.median(seconds[best.key])

    def step(self, measurer: Measurer, n: int, repeat: int = 3) -> int:
        """One round: refit the model if it has new measurements, propose ``n`` points,
        measure and record them; how many were measured (0: the space looks exhausted)."""
        if len(self._X) > self._fitted:
            self.model.fit(np.array(self._X), np.array(self._y))
            self._fitted = len(self._X)
        if self._first is None:
            self._first = self._default_neighbourhood() if self._from_default else []
        elif not self._first and self._expanded:
            self._first = self._next_neighbourhood()
        picks = propose(self.space, self.scorer, self._good, self._measured, self.rng, n,
                        first=self._first, **self.options)
        if not picks:
            return 0
        chosen = {p.key for p in picks}
        self._first = [p for p in self._first if p.key not in chosen]
        target = self.space.target
        results = measurer.measure([Job.of(self.func, p.func, target, repeat=repeat,
                                           seed=self.seed) for p in picks])
        for p, m in zip(picks, results):
            self._measured.add(p.key)
            self.db.add(Record(self.result.workload, p.decisions, p.trace.as_json(),
                               m.seconds, m.error, self.name))
            self.result.history.append(m.seconds)
            self._learn(p, m.seconds)
        return len(picks)


def tune(func: PrimFunc, trials: int, *, model="xgboost", database=None, target=None,
         space: Optional[Space] = None, measurer: Optional[Measurer] = None, executor=None,
         batch: int = 8, epsilon: float = 0.2, population: int = 8, steps: int = 4,
         warm_start: int = 32, seed: int = 0, timeout: float = 60.0, repeat: int = 3,
         progress: bool = True, name: str = "", baseline: bool = False,
         from_default: bool = True, confirm: int = 4) -> TuneResult:
    """Tune ``func`` with ``trials`` more measurements; returns a :class:`TuneResult`.

    ``database`` (a path or a :class:`Database`) is read first (its points are not measured
    again) and receives every new record; ``measurer`` or ``executor`` say where candidates
    run (default: one local worker process with ``timeout``). With ``baseline`` the default
    schedule is measured too (once per database, not counted as a trial; see
    :meth:`TaskSearch.baseline`). ``warm_start`` random points are ranked by the model's
    prior for the first round (0: none). With ``from_default`` (and a model other than
    random) a fresh search measures the space's default point and its neighbours in its
    first rounds, beside the model's picks (:meth:`Space.default_point`,
    :meth:`Space.neighbours`), so the tuned result starts where the default schedule is.
    At the end the ``confirm`` fastest points (at most one per 8 trials of this run) are
    measured twice more and the best is the fastest median (:meth:`TaskSearch.confirm`).
    """
    if not isinstance(trials, int) or isinstance(trials, bool) or trials < 0:
        raise TuneArgumentError(f"trials must be a non-negative int, got {trials!r}")
    if not isinstance(confirm, int) or isinstance(confirm, bool) or confirm < 0:
        raise TuneArgumentError(f"confirm must be a non-negative int (how many of the best "
                                f"points to measure again), got {confirm!r}")
    if not isinstance(batch, int) or batch < 1 or not 0 <= epsilon <= 1:
        raise TuneArgumentError(f"batch must be a positive int and epsilon in [0, 1], got "
                                f"{batch!r} and {epsilon!r}")
    if target is None:   # a cluster's workers measure: their CPU is the target
        target = getattr(executor or getattr(measurer, "executor", None), "target", None)
    search = TaskSearch(func, model=model, database=database, target=target, space=space,
                        epsilon=epsilon, population=population, steps=steps,
                        warm_start=warm_start, seed=seed, name=name,
                        from_default=from_default)
    own = measurer is None
    measurer = measurer or Measurer(executor=executor, timeout=timeout)
    bar = progress_bar(trials, progress, name or func.name)
    try:
        if baseline and trials:
            search.baseline(measurer, repeat)
        done = 0
        while done < trials:
            got = search.step(measurer, min(batch, trials - done), repeat)
            if not got:
                break  # the space has no unmeasured point left that we can find
            done += got
            if bar is not None:
                bar.update(got)
                best = search.result.best_seconds
                if best:
                    bar.set_postfix_str(f"best {best * 1e3:.3f} ms, "
                                        f"{search.result.flops / best / 1e9:.1f} GFLOP/s")
        search.result.trials_run = done
        search.confirm(measurer, min(confirm, done // 8), repeat=repeat)
    finally:
        if bar is not None:
            bar.close()
        if own:
            measurer.close()
    return search.result


def progress_bar(total: int, enabled: bool, name: str):
    """A tqdm bar over ``total`` trials, or None when disabled (or nothing to do)."""
    if not enabled or total == 0:
        return None
    return progress(total=total, desc=f"tune {name}", unit="trial",
                    feature="the tuner's progress bar")


__all__ = ["tune", "anneal", "propose", "Scorer", "TaskSearch", "TuneResult", "progress_bar"]
