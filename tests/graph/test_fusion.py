import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph import Constant, Function, Var, op
from mlcbook.graph.fusion import explain_fusion, fuse_ops
from mlcbook.graph.passes import optimize

from ._models import model


def _groups(func):
    return [[c.name for c in g.calls] for g in fuse_ops(func).groups]


def _x(shape=(1, 4, 6, 6)):
    return Var("x", mb.graph.TensorType(shape))


def _w(shape, name=""):
    return Constant(np.random.default_rng(0).standard_normal(shape).astype("float32"), name)


def test_conv_takes_its_elementwise_epilogue_and_a_residual_add():
    f = optimize(model("residual"), 1)
    groups = _groups(f)
    assert ["conv1", "relu1"] in groups
    assert ["conv2", "residual", "relu2"] in groups
    assert ["gap"] in groups


def test_elementwise_ops_are_not_fused_into_a_conv_input():
    x = _x()
    f = Function([x], op.conv(op.relu(x, name="r"), _w((4, 4, 3, 3)), pads=(1, 1, 1, 1),
                              name="c"))
    plan = fuse_ops(f)
    assert [[c.name for c in g.calls] for g in plan.groups] == [["r"], ["c"]]
    assert plan.boundaries == [("r", "c", "c is out_elemwise_fusable; elementwise ops are not "
                                "fused into the inputs of a conv, matmul or pooling kernel, "
                                "which reads them many times")]


def test_a_diamond_of_elementwise_ops_is_one_group():
    x = _x()
    c = op.conv(x, _w((4, 4, 1, 1)), name="c")
    f = Function([x], op.add(op.relu(c, name="a"), op.sigmoid(c, name="b"), name="d"))
    assert _groups(f) == [["c", "a", "b", "d"]]


def test_a_diamond_through_an_injective_op_stops_at_the_conv():
    x = _x((1, 4, 6, 6))
    c = op.conv(x, _w((4, 4, 1, 1)), name="c")
    t = op.transpose(c, perm=(0, 1, 3, 2), name="t")
    f = Function([x], op.add(op.relu(c, name="a"), t, name="d"))
    groups = _groups(f)
    assert ["c"] in groups
    text = explain_fusion(f)
    assert "boundary c -> a" in text and "d is broadcast" not in text
    assert "c's kernel takes only elementwise/broadcast ops after it, and t (transpose) on the way to d is injective" in text


def test_a_value_that_is_also_an_output_ends_its_group():
    x = _x()
    c = op.conv(x, _w((4, 4, 1, 1)), name="c")
    f = Function([x], mb.graph.Tuple([c, op.relu(c, name="r")]))
    assert _groups(f) == [["c"], ["r"]]
    assert "c is also an output of the function" in explain_fusion(f)


def test_reshapes_are_views_and_never_fused():
    x = _x()
    f = Function([x], op.relu(op.flatten(op.relu(x, name="a"), name="flat"), name="b"))
    assert _groups(f) == [["a"], ["flat"], ["b"]]  # flat stays a view between two kernels
    assert "flat (flatten) is a view of memory: no kernel" in explain_fusion(f)


def test_elementwise_inputs_join_a_reduction():
    x = _x((4, 16))
    f = Function([x], op.sum(op.exp(x, name="e"), axes=(1,), name="s"))
    assert _groups(f) == [["e", "s"]]


def test_injective_chains_fuse():
    x = _x((4, 6))
    f = Function([x], op.slice(op.transpose(x, name="t"), starts=(1,), ends=(3,), axes=(0,),
                               name="s"))
    assert _groups(f) == [["t", "s"]]


def test_a_concat_does_not_join_the_transpose_of_it():
    # an im2col (a conv's weight gradient): fused, every element of the transpose would
    # select its input among all the concat's; apart, each is copied once
    x, y = _x((4, 6)), Var("y", mb.graph.TensorType((4, 6)))
    f = Function([x, y], op.transpose(op.concat(x, y, axis=0, name="c"), perm=(1, 0),
                                      name="t"))
    plan = fuse_ops(f)
    assert _groups(f) == [["c"], ["t"]]
    assert plan.boundaries[0][:2] == ("c", "t")
    assert "each element picks its input in a select" in plan.boundaries[0][2]


def test_every_call_is_in_exactly_one_group():
    f = optimize(model("attention"), 1)
    names = [n for g in _groups(f) for n in g]
    assert sorted(names) == sorted(c.name for c in f.calls())


def test_a_diamond_through_a_matmul_names_the_matmul():
    y = Var("y", mb.graph.TensorType((8, 8)))
    a = op.exp(y, name="a")
    d = op.add(op.relu(a, name="b"), op.matmul(a, _w((8, 8), "w"), name="c"), name="d")
    f = Function([y], op.tanh(d, name="e"))
    assert _groups(f) == [["a"], ["b", "c", "d", "e"]]
    assert ("boundary a -> b: a's uses meet again at d, but the way there passes c (matmul), "
            "which is out_elemwise_fusable") in explain_fusion(f)
