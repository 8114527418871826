"""mlcbook.ops.declare: an op declared once gets its type inference, its reference and its
legalization from its compute."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import ops
from mlcbook.errors import (ArgumentError, GraphError, OpAttributeError, OpDTypeError,
                            OpShapeError)
from mlcbook.graph import Function, Var, interpret, op
from mlcbook.ops import OpKind, TensorType, TupleType, declare
from mlcbook.te import ops as T
from mlcbook.tir import expr as E


@pytest.fixture
def declared():
    """Names of ops a test declares, removed after it."""
    names: list[str] = []
    yield names
    for name in names:
        ops.unregister(name)


def test_a_binary_formula_broadcasts_like_numpy(declared):
    declared.append("hypot2")
    declare.binary("hypot2", lambda a, b: E.sqrt(a * a + b * b), doc="sqrt(a*a + b*b)")
    a, b = Var("a", TensorType((3, 1))), Var("b", TensorType((4,)))
    f = Function([a, b], op.hypot2(a, b))
    assert f.body.type == TensorType((3, 4), "float32")
    x, y = np.arange(3, dtype="float32").reshape(3, 1), np.arange(4, dtype="float32")
    np.testing.assert_allclose(mb.compile(f)(x, y), np.hypot(x, y), rtol=1e-6)
    assert ops.get("hypot2").kind == OpKind.BROADCAST


def test_an_op_from_a_te_compute_infers_its_type_from_it(declared):
    declared.append("softmax_again")
    declare.op("softmax_again", T.softmax, kind=OpKind.REDUCTION, attrs={"axis": -1})
    x = Var("x", TensorType((2, 5), "float16"))
    y = op.softmax_again(x, axis=0)
    assert y.type == TensorType((2, 5), "float16")
    a = np.random.default_rng(0).standard_normal((2, 5)).astype("float16")
    e = np.exp(a.astype(np.float64))
    np.testing.assert_allclose(interpret(Function([x], y), a), e / e.sum(0), atol=1e-3)


def test_shape_errors_of_the_compute_are_the_graphs(declared):
    with pytest.raises(OpShapeError, match="add: shapes .*cannot be broadcast"):
        op.add(Var("a", TensorType((3,))), Var("b", TensorType((4,))))
    declared.append("bad_axis")
    declare.op("bad_axis", T.softmax, kind=OpKind.REDUCTION, attrs={"axis": -1})
    with pytest.raises(GraphError, match="axis"):
        op.bad_axis(Var("x", TensorType((3,))), axis=5)


def test_an_attribute_the_compute_refuses_is_an_op_attribute_error_naming_the_op(declared):
    declared.append("transpose_again")
    declare.op("transpose_again", T.transpose, kind=OpKind.INJECTIVE, attrs={"axes": None})
    with pytest.raises(OpAttributeError, match=r"^\[MLC-G005\] transpose_again: transpose: "
                                               r"\(0, 0\) is not a permutation of the 2 "
                                               r"dimensions of the data \(2, 3\)"):
        op.transpose_again(Var("x", TensorType((2, 3))), axes=(0, 0))


def test_dtypes_the_compute_refuses_are_an_op_dtype_error(declared):
    declared.append("concat_again")
    declare.op("concat_again", lambda *xs, name: T.concat(xs, 0, name=name),
               kind=OpKind.INJECTIVE, num_inputs=(1, None))
    with pytest.raises(OpDTypeError, match="concat_again: concat: input 1 is int32 but input 0 "
                                           "is float32"):
        op.concat_again(Var("a", TensorType((2,))), Var("b", TensorType((2,), "int32")))


def test_a_check_shared_with_the_compute_refuses_an_input_with_no_elements_too():
    # the compute never sees an empty tensor: the declaration's check calls te's
    with pytest.raises(OpAttributeError, match=r"transpose: \(1, 1\) is not a permutation"):
        ops.get("transpose").infer_type([TensorType((0, 3))], {"perm": (1, 1)})
    with pytest.raises(OpShapeError, match=r"concat: input 1 \(2, 4\) does not fit input 0 "
                                           r"\(0, 3\)"):
        ops.get("concat").infer_type([TensorType((0, 3)), TensorType((2, 4))], {"axis": 0})


def test_an_elementwise_op_of_empty_tensors_gives_an_empty_tensor():
    x, y = Var("x", TensorType((2, 0))), Var("y", TensorType((1,)))
    f = Function([x, y], op.add(op.relu(x), y))
    assert f.body.type == TensorType((2, 0), "float32")
    got = interpret(f, np.zeros((2, 0), "float32"), np.ones(1, "float32"))
    assert got.shape == (2, 0)


def test_a_reduction_of_an_empty_tensor_is_refused(declared):
    declared.append("softmax_empty")
    declare.op("softmax_empty", T.softmax, kind=OpKind.REDUCTION, attrs={"axis": -1})
    with pytest.raises(OpShapeError, match="softmax_empty: an input has no elements"):
        op.softmax_empty(Var("x", TensorType((0, 3))))


def test_an_empty_rule_gives_the_value_of_an_input_with_no_elements(declared):
    declared.append("count_rows")
    declare.op("count_rows", lambda x, name: T.sum(x, axis=1, name=name), kind=OpKind.REDUCTION,
               empty=lambda types, attrs, arrays: np.zeros(types[0].shape[:1], types[0].dtype))
    x = Var("x", TensorType((3, 0)))
    assert op.count_rows(x).type == TensorType((3,), "float32")
    assert interpret(Function([x], op.count_rows(x)), np.zeros((3, 0), "float32")).tolist() == \
        [0, 0, 0]


def test_an_empty_rule_reads_the_values_of_the_inputs_that_have_elements(declared):
    declared.append("join_rows")

    def empty(types, attrs, arrays):
        if not any(0 in t.shape for t in types):
            return None
        if arrays is None:      # only the type is asked
            return np.empty((sum(t.shape[0] for t in types), 2), types[0].dtype)
        return np.concatenate(arrays)

    declare.op("join_rows", lambda *xs, name: T.concat(xs, 0, name=name),
               kind=OpKind.INJECTIVE, num_inputs=(2, 2), empty=empty)
    a, b = Var("a", TensorType((0, 2))), Var("b", TensorType((3, 2)))
    f = Function([a, b], op.join_rows(a, b))
    bv = np.arange(6, dtype="float32").reshape(3, 2)
    assert f.body.type == TensorType((3, 2), "float32")
    np.testing.assert_array_equal(interpret(f, np.zeros((0, 2), "float32"), bv), bv)


def test_a_compute_returning_a_tuple_of_one_tensor_gives_a_tuple(declared):
    declared.append("one_piece")
    declare.op("one_piece", lambda x, name: T.split(x, [x.shape[0]], name=name),
               kind=OpKind.INJECTIVE)
    x = Var("x", TensorType((4,)))
    assert op.one_piece(x).type == TupleType((TensorType((4,), "float32"),))
    got = interpret(Function([x], op.one_piece(x)), np.arange(4, dtype="float32"))
    assert isinstance(got, tuple) and got[0].tolist() == [0, 1, 2, 3]


def test_declared_indices_out_of_range_raise_in_the_reference_and_compiled(declared):
    declared.append("pick")
    declare.op("pick", lambda x, i, name: T.gather(x, i, name=name), kind=OpKind.INJECTIVE,
               num_inputs=(2, 2), indices=lambda types, attrs: ((1, types[0].shape[0], 0, -1),))
    x, i = np.arange(3, dtype="float32"), np.array([2, -3], "int64")
    assert ops.get("pick").reference(x, i).tolist() == [2, 0]
    xv, iv = Var("x", TensorType((3,))), Var("i", TensorType((2,), "int64"))
    f = Function([xv, iv], op.pick(xv, iv))     # compiled: checked before the kernel runs
    for bad in (3, -4):
        for run in (ops.get("pick").reference, lambda *a: interpret(f, *a), mb.compile(f)):
            with pytest.raises(ArgumentError, match=r"pick: an index is outside \[-3, 2\].*"
                                                    "Instead: give indices inside the data"):
                run(x, np.array([0, bad], "int64"))


def test_a_declared_view_is_a_view_with_its_shape_checked(declared):
    declared.append("rows_of_two")

    def shape_of(x, attrs):
        if x.size % 2:
            raise OpShapeError(f"rows_of_two: {x.shape} has an odd number of elements")
        return (x.size // 2, 2)

    declare.view("rows_of_two", shape_of)
    assert ops.get("rows_of_two").is_view and "rows_of_two" in ops.view_ops()
    x = Var("x", TensorType((2, 3), "int8"))
    f = Function([x], op.relu(op.rows_of_two(x)))
    assert f.body.args[0].type == TensorType((3, 2), "int8")
    xv = np.arange(-3, 3, dtype="int8").reshape(2, 3)
    np.testing.assert_array_equal(mb.compile(f)(xv), np.maximum(xv.reshape(3, 2), 0))
    np.testing.assert_array_equal(interpret(f, xv), np.maximum(xv.reshape(3, 2), 0))
    with pytest.raises(OpShapeError, match="odd number"):
        op.rows_of_two(Var("y", TensorType((3,))))


def test_dtype_attr_types_the_bytes_a_compute_writes_as_a_low_bit_type(declared):
    declared.append("low_nibble")

    def low_nibble(x, dtype, name):
        return mb.te.compute(x.shape, lambda i: E.cast("uint8", E.cast("int32", x[i]) % 16),
                             name=name)

    declare.op("low_nibble", low_nibble, kind=OpKind.ELEMWISE, attrs={"dtype": "uint4"},
               dtype_attr="dtype")
    x = Var("x", TensorType((4,), "uint8"))
    f = Function([x], op.low_nibble(x))
    assert f.body.type == TensorType((4,), "uint4")
    xv = np.array([0x00, 0x17, 0xA5, 0xFF], np.uint8)
    for got in (ops.get("low_nibble").reference(xv), interpret(f, xv), mb.compile(f)(xv)):
        assert got.dtype == np.dtype("uint4") and got.astype(int).tolist() == [0, 7, 5, 15]
