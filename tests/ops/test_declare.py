"""mlcbook.ops.declare: an op declared once gets its type inference, its reference and its
legalization from its compute."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import ops
from mlcbook.errors import GraphError, OpShapeError
from mlcbook.graph import Function, Var, interpret, op
from mlcbook.ops import OpKind, TensorType, declare
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
               empty=lambda types, attrs: np.zeros(types[0].shape[:1], types[0].dtype))
    x = Var("x", TensorType((3, 0)))
    assert op.count_rows(x).type == TensorType((3,), "float32")
    assert interpret(Function([x], op.count_rows(x)), np.zeros((3, 0), "float32")).tolist() == \
        [0, 0, 0]
