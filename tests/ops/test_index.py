"""The scatters, declared from their te computes, against numpy oracles written from ONNX's
definitions (updates applied one by one, in order), compiled and interpreted."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import OpShapeError
from mlcbook.graph import Function, TensorType, Var, interpret, op

_COMBINE = {"none": lambda old, new: new, "add": np.add, "mul": np.multiply,
            "max": np.maximum, "min": np.minimum}


def scatter_elements_oracle(data, indices, updates, axis=0, reduction="none"):
    axis %= data.ndim
    out = data.copy()
    for k in np.ndindex(*indices.shape):       # in order: the last of duplicates wins
        at = k[:axis] + (indices[k] % data.shape[axis],) + k[axis + 1:]
        out[at] = _COMBINE[reduction](out[at], updates[k])
    return out


def scatter_nd_oracle(data, indices, updates, reduction="none"):
    q = indices.shape[-1]
    out = data.copy()
    for k in np.ndindex(*indices.shape[:-1]):
        at = tuple(int(i) % n for i, n in zip(indices[k], data.shape[:q]))
        out[at] = _COMBINE[reduction](out[at], updates[k])
    return out


def _both(f, *args):
    """f's value interpreted and compiled."""
    return interpret(f, *args), mb.compile(f)(*args)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [1, -2])     # one axis, counted both ways
def test_scatter_elements_matches_the_oracle(reduction, axis):
    rng = np.random.default_rng(0)
    d = rng.standard_normal((3, 4, 2)).astype("float32")
    i = np.array([[[0, 3], [-1, 0], [3, 1]], [[2, 2], [-4, 1], [2, 0]]], "int64")  # duplicates
    u = rng.standard_normal(i.shape).astype("float32")
    vs = [Var("d", TensorType(d.shape)), Var("i", TensorType(i.shape, "int64")),
          Var("u", TensorType(u.shape))]
    f = Function(vs, op.scatter_elements(*vs, axis=axis, reduction=reduction))
    want = scatter_elements_oracle(d, i, u, axis, reduction)
    for got in _both(f, d, i, u):
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_matches_the_oracle(reduction):
    rng = np.random.default_rng(1)
    d = rng.standard_normal((4, 3, 2)).astype("float32")
    i = np.array([[[1, 2], [-1, 0]], [[1, 2], [0, -3]]], "int64")  # (1, 2) twice
    u = rng.standard_normal((2, 2, 2)).astype("float32")
    vs = [Var("d", TensorType(d.shape)), Var("i", TensorType(i.shape, "int64")),
          Var("u", TensorType(u.shape))]
    f = Function(vs, op.scatter_nd(*vs, reduction=reduction))
    want = scatter_nd_oracle(d, i, u, reduction)
    for got in _both(f, d, i, u):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_scatter_of_ints_adds_exactly():
    d = np.arange(12, dtype="int8").reshape(3, 4)
    i, u = np.array([[0, -1, 0]], "int32"), np.array([[100, 7, 27]], "int8")
    vs = [Var("d", TensorType((3, 4), "int8")), Var("i", TensorType((1, 3), "int32")),
          Var("u", TensorType((1, 3), "int8"))]
    f = Function(vs, op.scatter_elements(*vs, axis=1, reduction="add"))
    for got in _both(f, d, i, u):
        np.testing.assert_array_equal(got, scatter_elements_oracle(d, i, u, 1, "add"))


def test_a_scatter_of_no_updates_is_its_data():
    d = np.arange(6, dtype="float32").reshape(2, 3)
    vs = [Var("d", TensorType((2, 3))), Var("i", TensorType((0, 1), "int64")),
          Var("u", TensorType((0, 3)))]
    f = Function(vs, op.scatter_nd(*vs))
    got = interpret(f, d, np.zeros((0, 1), "int64"), np.zeros((0, 3), "float32"))
    np.testing.assert_array_equal(got, d)


def test_scatter_nd_updates_must_fit_the_data():
    vs = [Var("d", TensorType((4, 3))), Var("i", TensorType((2, 1), "int64")),
          Var("u", TensorType((2, 4)))]
    with pytest.raises(OpShapeError, match=r"scatter_nd: .*updates must have shape "
                                           r"indices.shape\[:-1\] \+ data.shape\[q:\]"):
        op.scatter_nd(*vs)


def test_scatters_import_and_export_under_their_onnx_names():
    vs = [Var("d", TensorType((3, 4))), Var("i", TensorType((2, 1), "int64")),
          Var("u", TensorType((2, 4)))]
    e = Var("e", TensorType((2, 4), "int64"))
    f = Function(vs + [e], mb.graph.Tuple([
        op.scatter_nd(*vs, reduction="add"),
        op.scatter_elements(vs[0], e, vs[2], axis=0, reduction="max")]))
    model = mb.to_onnx(f)
    assert [(n.op_type, n.attribute[-1].s) for n in model.graph.node] == [
        ("ScatterND", b"add"), ("ScatterElements", b"max")]
    rng = np.random.default_rng(2)
    args = (rng.standard_normal((3, 4)).astype("float32"), np.array([[2], [-3]], "int64"),
            rng.standard_normal((2, 4)).astype("float32"),
            np.array([[0, 1, 2, 0], [-1, -2, -3, -1]], "int64"))
    back = mb.from_onnx(model)
    assert {c.op for c in back["main"].calls()} == {"scatter_nd", "scatter_elements"}
    want = (scatter_nd_oracle(*args[:3], "add"),
            scatter_elements_oracle(args[0], args[3], args[2], 0, "max"))
    for got, w in zip(mb.compile(back)(*args), want):
        np.testing.assert_allclose(got, w, rtol=1e-6)
