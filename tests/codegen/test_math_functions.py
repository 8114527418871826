"""The trigonometric, hyperbolic and rounding math functions of the loop IR: compiled
(scalar and vectorized loops) and interpreted, against numpy."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import te
from mlcbook.tir import expr as E

NUMPY = {"sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
         "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
         "acosh": np.arccosh, "atanh": np.arctanh, "round": np.round}


def _func(name, dtype, n=37):
    x = te.placeholder((n,), dtype, name="x")
    y = te.compute((n,), lambda i: getattr(E, name)(x[i]), name="y")
    return te.create_prim_func([x, y])


def _data(name, dtype, n=37):
    rng = np.random.default_rng(0)
    lo, hi = {"acosh": (1.0, 4.0), "asin": (-1, 1), "acos": (-1, 1), "atanh": (-0.99, 0.99)}.get(
        name, (-3.0, 3.0))
    x = rng.uniform(lo, hi, n)
    if name == "round":
        x[:4] = [0.5, 1.5, -2.5, 2.4999]  # halves go to even
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(NUMPY))
def test_compiled_matches_numpy(name, dtype):
    f = _func(name, dtype)
    x = _data(name, dtype)
    y = np.empty_like(x)
    mb.build(f)(x, y)
    np.testing.assert_allclose(y, NUMPY[name](x), rtol=2e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_vectorized_matches_numpy(name):
    f = _func(name, "float32", 64)
    sch = mb.Schedule(f)
    (i,) = sch.get_loops(sch.get_block("y"))
    _, v = sch.split(i, [None, 8])
    sch.vectorize(v)
    x = _data(name, "float32", 64)
    y = np.empty_like(x)
    mb.build(sch.mod)(x, y)
    np.testing.assert_allclose(y, NUMPY[name](x), rtol=2e-6)


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_interpreter_matches_numpy(name):
    f = _func(name, "float32")
    x = _data(name, "float32")
    y = np.empty_like(x)
    mb.tir.interpret(f, x, y)
    np.testing.assert_allclose(y, NUMPY[name](x), rtol=2e-6)


def test_out_of_domain_is_nan_in_both():
    f = _func("asin", "float32", 4)
    x = np.array([2.0, -2.0, 0.5, 1.0], np.float32)
    compiled, interpreted = np.empty_like(x), np.empty_like(x)
    mb.build(f)(x, compiled)
    mb.tir.interpret(f, x, interpreted)
    assert np.isnan(compiled[:2]).all() and np.isnan(interpreted[:2]).all()
    np.testing.assert_allclose(compiled[2:], np.arcsin(x[2:]), rtol=1e-6)


def test_integer_argument_is_refused():
    with pytest.raises(mb.MLCError, match="needs a float argument"):
        E.sin(E.Var("i", "int32"))


@pytest.mark.parametrize("name", sorted(NUMPY))
def test_printed_function_parses_back(name):
    from mlcbook.script.parser import parse
    from mlcbook.tir.printer import func_to_str
    f = _func(name, "float32")
    back = parse(func_to_str(f))
    g = next(iter(back.functions.values())) if hasattr(back, "functions") else back
    mb.tir.assert_structural_equal(g, f)
