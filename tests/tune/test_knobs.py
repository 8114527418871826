"""Knobs: decisions given, hinted or drawn."""

import mlcbook as mb
from mlcbook.tune.knobs import Knobs

from ._util import matmul


def test_a_hint_that_does_not_fit_is_drawn_instead():
    sch = mb.Schedule(matmul(16), seed=0)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    knobs = Knobs(sch, hinted=True)
    assert knobs.tile("a", i, 2, 8, hint=4) == [4, 4]
    _, inner = knobs.tile("b", sch.get_loops(sch.get_block("C"))[1], 2, 8, hint=3)
    assert inner in (1, 2, 4, 8)   # 3 does not divide 16: a legal draw
    assert knobs.choice("c", [5, 6], hint=7) in (5, 6)
    assert knobs.chosen["c"] in (0, 1)


def test_a_fixed_decision_that_no_longer_fits_takes_the_hint_when_lenient():
    sch = mb.Schedule(matmul(16), seed=0)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    knobs = Knobs(sch, {"a": [2, 8]}, lenient=True, hinted=True)
    assert knobs.tile("a", i, 2, 4, hint=4) == [4, 4]   # 8 is over the innermost limit 4
    assert knobs.chosen["a"] == [4, 4]


def test_a_given_decision_wins_over_the_hint():
    sch = mb.Schedule(matmul(16), seed=0)
    knobs = Knobs(sch, {"c": 1}, hinted=True)
    assert knobs.choice("c", [5, 6], hint=5) == 6
    assert knobs.categories == {"c": 2}
