"""Tensors, compute and reductions: what a TE program is before it becomes loop IR."""

import pytest

from mlcbook import te, tir
from mlcbook.errors import MLCError, ShapeError, TEError
from mlcbook.te.reduction import Reduce
from mlcbook.tir import BufferLoad, Var


def test_placeholder_attributes():
    A = te.placeholder((4, 6), "int32", name="A")
    assert (A.shape, A.dtype, A.name, A.ndim) == ((4, 6), "int32", "A", 2)
    assert A.is_placeholder


def test_placeholder_defaults_to_float32():
    assert te.placeholder((3,), name="x").dtype == "float32"


def test_read_is_a_buffer_load_of_the_tensors_buffer():
    A = te.placeholder((4, 6), name="A")
    i = Var("i")
    load = A[i, 2]
    assert isinstance(load, BufferLoad) and load.buffer is A.buffer
    assert load.indices[0] is i


def test_compute_names_axes_after_the_lambda_parameters():
    A = te.placeholder((4, 6), name="A")
    B = te.compute((4, 6), lambda row, col: A[row, col] * 2.0, name="B")
    assert [v.name for v in B.op.axis] == ["row", "col"]
    assert (B.shape, B.dtype, B.name) == ((4, 6), "float32", "B")
    assert B.op.inputs == (A,)
    assert not B.is_placeholder


def test_compute_dtype_follows_the_body():
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: tir.cast("int32", A[i]), name="B")
    assert B.dtype == "int32"


def test_compute_inputs_in_order_of_first_use():
    A, B = te.placeholder((3,), name="A"), te.placeholder((3,), name="B")
    C = te.compute((3,), lambda i: B[i] + A[i] + B[i], name="C")
    assert C.op.inputs == (B, A)


def test_reduction_body():
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis(6, name="k")
    S = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="S")
    assert isinstance(S.op.body, Reduce) and S.op.reduce_axis == (k,)
    assert S.op.body.identity().value == 0.0


def test_reducer_identities():
    A = te.placeholder((4,), "float32", name="A")
    I = te.placeholder((4,), "int32", name="I")
    k = te.reduce_axis(4, name="k")
    assert te.max(A[k], axis=k).identity().value == float("-inf")
    assert te.min(A[k], axis=k).identity().value == float("inf")
    assert te.max(I[k], axis=k).identity().value == -2**31
    assert te.min(I[k], axis=k).identity().value == 2**31 - 1


def test_reduce_axis_accepts_a_range():
    k = te.reduce_axis((2, 5), name="k")
    assert (k.start, k.extent, k.name) == (2, 3, "k")


def test_te_sum_does_not_shadow_builtins_in_the_package():
    assert sum([1, 2]) == 3 and max(1, 2) == 2 and min(1, 2) == 1
    assert te.sum is not sum


# --- errors --------------------------------------------------------------------------------------
def test_errors_are_mlc_errors_with_a_code():
    with pytest.raises(MLCError, match=r"\[MLC-X001\]"):
        te.placeholder((0, 3), name="A")


@pytest.mark.parametrize("shape,msg", [((0, 3), "non-positive dimension 0"),
                                       ((2.5,), "non-integer dimension 2.5"),
                                       ("ab", "non-integer dimension 'a'")])
def test_bad_placeholder_shape(shape, msg):
    with pytest.raises(TEError, match=msg):
        te.placeholder(shape, name="A")


def test_fcompute_arity_must_match_the_shape():
    with pytest.raises(TEError, match=r"compute 'B': fcompute takes 1 index argument\(s\) but "
                                      r"the shape has 2 dimension\(s\)"):
        te.compute((3, 4), lambda i: 1.0, name="B")


def test_reduction_inside_a_larger_expression_is_rejected():
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis(6, name="k")
    with pytest.raises(TEError, match=r"compute 'S': a te.sum\(...\) reduction is used inside a "
                                      "larger expression"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0, name="S")


def test_reduce_axis_without_reduction_is_rejected():
    A = te.placeholder((4, 6), name="A")
    k = te.reduce_axis(6, name="k")
    with pytest.raises(TEError, match="uses reduce axis 'k' but no reduction lists it"):
        te.compute((4,), lambda i: A[i, k], name="S")


def test_reduction_must_list_every_reduce_axis_it_uses():
    A = te.placeholder((4, 6, 2), name="A")
    k, r = te.reduce_axis(6, name="k"), te.reduce_axis(2, name="r")
    with pytest.raises(TEError, match="uses reduce axis 'r'"):
        te.compute((4,), lambda i: te.sum(A[i, k, r], axis=k), name="S")


def test_foreign_variable_is_rejected():
    A = te.placeholder((4,), name="A")
    n = Var("n")
    with pytest.raises(TEError, match="uses variable 'n', which is not one of this compute's"):
        te.compute((4,), lambda i: A[n], name="B")


def test_axis_must_be_a_reduce_axis():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="is not a reduce axis; make it with te.reduce_axis"):
        te.compute((1,), lambda i: te.sum(A[i], axis=i), name="S")


def test_empty_reduce_axis_range():
    with pytest.raises(TEError, match=r"reduce axis 'k' has the empty range \[3, 3\)"):
        te.reduce_axis((3, 3), name="k")


def test_nested_reduction_is_rejected():
    A = te.placeholder((4, 6), name="A")
    k, r = te.reduce_axis(6, name="k"), te.reduce_axis(4, name="r")
    with pytest.raises(TEError, match="te.sum of another reduction"):
        te.sum(te.max(A[r, k], axis=k), axis=r)


def test_plain_buffer_is_not_a_tensor():
    buf = tir.Buffer("raw", (4,))
    with pytest.raises(TEError, match="reads buffer 'raw', which is not a te tensor"):
        te.compute((4,), lambda i: buf[i], name="B")


def test_slices_are_rejected():
    A = te.placeholder((4, 6), name="A")
    with pytest.raises(TEError, match="tensor 'A' is indexed with a slice"):
        te.compute((4,), lambda i: A[i, 0:2], name="B")


def test_wrong_number_of_indices():
    A = te.placeholder((4, 6), name="A")
    with pytest.raises(ShapeError, match=r"buffer 'A' has 2 dimension\(s\) \(4, 6\) but is "
                                         r"indexed with 1 index"):
        te.compute((4,), lambda i: A[i], name="B")


def test_python_if_on_an_expression_gives_a_te_error():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="compute 'B': an IR expression has no truth value"):
        te.compute((4,), lambda i: A[i] if i > 0 else 0.0, name="B")


def test_returning_a_tensor_is_rejected():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match=r"fcompute returned the tensor 'A' itself"):
        te.compute((4,), lambda i: A, name="B")


def test_tensors_are_not_iterable():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="tensor 'A' is not iterable"):
        list(A)
