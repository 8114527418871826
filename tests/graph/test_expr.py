import numpy as np
import pytest

from mlcbook.errors import GraphError, OpShapeError, UnboundVarError
from mlcbook.graph import (Call, Constant, Function, TensorType, Tuple, TupleGetItem, TupleType,
                           Var, op)


def x_var(shape=(2, 4), dtype="float32", name="x"):
    return Var(name, TensorType(shape, dtype))


def test_call_type_is_inferred_on_construction():
    y = op.matmul(x_var(), Constant(np.ones((4, 3), "float32")))
    assert y.type == TensorType((2, 3)) and y.shape == (2, 3) and y.dtype == "float32"


def test_a_bad_call_fails_where_it_is_built_and_names_the_call():
    with pytest.raises(OpShapeError, match="call 'fc': matmul: the operands have shapes"):
        op.matmul(x_var(), x_var(), name="fc")


def test_attrs_are_normalized_with_defaults():
    y = op.softmax(x_var())
    assert y.attrs["axis"] == -1


def test_constants_are_frozen_copies():
    data = np.zeros((2,), "float32")
    c = Constant(data, name="w")
    data[0] = 5
    assert c.data[0] == 0 and not c.data.flags.writeable


def test_function_names_calls_uniquely():
    x = x_var()
    f = Function([x], Tuple([op.relu(x), op.relu(x)]))
    assert [c.name for c in f.calls()] == ["relu", "relu_1"]


def test_weights_are_owned_by_the_first_call_that_uses_them():
    x = x_var()
    w = Constant(np.ones((4, 4), "float32"), name="fc.weight")
    h = op.matmul(x, w, name="fc")
    f = Function([x], op.matmul(h, w, name="fc2"))
    assert f.weights["fc.weight"].owner == "fc"


def test_two_different_weights_with_one_name_are_rejected():
    x = x_var()
    a = Constant(np.ones((4,), "float32"), name="w")
    b = Constant(np.ones((4,), "float32"), name="w")
    with pytest.raises(GraphError, match="two different weights named 'w'"):
        Function([x], op.add(op.add(x, a), b))


def test_one_weight_relaid_twice_by_a_pass_is_one_weight():
    """Two constants of one name and owner with equal values (a layout pass re-lays a weight
    for each of the two convs that share it) are one weight; unowned ones are two."""
    x = x_var()
    a = Constant(np.ones((4,), "float32"), name="w", owner="fc")
    b = Constant(np.ones((4,), "float32"), name="w", owner="fc")
    f = Function([x], op.add(op.add(x, a), b))
    assert len(f.weights) == 1 and f.weights["w"].owner == "fc"
    c = Constant(np.zeros((4,), "float32"), name="w", owner="fc")
    with pytest.raises(GraphError, match="two different weights named 'w'"):
        Function([x], op.add(op.add(x, a), c))


def test_unbound_variable_is_reported():
    x, y = x_var(), x_var(name="y")
    with pytest.raises(UnboundVarError, match="uses the variable 'y'"):
        Function([x], op.add(x, y))


def test_tuple_items():
    s = op.split(x_var(), axis=1, sizes=(1, 3))
    assert isinstance(s.type, TupleType)
    assert s[1].type == TensorType((2, 3))
    with pytest.raises(GraphError, match="out of range"):
        TupleGetItem(s, 2)
    with pytest.raises(GraphError, match="tensor, not a tuple"):
        TupleGetItem(x_var(), 0)


def test_tuple_has_no_shape():
    with pytest.raises(GraphError, match="has no shape"):
        Tuple([x_var()]).shape


def test_non_expression_arguments_are_rejected():
    with pytest.raises(GraphError, match="not a graph expression"):
        Call("relu", ("x",))
