"""Helpers shared by the schedule tests: parse script, check a trace's round trips, run programs."""

from __future__ import annotations

import json
import textwrap

import numpy as np

import mlcbook as mb
from mlcbook.schedule import Schedule, Trace

from .._reference import run_reference


def parse(src: str):
    return mb.script.parse(textwrap.dedent(src))


def assert_roundtrip(sch: Schedule, func) -> None:
    """The trace replays to the same program as Python text, through JSON, and by apply."""
    ns = {"sch": Schedule(func)}
    exec(str(sch.trace), ns)
    mb.tir.assert_structural_equal(ns["sch"].mod, sch.mod)
    text = json.dumps(sch.trace.as_json())
    again = Trace.from_json(json.loads(text)).apply(func)
    mb.tir.assert_structural_equal(again.mod, sch.mod)
    assert str(again.trace) == str(sch.trace)


def random_args(func, rng):
    return [rng.standard_normal(p.shape).astype(p.dtype) for p in func.params]


def run(func, args, runner=mb.tir.interpret):
    """Outputs of ``func`` on copies of ``args`` (outputs start as zeros), run by ``runner``
    (the interpreter, or e.g. :func:`run_reference`)."""
    arrays = [a.copy() for a in args]
    for out in arrays[len(arrays) - func.num_outputs:]:
        out[...] = 0
    runner(func, *arrays)
    return arrays[len(arrays) - func.num_outputs:]


def run_compiled(func, args):
    """Like :func:`run`, through native code (``mb.build``) instead of the interpreter."""
    arrays = [np.ascontiguousarray(a.copy()) for a in args]
    for out in arrays[len(arrays) - func.num_outputs:]:
        out[...] = 0
    mb.build(func)(*arrays)
    return arrays[len(arrays) - func.num_outputs:]


def assert_same_result(before, after, seed: int = 0) -> None:
    """``after``, interpreted and compiled, computes what ``before`` does in the reference
    evaluator (the interpreter if ``before`` is too big for it)."""
    args = random_args(before, np.random.default_rng(seed))
    reference = run(before, args, run_reference)
    for x, y, z in zip(reference, run(after, args), run_compiled(after, args)):
        np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(z, x, rtol=1e-4, atol=1e-4)


MM_RELU = """
@T.prim_func
def mm_relu(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
            C: T.Buffer((16, 16), "float32")):
    Y = T.alloc_buffer((16, 16), "float32")
    for i, j, k in T.grid(16, 16, 16):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
"""


def mm_relu():
    return parse(MM_RELU)


ADD = """
@T.prim_func
def add(A: T.Buffer((10, 8), "float32"), B: T.Buffer((10, 8), "float32")):
    for i, j in T.grid(10, 8):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] + T.float32(1)
"""


def add():
    return parse(ADD)
