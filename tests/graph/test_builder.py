import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import GraphError
from mlcbook.graph import Builder, CallTIR, TensorType, interpret


def relu_primfunc(n):
    x = mb.te.placeholder((1, n), name="X")
    y = mb.te.compute((1, n), lambda i, j: mb.tir.max(x[i, j], mb.tir.const(0.0, "float32")),
                      name="Y")
    return mb.te.create_prim_func([x, y], name="relu_tir")


def test_builder_makes_a_module_with_graph_and_loop_functions():
    bb = Builder()
    x = bb.input("x", (1, 4))
    w = np.arange(12, dtype="float32").reshape(4, 3) - 5
    with bb.function("main", [x]):
        h = bb.call("matmul", x, bb.param("fc.weight", w), name="fc")
        y = bb.call_tir(relu_primfunc(3), [h], TensorType((1, 3)))
        bb.ret(y)
    mod = bb.get()
    assert set(mod.functions) == {"main", "relu_tir"}
    assert isinstance(mod["main"].body, CallTIR)
    xv = np.ones((1, 4), "float32")
    np.testing.assert_allclose(interpret(mod, xv), np.maximum(xv @ w, 0))


def test_builder_requires_a_result():
    bb = Builder()
    x = bb.input("x", (2,))
    with pytest.raises(GraphError, match=r"call bb.ret"):
        with bb.function("main", [x]):
            bb.call("relu", x)


def test_graph_function_may_not_replace_a_primfunc_of_the_same_name():
    bb = Builder()
    x = bb.input("x", (1, 3))
    x_ = mb.te.placeholder((1, 3), name="X")
    y_ = mb.te.compute((1, 3), lambda i, j: x_[i, j] + x_[i, j], name="Y")
    kernel = mb.te.create_prim_func([x_, y_])  # named "main" by default
    with pytest.raises(GraphError, match=r"graph function 'main' would replace the PrimFunc "
                                         r"'main'.*name='my_kernel'"):
        with bb.function("main", [x]):
            bb.ret(bb.call_tir(kernel, [x], TensorType((1, 3))))
    assert bb.get()["main"] is kernel


def test_call_tir_by_unknown_name():
    bb = Builder()
    with pytest.raises(GraphError, match="no function 'nope'"):
        bb.call_tir("nope", [], TensorType((1,)))


def test_same_name_different_primfuncs_are_both_kept():
    bb = Builder()
    a, b = relu_primfunc(3), relu_primfunc(5)
    assert bb.add_func(a) == "relu_tir"
    assert bb.add_func(b) == "relu_tir_1"
    assert bb.add_func(a) == "relu_tir"


def test_emit_names_a_call():
    bb = Builder()
    x = bb.input("x", (2,))
    assert bb.emit(bb.call("relu", x), name="act").name == "act"
