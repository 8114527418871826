"""The checks after every step: which vectorized loops a step is judged for, and on what."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule, postconditions, tree
from mlcbook.schedule.errors import VectorLaneError

from ._util import assert_same_result, mm_relu
from .test_for_kind import LAYER_NORM_ROWS, parse


@pytest.fixture
def lowered(monkeypatch):
    """The names of the blocks of every function the lane check lowers, in order."""
    seen = []

    def recording_lower(func):
        seen.append(sorted(b.block.name for b in tree.blocks_under(func.body)))
        return mb.lower(func)

    monkeypatch.setattr(postconditions, "lower", recording_lower)
    return seen


def test_a_step_beside_a_vectorized_loop_lowers_nothing(lowered):
    sch = Schedule(mm_relu())
    _, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j)
    assert lowered == [["C", "root"]]  # the marked loop, in its slice: not the matmul
    i, _, _ = sch.get_loops(sch.get_block("Y"))
    sch.split(i, [None, 4])
    sch.parallel(sch.get_loops(sch.get_block("C"))[0])  # rebuilds the loop around it only
    assert lowered == [["C", "root"]]


def test_a_step_that_rebuilds_a_vectorized_loop_lowers_its_slice(lowered):
    f = mm_relu()
    sch = Schedule(f)
    i, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j)
    sch.split(i, [None, 4])  # rewrites the bindings inside the vectorized loop
    assert lowered == [["C", "root"], ["C", "root"]]
    assert_same_result(f, sch.func)


def test_a_refusal_is_the_whole_programs_verdict(lowered):
    sch = Schedule(parse(LAYER_NORM_ROWS))
    i, j = sch.get_loops(sch.get_block("Out"))
    sch.vectorize(j)
    with pytest.raises(VectorLaneError, match="every lane reads and writes the same element"):
        sch.compute_at(sch.get_block("S"), j)
    # vectorize: the slice; compute_at: the slice found the hazard, then the whole program
    # after the step and before it confirmed that the step made it
    assert lowered == [["Out", "root"]] + [["Out", "S", "root"]] * 3
