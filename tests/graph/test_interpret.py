import numpy as np
import pytest

from mlcbook.errors import ArgumentError, GraphError
from mlcbook.graph import CallTIR, Function, TensorType, Tuple, Var, interpret, op
from mlcbook.tir import IRModule


def f2():
    x = Var("x", TensorType((2, 3)))
    y = Var("y", TensorType((3,)))
    return Function([x, y], Tuple([op.add(x, y), op.max(x, axes=(1,), keepdims=0)]))


def test_positional_and_named_inputs():
    x, y = np.ones((2, 3), "float32"), np.arange(3, dtype="float32")
    a, b = interpret(f2(), x, y)
    np.testing.assert_array_equal(a, x + y)
    a2, _ = interpret(f2(), y=y, x=x)
    np.testing.assert_array_equal(a, a2)
    assert b.shape == (2,)


@pytest.mark.parametrize("args,kwargs,msg", [
    ((np.ones((2, 3), "float32"),), {}, "missing input"),
    ((np.ones((3, 2), "float32"), np.ones(3, "float32")), {}, r"expects shape \(2, 3\)"),
    ((np.ones((2, 3)), np.ones(3, "float32")), {}, r"astype\(np.float32\)"),
    ((), {"z": 1}, "no input named 'z'"),
])
def test_bad_inputs_are_explained(args, kwargs, msg):
    with pytest.raises(ArgumentError, match=msg):
        interpret(f2(), *args, **kwargs)


def test_call_tir_needs_the_module():
    x = Var("x", TensorType((2,)))
    f = Function([x], CallTIR("missing", (x,), TensorType((2,))))
    with pytest.raises(GraphError, match="not a PrimFunc of the module"):
        interpret(IRModule({"main": f}), np.ones(2, "float32"))


def test_a_module_without_main_graph_function():
    with pytest.raises(GraphError, match="none is named 'main'"):
        interpret(IRModule({"a": f2(), "b": f2()}))


def test_an_onnx_model_is_refused_with_the_import_to_do():
    import mlcbook as mb
    from mlcbook.frontend import examples
    with pytest.raises(GraphError, match=r"ONNX model \(ModelProto\).*mb.compile\(mb.from_onnx"):
        mb.compile(examples.mlp(batch=2))
    with pytest.raises(GraphError, match="mb.from_onnx"):
        interpret("model.onnx")


def test_something_else_is_refused_by_type():
    with pytest.raises(GraphError, match="cannot interpret int 3: pass a graph Function"):
        interpret(3)
