"""Knobs: decisions given, hinted or drawn."""

import mlcbook as mb
from mlcbook.rules.knobs import Knobs

from ..tune._util import matmul


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


def test_a_choice_among_bools_returns_a_bool_and_records_its_index():
    sch = mb.Schedule(matmul(16), seed=0)
    knobs = Knobs(sch, {"p": 1})
    assert knobs.choice("p", [False, True]) is True
    assert knobs.chosen["p"] == 1 and knobs.categories == {"p": 2}


def test_a_choice_among_names_is_drawn_by_index():
    sch = mb.Schedule(matmul(16), seed=0)
    knobs = Knobs(sch)
    assert knobs.choice("order", ["ij", "ji"]) in ("ij", "ji")
    assert knobs.chosen["order"] in (0, 1)


def test_default_knobs_take_every_hint():
    sch = mb.Schedule(matmul(16), seed=0)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    knobs = Knobs.defaults(sch)
    assert knobs.tile("a", i, 2, 8, hint=4) == [4, 4]
    assert knobs.choice("c", [5, 6, 7], hint=7) == 7
    assert knobs.chosen == {"a": [4, 4], "c": 2}


def test_a_default_knob_without_a_fitting_hint_is_an_error_not_a_draw():
    import pytest
    from mlcbook.errors import SpaceError
    sch = mb.Schedule(matmul(16), seed=0)
    knobs = Knobs.defaults(sch)
    with pytest.raises(SpaceError, match="no decision for knob 'c'.*Instead: give"):
        knobs.choice("c", [5, 6])
    with pytest.raises(SpaceError, match="no decision for knob 'd'"):
        knobs.choice("d", [5, 6], hint=7)
