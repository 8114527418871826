"""The gathers and scatters whose indices are data follow gather's out-of-range policy: the
reference, the graph interpreter and a compiled model (and a saved one) raise alike."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError, LegalizeError, OpAttributeError, OpShapeError
from mlcbook.graph import Function, TensorType, Var, interpret, op


def _gather_elements():
    data, idx = Var("data", TensorType((3, 4))), Var("idx", TensorType((3, 2), "int64"))
    return Function([data, idx], op.relu(op.gather_elements(data, idx, axis=1))), (3, 4), \
        np.array([[0, -4], [3, 1], [2, 2]], "int64"), 4


def _scatter_nd():
    data, idx = Var("data", TensorType((3, 3))), Var("idx", TensorType((2, 2), "int64"))
    upd = Var("upd", TensorType((2,)))
    f = Function([data, idx, upd], op.scatter_nd(data, idx, op.relu(upd), reduction="add"))
    return f, (3, 3), np.array([[0, 1], [2, -1]], "int64"), 3


@pytest.mark.parametrize("make", [_gather_elements])
def test_an_index_out_of_range_raises_in_the_reference_and_compiled_alike(make, tmp_path):
    f, shape, ok, n = make()
    exe = mb.compile(f)
    loaded = mb.load(exe.save(tmp_path / "m.mlcb"))
    d = np.arange(12, dtype="float32").reshape(shape)
    np.testing.assert_array_equal(exe(d, ok), interpret(f, d, ok))
    for bad in (n, -n - 1, 2**40):            # 2**40 would wrap to 0 as an int32
        idx = ok.copy()
        idx.flat[1] = bad
        for run in (lambda *a: interpret(f, *a), exe, loaded):
            with pytest.raises(ArgumentError, match=r"an index is outside"):
                run(d, idx)


def test_scatter_nd_out_of_range_raises_in_the_reference_and_compiled_alike():
    f, shape, ok, n = _scatter_nd()
    exe = mb.compile(f)
    d, u = np.zeros(shape, "float32"), np.array([1.5, 2.5], "float32")
    np.testing.assert_array_equal(exe(d, ok, u), interpret(f, d, ok, u))
    bad = np.array([[0, 1], [3, 0]], "int64")   # row 3 of 3 rows
    for run in (lambda *a: interpret(f, *a), exe):
        with pytest.raises(ArgumentError, match=r"an index is outside"):
            run(d, bad, u)


def test_gather_nd_over_axes_of_different_lengths_is_refused_when_compiled():
    data, idx = Var("data", TensorType((3, 4))), Var("idx", TensorType((2, 2), "int64"))
    f = Function([data, idx], op.gather_nd(data, idx))
    d, i = np.arange(12, dtype="float32").reshape(3, 4), np.array([[2, 3], [0, -1]], "int64")
    np.testing.assert_array_equal(interpret(f, d, i), [11, 3])
    with pytest.raises(LegalizeError, match=r"gather_nd .* axes of lengths \(3, 4\).*Instead"):
        mb.compile(f)


def test_scatter_elements_names_an_unknown_reduction():
    data, idx = Var("data", TensorType((3,))), Var("idx", TensorType((2,), "int64"))
    with pytest.raises(OpAttributeError, match=r"reduction='sum' is not one of"):
        op.scatter_elements(data, idx, data, reduction="sum")


def test_scatter_elements_updates_must_have_the_indices_shape():
    data, idx = Var("data", TensorType((3,))), Var("idx", TensorType((2,), "int64"))
    with pytest.raises(OpShapeError, match=r"must have the indices' shape \(2,\)"):
        op.scatter_elements(data, idx, data)
