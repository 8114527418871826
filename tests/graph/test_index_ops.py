"""The gathers and scatters whose indices are data follow gather's out-of-range policy: the
reference, the graph interpreter and a compiled model (and a saved one) raise alike."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError, ArtifactError, OpAttributeError, OpShapeError
from mlcbook.graph import Function, TensorType, Var, interpret, op

from .run.test_artifact import edit_json, members_of, write


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
            with pytest.raises(ArgumentError, match=r"gather_elements: an index is outside"):
                run(d, idx)


def test_scatter_nd_out_of_range_raises_in_the_reference_and_compiled_alike():
    f, shape, ok, n = _scatter_nd()
    exe = mb.compile(f)
    d, u = np.zeros(shape, "float32"), np.array([1.5, 2.5], "float32")
    np.testing.assert_array_equal(exe(d, ok, u), interpret(f, d, ok, u))
    bad = np.array([[0, 1], [3, 0]], "int64")   # row 3 of 3 rows
    for run in (lambda *a: interpret(f, *a), exe):
        with pytest.raises(ArgumentError, match=r"scatter_nd: an index is outside"):
            run(d, bad, u)


def test_gather_nd_checks_each_coordinate_against_its_own_axis(tmp_path):
    data, idx = Var("data", TensorType((3, 4))), Var("idx", TensorType((2, 2), "int64"))
    f = Function([data, idx], op.gather_nd(data, idx))
    exe = mb.compile(f)
    loaded = mb.load(exe.save(tmp_path / "m.mlcb"))
    d, i = np.arange(12, dtype="float32").reshape(3, 4), np.array([[2, 3], [0, -4]], "int64")
    for run in (lambda *a: interpret(f, *a), exe, loaded):
        np.testing.assert_array_equal(run(d, i), [11, 0])
    for bad in ([[3, 0], [0, 0]], [[0, 4], [0, 0]], [[0, 0], [-4, 0]]):   # rows 3, cols 4
        for run in (lambda *a: interpret(f, *a), exe, loaded):
            with pytest.raises(ArgumentError, match=r"gather_nd: an index is outside"):
                run(d, np.array(bad, "int64"))


def test_scatter_nd_over_axes_of_different_lengths_matches_the_reference():
    data, idx = Var("data", TensorType((2, 3, 4))), Var("idx", TensorType((2, 3), "int64"))
    upd = Var("upd", TensorType((2,)))
    f = Function([data, idx, upd], op.scatter_nd(data, idx, upd))
    d, u = np.zeros((2, 3, 4), "float32"), np.array([1.5, 2.5], "float32")
    i = np.array([[1, 2, 3], [0, -1, -4]], "int64")
    want = d.copy()
    want[1, 2, 3], want[0, 2, 0] = 1.5, 2.5
    np.testing.assert_array_equal(mb.compile(f)(d, i, u), want)
    np.testing.assert_array_equal(interpret(f, d, i, u), want)


def test_scatter_elements_names_an_unknown_reduction():
    data, idx = Var("data", TensorType((3,))), Var("idx", TensorType((2,), "int64"))
    with pytest.raises(OpAttributeError, match=r"reduction='sum' is not one of"):
        op.scatter_elements(data, idx, data, reduction="sum")


def test_scatter_elements_updates_must_have_the_indices_shape():
    data, idx = Var("data", TensorType((3,))), Var("idx", TensorType((2,), "int64"))
    with pytest.raises(OpShapeError, match=r"must have the indices' shape \(2,\)"):
        op.scatter_elements(data, idx, data)


def _saved_gather_nd(tmp_path, change_checks):
    """A saved gather_nd model whose plan.json's index checks went through ``change_checks``
    (hashes fixed, as a forger or an older mlcbook would write them)."""
    data, idx = Var("data", TensorType((3, 4))), Var("idx", TensorType((2, 2), "int64"))
    path = mb.compile(Function([data, idx], op.gather_nd(data, idx))).save(tmp_path / "m.mlcb")
    members = members_of(path)
    edited = edit_json(members, "plan.json", lambda p: p.update(checks=change_checks(
        p["checks"])))
    return write(tmp_path / "edited.mlcb", edited)


def test_an_artifact_from_before_coordinates_checks_every_index(tmp_path):
    # (step, position, n, axis) was the whole entry: it bounds every element by n
    path = _saved_gather_nd(tmp_path, lambda cs: [c[:4] for c in cs[:1]])
    (check,) = mb.load(path).plan.checks
    assert check[-1] == -1
    with pytest.raises(ArgumentError, match=r"outside \[-3, 2\]"):
        mb.load(path)(np.zeros((3, 4), "float32"), np.array([[0, 3], [0, 0]], "int64"))


def test_an_index_check_of_a_coordinate_the_indices_lack_is_refused(tmp_path):
    path = _saved_gather_nd(tmp_path, lambda cs: [cs[0][:4] + [5]])
    with pytest.raises(ArtifactError, match=r"names coordinate 5, which its indices of shape"):
        mb.load(path)
