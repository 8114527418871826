"""Einsum equations that are transposes, sums and matrix products import as those graph ops
and match numpy.einsum; the others are reported naming the equation."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.frontend.onnx_einsum import parse_equation


def _model(equation, shapes):
    out_rank = len(parse_equation(equation, [len(s) for s in shapes])[1])
    names = [f"x{k}" for k in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                         for n, s in zip(names, shapes)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * out_rank)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("equation, shapes", [
    ("ij->ji", [(3, 4)]),
    ("ijk->k", [(2, 3, 4)]),
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bkj->bki", [(2, 3, 5), (2, 4, 5)]),
    ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    ("ij,kl->ljki", [(2, 3), (4, 5)]),       # an outer product: nothing contracted
    ("abc,cd->d", [(2, 3, 4), (4, 5)]),      # a, b summed out of one operand first
    ("i,i", [(5,), (5,)]),
])
def test_einsum_matches_numpy(equation, shapes):
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype("float32") for s in shapes]
    mod = mb.from_onnx(_model(equation, shapes))
    got = mb.graph.interpret(mod, **{f"x{k}": x for k, x in enumerate(xs)})
    np.testing.assert_allclose(got, np.einsum(equation, *xs), rtol=1e-5, atol=1e-5)


def test_implicit_output_is_the_letters_seen_once_in_order():
    assert parse_equation("ba,ac", [2, 2]) == (["ba", "ac"], "bc")
    assert parse_equation("...ij->...ji", [4]) == (["01ij"], "01ji")


@pytest.mark.parametrize("equation, shapes, why", [
    ("ii->i", [(3, 3)], r"repeats a letter in operand 'ii' \(a diagonal\)"),
    ("i,i,i", [(3,), (3,), (3,)], "has 3 operands"),
    ("ij,ij->ij", [(3, 1), (3, 4)], "letter 'j' has lengths 1 and 4"),
])
def test_einsum_outside_the_subset_names_the_equation(equation, shapes, why):
    with pytest.raises(UnsupportedModelError, match=rf"equation '{equation}'.*{why}"):
        mb.from_onnx(_model(equation, shapes))
