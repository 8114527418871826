"""The checks after every step: which vectorized loops a step is judged for, and on what."""

import pytest

import mlcbook as mb
from mlcbook.schedule import Schedule, postconditions
from mlcbook.schedule.errors import VectorLaneError
from mlcbook.tir.analysis import collect_blocks

from ._util import assert_same_result, mm_relu
from .test_for_kind import LAYER_NORM_ROWS, parse


@pytest.fixture
def lowered(monkeypatch):
    """The block names and parameter names of every function the lane check lowers."""
    seen = []

    def recording_lower(func):
        seen.append((sorted(b.block.name for b in collect_blocks(func.body)),
                     [p.name for p in func.params]))
        return mb.lower(func)

    monkeypatch.setattr(postconditions, "lower", recording_lower)
    return seen


def _vectorized_matmul():
    """mm_relu with the matmul's j loop innermost and vectorized."""
    f = mm_relu()
    sch = Schedule(f)
    _, j, k = sch.get_loops(sch.get_block("Y"))
    sch.reorder(k, j)
    sch.vectorize(j)
    return f, sch


def test_vectorize_lowers_a_slice_with_the_loop_only(lowered):
    _vectorized_matmul()
    # not the relu beside it; the intermediate Y passed in, so it is not compacted
    assert lowered == [(["Y", "root"], ["A", "B", "C", "Y"])]


def test_a_step_beside_a_vectorized_loop_lowers_nothing(lowered):
    _, sch = _vectorized_matmul()
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, [None, 4])
    sch.parallel(sch.get_loops(sch.get_block("Y"))[0])  # rebuilds only the loop around it
    assert len(lowered) == 1


def test_a_step_that_rebuilds_a_vectorized_loop_lowers_its_slice_again(lowered):
    f, sch = _vectorized_matmul()
    i, _, _ = sch.get_loops(sch.get_block("Y"))
    sch.split(i, [None, 4])  # rewrites the bindings inside the vectorized loop
    assert len(lowered) == 2 and lowered[1][0] == ["Y", "root"]
    assert_same_result(f, sch.func)


def test_a_loop_that_stores_each_buffer_once_needs_no_lowering(lowered):
    f = mm_relu()
    sch = Schedule(f)
    _, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j)  # C[i, j] = max(Y[i, j], 0): one plain store
    assert lowered == []
    assert "<16 x float>" in mb.build(sch.func).llvm_ir()
    assert_same_result(f, sch.func)


def test_a_refusal_is_the_whole_programs_verdict(lowered):
    sch = Schedule(parse(LAYER_NORM_ROWS))
    i, j = sch.get_loops(sch.get_block("Out"))
    sch.vectorize(j)
    assert lowered == []  # Out stores once
    with pytest.raises(VectorLaneError, match="every lane reads and writes the same element"):
        sch.compute_at(sch.get_block("S"), j)
    # the slice found the hazard; the whole program after the step and before it (with S
    # allocated, not passed in) confirmed that this step made it
    assert [params for _, params in lowered] == [["A", "Out", "S"], ["A", "Out"], ["A", "Out"]]
