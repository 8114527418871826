"""Scheduled programs compile and compute what numpy and the reference evaluator compute.

Includes random schedules: random splits (dividing or not), reorders, fuses, and loop kinds on a
matmul with a consumer; a primitive that refuses (ScheduleError) is simply skipped, since
the schedule suite tests the refusals.
"""

from __future__ import annotations

import random
import re
import warnings

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ScheduleError
from mlcbook.schedule import Schedule

from .._reference import run_reference
from ..tir.transform._programs import ALL as LOWERING_PROGRAMS

RNG = np.random.default_rng(9)

MM_RELU = '''
@T.prim_func
def mm_relu(A: T.Buffer((24, 20), "float32"), B: T.Buffer((20, 32), "float32"), C: T.Buffer((24, 32), "float32")):
    Y = T.alloc_buffer((24, 32), "float32")
    for i, j, k in T.grid(24, 32, 20):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(24, 32):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
'''


def args_for(func):
    return [RNG.standard_normal(p.shape).astype(p.dtype) for p in func.params]


def check_against_reference(mod):
    func = mod.main() if isinstance(mod, mb.tir.IRModule) else mod
    args = args_for(func)
    want = [a.copy() for a in args]
    run_reference(func, *want)
    got = [a.copy() for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a random schedule may vectorize a loop that cannot be
        kernel = mb.build(func)
    kernel(*got)
    n_out = func.num_outputs
    for w, g in zip(want[-n_out:], got[-n_out:]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return kernel


def test_design_example_schedule():
    sch = Schedule(mb.script.parse(MM_RELU))
    i, j, k = sch.get_loops(sch.get_block("Y"))
    io, ii = sch.split(i, [None, 8])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(io, jo, k, ii, ji)
    sch.vectorize(ji)
    sch.parallel(io)
    k_ = check_against_reference(sch.mod)
    ir = k_.llvm_ir()
    assert "<16 x float>" in ir and "_parallel_0" in ir


def test_cache_write_tile_lives_in_registers():
    sch = Schedule(mb.script.parse(MM_RELU))
    Y = sch.get_block("Y")
    i, j, k = sch.get_loops(Y)
    io, ii = sch.split(i, [None, 4])
    jo, ji = sch.split(j, [None, 16])
    sch.reorder(jo, io, k, ii, ji)
    YL = sch.cache_write(Y, 0, "local")
    sch.reverse_compute_at(YL, io)
    init = sch.decompose_reduction(Y, k)
    sch.vectorize(ji)
    sch.unroll(ii)
    for blk in (init, YL):
        loops = sch.get_loops(blk)
        sch.vectorize(loops[-1])
        sch.unroll(loops[-2])
    sch.parallel(jo)
    k_ = check_against_reference(sch.mod)
    lowered = str(k_.lowered)
    assert re.search(r"T\.allocate\(\(64,\), \"float32\", scope=\"local\"\)", lowered)
    body = k_.llvm_ir(optimized=True).split("_parallel_0")[-1]
    assert "alloca" not in body      # the 4 x 16 tile was promoted to registers


def _random_schedule(seed: int):
    rnd = random.Random(seed)
    sch = Schedule(mb.script.parse(MM_RELU))

    def attempt(fn, *a):
        try:
            return fn(*a)
        except ScheduleError:
            return None

    for name in ("Y", "C"):
        loops = sch.get_loops(sch.get_block(name))
        new = []
        for lp in loops:
            if rnd.random() < 0.6:
                f = rnd.choice([2, 3, 4, 5, 8, 16])
                parts = attempt(sch.split, lp, [None, f])
                new += parts if parts else [lp]
            else:
                new.append(lp)
        if len(new) > 2 and rnd.random() < 0.7:
            order = new[:]
            rnd.shuffle(order)
            attempt(sch.reorder, *order)
        loops = sch.get_loops(sch.get_block(name))
        if len(loops) >= 2 and rnd.random() < 0.3:
            attempt(sch.fuse, loops[0], loops[1])
        loops = sch.get_loops(sch.get_block(name))
        kinds = [sch.vectorize, sch.parallel, sch.unroll]
        attempt(rnd.choice(kinds), loops[-1])
        if len(loops) > 1:
            attempt(sch.parallel, loops[0])
    if rnd.random() < 0.4:
        attempt(sch.compute_inline, sch.get_block("Y"))
    return sch.mod


@pytest.mark.parametrize("seed", range(24))
def test_random_schedules_compile_to_the_same_result(seed):
    check_against_reference(_random_schedule(seed))


@pytest.mark.parametrize("name", sorted(LOWERING_PROGRAMS))
def test_lowering_programs_compile(name):
    """Predicates of non-dividing splits, guarded and hoisted inits, nested allocations."""
    check_against_reference(mb.script.parse(LOWERING_PROGRAMS[name]))
