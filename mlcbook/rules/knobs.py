"""Knobs: the named sampling steps a schedule rule decides through, and the points they
make.

A rule (:mod:`mlcbook.rules`) asks its :class:`Knobs` for each decision by name: a tile
(``knobs.tile("C.rows", loop, 2, 14)``, a ``sample_perfect_tile``) or a choice among
candidates (``knobs.choice("C.order", [0, 1, 2])``, a ``sample_categorical``). The knobs
take the decision given for that name, or the rule's hint (the default schedule's
decision, derived from the machine model), or draw one; a :class:`Point` records what they
chose. The default schedule is the knobs of :meth:`Knobs.defaults`: every knob takes its
hint, and a knob without one is a bug in its rule.

    >>> knobs = Knobs(sch, {"C.order": 1})
    >>> knobs.choice("C.order", [0, 1, 2])      # 1: given
    >>> knobs.tile("C.rows", i, 2, 8, hint=4)   # drawn ([4, 4] with hinted=True)
    >>> Knobs.defaults(sch).choice("C.order", [0, 1, 2], hint=0)   # 0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from ..schedule import Schedule, Trace
from ..schedule.errors import SamplingError
from ..tir.expr import Const
from ..tir.function import PrimFunc
from ..errors import SpaceError


@dataclass
class Point:
    """One point of a space: its decisions, the schedule's trace, and the program."""

    decisions: dict
    trace: Trace
    func: PrimFunc
    #: knobs that had a single value to choose from here: redrawing them changes nothing
    fixed: frozenset = frozenset()
    #: how many candidates each categorical knob had here (its decision is an index)
    categories: dict = field(default_factory=dict)
    #: the candidates of each categorical knob, so that a decision can be read as a value
    options: dict = field(default_factory=dict)

    def value(self, name: str):
        """The value knob ``name`` took: its decision, or for a categorical knob the
        candidate its decision indexes (``p.value("C.cols")``: 32, where the decision is 2)."""
        d = self.decisions[name]
        return self.options[name][d] if name in self.options else d

    @property
    def key(self) -> str:
        """The decisions as a canonical string (equal points, equal keys)."""
        return repr(sorted(self.decisions.items()))


@dataclass
class Knobs:
    """What a rule samples through: each knob is one sampling step of the schedule, named.

    ``fixed`` gives decisions to take instead of drawing; with ``lenient`` a fixed
    decision that no longer fits (an earlier knob changed the loop it tiles) is drawn
    again instead of rejected. With ``hinted`` a knob that ``fixed`` does not decide takes
    its rule's ``hint`` (the default schedule's choice) when the rule gives one that fits,
    instead of a random draw."""

    sch: Schedule
    fixed: dict = field(default_factory=dict)
    lenient: bool = False
    chosen: dict = field(default_factory=dict)
    single: set = field(default_factory=set)
    #: ``(name, decision)``: the knob a mutation redraws, and the value it should leave
    redraw: Optional[tuple] = None
    hinted: bool = False
    #: how many candidates each categorical knob had (:attr:`Point.categories`)
    categories: dict = field(default_factory=dict)
    #: the candidates of each categorical knob (:attr:`Point.options`)
    options: dict = field(default_factory=dict)
    #: every knob must take its hint (the default schedule): a knob without one that fits
    #: raises instead of drawing
    strict: bool = False

    @classmethod
    def defaults(cls, sch: Schedule) -> "Knobs":
        """The knobs of the default schedule: each takes its rule's hint."""
        return cls(sch, hinted=True, strict=True)

    def _sample(self, name: str, draw: Callable[[Any], Any], hint=None):
        if name in self.chosen:
            raise SpaceError(f"two knobs of the space are called {name!r}; "
                             "Instead: give every knob a unique name")
        decision = self.fixed.get(name)
        if self.strict and decision is None:
            return self._hinted(name, draw, hint)
        lenient = self.lenient
        if decision is None and self.hinted and hint is not None:
            decision, lenient = hint, True  # a hint that does not fit here is drawn instead
        try:
            out = draw(decision)
        except SamplingError:
            if not lenient or decision is None:
                raise
            out = None
            if self.hinted and hint is not None and hint != decision:
                try:
                    out = draw(hint)  # a fixed decision that no longer fits: the hint next
                except SamplingError:
                    pass
            if out is None:
                out = draw(None)
        self.chosen[name] = self.sch.trace[-1].decision
        return out

    def _hinted(self, name: str, draw: Callable[[Any], Any], hint):
        try:
            if hint is None:
                raise SamplingError(f"knob {name!r} gives no hint")
            out = draw(hint)
        except SamplingError as e:
            raise SpaceError(f"the default schedule has no decision for knob {name!r}: {e}; "
                             "Instead: give the rule's knob a hint among its candidates") from e
        self.chosen[name] = self.sch.trace[-1].decision
        return out

    def tile(self, name: str, loop, n: int, max_innermost: int,
             hint: Optional[int] = None) -> list[int]:
        """``n`` factors of the loop's extent, the last at most ``max_innermost``; ``hint``:
        the innermost factor the default schedule takes (the others: the extent's rest
        outermost, ones between)."""
        extent = self.sch.get(loop).extent
        if isinstance(extent, Const) and extent.value == 1:
            self.single.add(name)
        factors = None
        if hint is not None and isinstance(extent, Const) and extent.value % hint == 0:
            factors = [extent.value // hint] + [1] * (n - 2) + [hint]
        return self._sample(name, lambda d: self.sch.sample_perfect_tile(
            loop, n=n, max_innermost_factor=max_innermost, decision=d), factors)

    def choice(self, name: str, candidates: list, probs: Optional[list] = None,
               hint=None):
        """One of ``candidates`` (equally likely unless ``probs`` says otherwise); ``hint``:
        the candidate the default schedule takes. The decision is the candidate's index, and
        any candidates work (ints, ``[False, True]``, names, tuples)."""
        probs = list(probs or [1.0] * len(candidates))
        self.categories[name] = len(candidates)
        self.options[name] = list(candidates)
        index = candidates.index(hint) if hint in candidates else None
        if len(candidates) == 1:
            self.single.add(name)
        elif self.redraw is not None and self.redraw[0] == name \
                and isinstance(self.redraw[1], int) and 0 <= self.redraw[1] < len(probs):
            probs[self.redraw[1]] = 0.0  # a mutation draws another value than before
        ints = all(isinstance(c, int) and not isinstance(c, bool) for c in candidates)
        drawn = self._sample(name, lambda d: self.sch.sample_categorical(
            list(candidates) if ints else list(range(len(candidates))), list(probs),
            decision=d), index)
        # a plain value for the rule's logic (an ExprRV in an f-string prints as
        # "ExprRV(v3: 16)", not 16)
        return int(drawn) if ints else candidates[int(drawn)]


__all__ = ["Knobs", "Point"]
