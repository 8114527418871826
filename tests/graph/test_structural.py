import numpy as np
import pytest

from mlcbook.errors import StructuralMismatchError
from mlcbook.graph import (CallTIR, Constant, Function, TensorType, Tuple, Var,
                           assert_structural_equal, op, structural_equal, structural_hash)
from mlcbook.ops.types import Attrs


def model(xname="x", name_calls=True, w=1.0, share=True):
    x = Var(xname, TensorType((2, 4)))
    wc = Constant(np.full((4, 4), w, "float32"), name="w")
    h = op.matmul(x, wc, name="fc" if name_calls else "")
    r = op.relu(h)
    return Function([x], Tuple([r, r if share else op.relu(h)]))


def test_equal_up_to_renaming_of_inputs_and_calls():
    a, b = model(), model("data", name_calls=False)
    assert structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_weight_values_matter():
    assert not structural_equal(model(), model(w=2.0))


def test_sharing_matters_and_the_message_says_where():
    assert not structural_equal(model(), model(share=False))
    with pytest.raises(StructuralMismatchError, match="shared differently"):
        assert_structural_equal(model(), model(share=False))


def test_attributes_matter():
    x = Var("x", TensorType((2, 3)))
    with pytest.raises(StructuralMismatchError, match="softmax"):
        assert_structural_equal(Function([x], op.softmax(x, axis=0)),
                                Function([x], op.softmax(x, axis=1)))


def test_the_attrs_of_a_call_tir_matter():
    x = Var("x", TensorType((2, 2)))

    def f(**attrs):
        return Function([x], CallTIR("relu", (x,), TensorType((2, 2)), "r", Attrs(attrs)))
    assert structural_equal(f(inplace=1), f(inplace=1))
    assert structural_hash(f(inplace=1)) != structural_hash(f())
    with pytest.raises(StructuralMismatchError, match="inplace"):
        assert_structural_equal(f(inplace=1), f())
