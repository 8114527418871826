"""Search spaces: the schedule rules (:mod:`mlcbook.rules`) with their decisions open.

A space is a generator of schedules. Each knob of the rules is a sampling step
(``sample_perfect_tile`` or ``sample_categorical``) recorded in the trace, and named after
the block and what it decides (``"C.rows"``, ``"C.order"``); a point of the space is the
dict of those decisions. Generating a point runs the rules with the decisions it has and
draws the ones it lacks, so every point is a schedule the primitives accepted (legal by
construction) or a :class:`~mlcbook.schedule.ScheduleError` raised before any measurement.

    >>> space = Space(func)                       # the rules read func's blocks
    >>> p = space.sample(seed=0)                  # a random point
    >>> p.decisions                               # {'C.cols': 0, 'C.rows': 3, ...}
    >>> print(p.trace)                            # the schedule, sampling steps included
    >>> q = space.mutate(p, random.Random(1))     # one knob redrawn
    >>> space.point(p.decisions).func             # the same program again
    >>> space.default_point().func                # the default schedule, exactly

Every knob carries a **hint**, the decision the machine model gives it:
``space.default_point()`` is the point of every hint, which *is* the default schedule
(``mb.compile`` without records), and ``space.neighbours(p)`` the points one categorical
knob away from ``p``; a search starts from them (:mod:`.search`). A custom rule
(``Space(func, rules={"row_reduction": my_rule})``) may leave its knobs without hints:
its default point then draws them with seed 0.
"""

from __future__ import annotations

import random
from typing import Callable, Optional

from ..codegen.target import Target
from ..rules import Rules
from ..rules.knobs import Knobs, Point
from ..schedule import Schedule
from ..tir.function import PrimFunc
from ..errors import ScheduleError
from .errors import TuneArgumentError


class Space:
    """The schedules of ``func`` that the rules generate for ``target`` (default: this CPU).

    ``rules`` maps a block kind (``"tiled"``, ``"spatial"``, ``"row_reduction"``,
    ``"unrolled_tile"``, or a kind returned by a custom ``classify(realize, loops)``) to a
    rule, replacing the default rule of that kind (:data:`mlcbook.rules.RULES`). A rule
    schedules one block through :class:`~mlcbook.rules.Knobs`:
    ``rule(knobs, block_name, rules)``, reading the machine from ``rules.target``.
    """

    def __init__(self, func: PrimFunc, target=None, rules: Optional[dict] = None,
                 classify: Optional[Callable] = None):
        if not isinstance(func, PrimFunc):
            raise TuneArgumentError(f"a space needs a PrimFunc, got {type(func).__name__}")
        self.func = func
        self.rules = Rules(target, rules, classify)
        self.target: Target = self.rules.target
        self.lanes = self.rules.lanes
        self.registers = self.rules.registers

    def point(self, decisions: dict, *, seed: int = 0, lenient: bool = False,
              checks: bool = True, redraw: Optional[tuple] = None,
              hinted: bool = False) -> Point:
        """The point with these decisions (missing ones drawn with ``seed``, or with
        ``hinted`` taken from the rules' hints); raises a ScheduleError if they do not fit
        (unless ``lenient``: then they are drawn anew).

        ``checks=False`` builds it without the schedule's legality checks (several times
        faster): a proposal to score, which must be built again with checks before it is
        measured (the search does)."""
        sch = Schedule(self.func, seed=seed, checks=checks)
        knobs = Knobs(sch, dict(decisions), lenient, redraw=redraw, hinted=hinted)
        self.rules.apply(knobs)
        return Point(dict(knobs.chosen), sch.trace, sch.func, frozenset(knobs.single),
                     dict(knobs.categories), dict(knobs.options))

    def default_point(self) -> Point:
        """The point whose every knob takes its rule's hint: the default schedule
        (:func:`mlcbook.graph.kernels.default_schedule.default_schedule`); a knob of a custom rule
        without a hint is drawn with seed 0."""
        return self.point({}, hinted=True)

    def neighbours(self, p: Point) -> list:
        """The points that differ from ``p`` in one categorical knob (each other candidate
        of each): the knobs that depend on it take their hints, or are drawn if they
        have none. Those that the rules reject are left out."""
        out = []
        for name in sorted(p.categories):
            for k in range(p.categories[name]):
                if k == p.decisions.get(name) or name in p.fixed:
                    continue
                try:
                    q = self.point({**p.decisions, name: k}, lenient=True, hinted=True)
                except ScheduleError:
                    continue
                if q.key != p.key:
                    out.append(q)
        return out

    def sample(self, seed: int, checks: bool = True) -> Point:
        """A random point."""
        return self.point({}, seed=seed, checks=checks)

    def mutate(self, p: Point, rng: random.Random, checks: bool = True) -> Point:
        """``p`` with one knob drawn again (knobs that depend on it are redrawn if needed)."""
        names = [n for n in sorted(p.decisions) if n not in p.fixed]
        if not names:
            return p
        q = p
        for _ in range(8):  # a redraw may land on the same value: draw again
            name = rng.choice(names)
            fixed = {k: v for k, v in p.decisions.items() if k != name}
            q = self.point(fixed, seed=rng.randrange(2**31), lenient=True, checks=checks,
                           redraw=(name, p.decisions[name]))
            if q.key != p.key:
                break
        return q


__all__ = ["Space"]
