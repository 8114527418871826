"""Chapter 3's exercises: plausible wrong answers earn zero, with a message that says why.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import mlcbook as mb

from .conftest import solution, zero


# --- 03.tile ------------------------------------------------------------------------------------
def test_tile_with_fixed_sizes():
    def tile(sch, ti, tj):
        i, j, k = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, [None, 8])
        j0, j1 = sch.split(j, [None, 4])
        sch.reorder(i0, j0, k, i1, j1)
    message = zero("03.tile", tile)
    assert "tile(sch, " in message and "expected extent" in message


def test_tile_with_swapped_factors():
    def tile(sch, ti, tj):
        i, j, k = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, [ti, None])
        j0, j1 = sch.split(j, [tj, None])
        sch.reorder(i0, j0, k, i1, j1)
    assert "the outer and inner extents are swapped" in zero("03.tile", tile)


def test_tile_without_reorder():
    def tile(sch, ti, tj):
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.split(i, [None, ti])
        sch.split(j, [None, tj])
    message = zero("03.tile", tile)
    assert "loop #2 around block C is loop i_1 (extent 8, feeding vi)" in message


# --- 03.fuse_relu --------------------------------------------------------------------------------
def _tile_y(sch):
    i, j, k = sch.get_loops(sch.get_block("Y"))
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i0, j0, k, i1, j1)
    return i0, j0


def test_fuse_relu_tiles_but_does_not_move():
    assert "blocks Y and C share no loop" in zero("03.fuse_relu", _tile_y)


def test_fuse_relu_with_compute_at_of_the_output():
    def fuse_relu(sch):
        _, j0 = _tile_y(sch)
        sch.compute_at(sch.get_block("C"), j0)
    message = zero("03.fuse_relu", fuse_relu)
    assert "fuse_relu was refused by the schedule: [MLC-S013] block 'C' writes C" in message
    assert "reverse_compute_at" in message


def test_fuse_relu_at_the_row_loop_only():
    def fuse_relu(sch):
        i0, _ = _tile_y(sch)
        sch.reverse_compute_at(sch.get_block("C"), i0)
    message = zero("03.fuse_relu", fuse_relu)
    assert "Y and C share the loops loop i_0 (extent 4, feeding vi); expected exactly two" \
        in message


# --- 03.bmm_relu_target ---------------------------------------------------------------------------
def test_bmm_relu_without_parallel():
    def no_parallel(sch):
        Y, C = sch.get_block("Y"), sch.get_block("C")
        b, i, j = sch.get_loops(C)
        j0, j1 = sch.split(j, factors=[None, 8])
        sch.compute_at(Y, j0)
        ax0, ax1 = sch.get_loops(Y)[3:]
        k0, k1 = sch.split(ax1, factors=[None, 4])
        sch.reorder(k0, k1, ax0)
        sch.unroll(k1)
        sch.vectorize(ax0)
        sch.vectorize(j1)
    message = zero("03.bmm_relu_target", no_parallel)
    assert message.startswith("the result is right, but the program is not the target yet: "
                              "block 'Y': loop #1 around it is loop b (extent 4, feeding vb), "
                              "but in the target it is loop b (extent 4, parallel, feeding vb)")


def test_bmm_relu_without_compute_at():
    def schedule(sch):
        b, i, j = sch.get_loops(sch.get_block("C"))
        sch.parallel(b)
    message = zero("03.bmm_relu_target", schedule)
    assert "block 'Y': loop #1 around it is loop b (extent 4, feeding vb)" in message


# --- 03.stochastic --------------------------------------------------------------------------------
def test_stochastic_with_a_fixed_split():
    def stochastic_tile(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, [None, 4])
        j0, j1 = sch.split(j, [None, 8])
        sch.reorder(i0, j0, k, i1, j1)
    assert "made 0 sample_perfect_tile decision(s)" in zero("03.stochastic", stochastic_tile)


def test_stochastic_that_loses_the_link_to_the_decision():
    def stochastic_tile(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        ti = [int(v) for v in sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)]
        tj = [int(v) for v in sch.sample_perfect_tile(j, n=2, max_innermost_factor=8)]
        i0, i1 = sch.split(i, ti)
        j0, j1 = sch.split(j, tj)
        sch.reorder(i0, j0, k, i1, j1)
    message = zero("03.stochastic", stochastic_tile)
    assert "did not change the split of i" in message


def test_stochastic_with_too_large_inner_tiles():
    def stochastic_tile(sch):
        i, j, k = sch.get_loops(sch.get_block("C"))
        ti = sch.sample_perfect_tile(i, n=2, max_innermost_factor=32)
        tj = sch.sample_perfect_tile(j, n=2, max_innermost_factor=32)
        i0, i1 = sch.split(i, ti)
        j0, j1 = sch.split(j, tj)
        sch.reorder(i0, j0, k, i1, j1)
    assert "ask for at most 8 with max_innermost_factor=8" in zero("03.stochastic",
                                                                     stochastic_tile)


def test_the_target_is_reached_by_the_solution():
    sch = mb.Schedule(mb.grading.ch03.bmm_relu())
    solution(3)["schedule_bmm_relu"](sch)
    mb.tir.assert_structural_equal(sch.mod["main"], mb.grading.ch03.bmm_relu_target())
