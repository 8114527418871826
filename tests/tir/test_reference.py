"""The reference evaluator against the fast interpreter, bit for bit, on every program
collection of the test suite; and the evaluator's own checks."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import mlcbook as mb
from mlcbook import te
from mlcbook.errors import IndexOutOfBoundsError, MLCError
from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.tir import Buffer, BufferStore, For, PrimFunc, Var

from ..script._programs import prim_funcs
from ._programs import matmul
from .transform._programs import ALL as LOWERING_PROGRAMS


def _inputs(func, rng) -> list[np.ndarray]:
    """Random arrays for every parameter: small ints (zero included, for ``x // 0``), normal
    floats, random bools."""
    arrays = []
    for p in func.params:
        if p.dtype == "bool":
            arrays.append(rng.random(p.shape) < 0.5)
        elif p.dtype.startswith("float"):
            arrays.append(rng.standard_normal(p.shape).astype(p.dtype))
        else:
            lo = 0 if p.dtype == "uint8" else -6
            arrays.append(rng.integers(lo, 7, p.shape).astype(p.dtype))
    return arrays


def _outcome(runner, func, arrays):
    """The outputs ``runner`` writes, or the class of the MLCError it raises."""
    arrays = [a.copy() for a in arrays]
    try:
        runner(func, *arrays)
    except MLCError as err:
        return type(err)
    return arrays[len(arrays) - func.num_outputs:]


def assert_same_outcome(func, seed: int = 0) -> None:
    """evaluate and interpret write identical bits (NaN where NaN), or raise the same error."""
    arrays = _inputs(func, np.random.default_rng(seed))
    expected = _outcome(mb.tir.evaluate, func, arrays)
    actual = _outcome(mb.tir.interpret, func, arrays)
    if isinstance(expected, type) or isinstance(actual, type):
        assert actual == expected
        return
    for x, y in zip(actual, expected):
        np.testing.assert_array_equal(x, y)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prim_funcs())
def test_random_programs_of_every_node_kind(func):
    assert_same_outcome(func)


@pytest.mark.parametrize("name", sorted(LOWERING_PROGRAMS))
def test_lowering_programs_before_and_after_lowering(name):
    func = mb.script.parse(textwrap.dedent(LOWERING_PROGRAMS[name]))
    assert_same_outcome(func)
    assert_same_outcome(mb.lower(func).main())


def test_matmul_with_init():
    assert_same_outcome(matmul(5, 6, 7))


def _te_programs():
    x = te.placeholder((2, 3, 6, 6), "float32", "x")
    w = te.placeholder((4, 3, 3, 3), "float32", "w")
    a = te.placeholder((5, 7), "float32", "a")
    b = te.placeholder((7, 3), "float32", "b")
    g = te.placeholder((7,), "float32", "g")
    beta = te.placeholder((7,), "float32", "beta")
    i = te.placeholder((4, 5), "int32", "i")
    j = te.placeholder((5,), "int32", "j")
    return {
        "conv2d": [x, w, te.ops.conv2d(x, w, stride=2, padding=1)],
        "max_pool2d": [x, te.ops.max_pool2d(x, 3, 2, padding=1)],
        "avg_pool2d": [x, te.ops.avg_pool2d(x, 2, 2)],
        "softmax": [a, te.ops.softmax(a)],
        "layer_norm": [a, g, beta, te.ops.layer_norm(a, g, beta, axis=-1)],
        "matmul": [a, b, te.ops.matmul(a, b)],
        "reduce_mean": [a, te.ops.mean(a, axis=1)],
        "int_ops": [i, j, te.ops.maximum(te.ops.mul(i, j), j)],
        "cast": [a, te.ops.cast(te.ops.exp(a), "float16")],
        "transpose_pad": [a, te.ops.pad(te.ops.transpose(a), ((1, 0), (0, 2)))],
    }


@pytest.mark.parametrize("name", sorted(_te_programs()))
def test_te_ops_as_built_and_default_scheduled(name):
    func = te.create_prim_func(_te_programs()[name])
    assert_same_outcome(func)
    assert_same_outcome(default_schedule(func))


def _shifted_read():
    # B[i] = A[i + 1] for i in range(4): the last iteration reads A[4], one past the end
    A, B = Buffer("A", (4,)), Buffer("B", (4,))
    i = Var("i")
    return PrimFunc("shift", (A, B), For(i, 4, BufferStore(B, A[i + 1], (i,))))


def test_out_of_bounds_read_names_buffer_index_and_value():
    a, b = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    with pytest.raises(IndexOutOfBoundsError,
                       match=r"MLC-T005.*A\[i \+ 1\] in function 'shift': index i \+ 1 of "
                             r"dimension 0 is 4 but that dimension has size 4.*\[0, 3\]"):
        mb.tir.evaluate(_shifted_read(), a, b)
    np.testing.assert_array_equal(b, np.zeros(4))  # nothing written back


def test_out_of_bounds_write_is_caught_too():
    A, B = Buffer("A", (2, 3)), Buffer("B", (2, 3))
    i, j = Var("i"), Var("j")
    func = PrimFunc("f", (A, B), For(i, 2, For(j, 3, BufferStore(B, A[i, j], (i, j * 2)))))
    with pytest.raises(IndexOutOfBoundsError,
                       match=r"B\[i, j \* 2\].*index j \* 2 of dimension 1 is 4 but .*size 3"):
        mb.tir.evaluate(func, np.ones((2, 3), "float32"), np.zeros((2, 3), "float32"))


def test_takes_what_interpret_takes_and_refuses_the_same():
    f = matmul(2, 2, 2)
    with pytest.raises(mb.errors.ArgumentError, match="takes 3 arrays"):
        mb.tir.evaluate(f, np.zeros((2, 2), "float32"))
    c = np.zeros((2, 2), "float32")
    mb.tir.evaluate(mb.tir.IRModule({"main": f}), np.eye(2, dtype="float32"),
                    np.full((2, 2), 3, "float32"), c)
    np.testing.assert_array_equal(c, np.full((2, 2), 3))
