import numpy as np

from mlcbook.graph import CallTIR, Constant, Function, TensorType, Var, op
from mlcbook.graph.printer import module_to_str
from mlcbook.ops.types import Attrs
from mlcbook.tir import IRModule


def mlp():
    x = Var("x", TensorType((1, 4)))
    w = Constant(np.ones((4, 2), "float32"), name="fc.weight")
    return Function([x], op.relu(op.matmul(x, w, name="fc")))


def test_function_text():
    assert str(mlp()) == (
        'def main(x: Tensor((1, 4), "float32")) -> Tensor((1, 2), "float32"):\n'
        '    # W["fc.weight"]: Tensor((4, 2), "float32")  owner fc\n'
        '    fc: Tensor((1, 2), "float32") = op.matmul(x, W["fc.weight"])\n'
        '    relu: Tensor((1, 2), "float32") = op.relu(fc)\n'
        '    return relu')


def test_non_default_attributes_and_small_constants_are_shown():
    x = Var("x", TensorType((2, 3)))
    f = Function([x], op.add(op.softmax(x, axis=0), Constant(np.array([1, 2, 3], "float32"))))
    text = str(f)
    assert "op.softmax(x, axis=0)" in text
    assert 'const([1.0, 2.0, 3.0], "float32")' in text


def test_names_that_are_not_identifiers_are_made_readable():
    x = Var("input:0", TensorType((2,)))
    f = Function([x], op.relu(x, name="model/relu"))
    assert "def main(input_0: " in str(f) and "model_relu: " in str(f)


def test_html_for_jupyter():
    assert "<" in mlp()._repr_html_() and "relu" in mlp()._repr_html_()


def test_module_text_lists_graph_functions_first():
    text = module_to_str(IRModule({"main": mlp()}))
    assert text.startswith("def main(")


def test_the_attrs_of_a_call_tir_are_shown():
    x = Var("x", TensorType((2, 2)))
    f = Function([x], CallTIR("relu", (x,), TensorType((2, 2)), "r", Attrs(inplace=1)))
    assert 'call_tir("relu", (x,), Tensor((2, 2), "float32"), inplace=1)' in f.script()
