import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.train.rewrite.coupling import Slice, coupled_group

from . import _models as M


def _slices(func, layer):
    return set(coupled_group(func, layer).slices)


def test_mlp_hidden_layer_couples_its_rows_and_the_next_layers_columns():
    assert _slices(M.mlp(), "fc2") == {Slice("fc2.weight", 0, "source"),
                                       Slice("fc2.bias", 0, "source"),
                                       Slice("fc3.weight", 1, "sink")}


def test_cnn_last_conv_couples_a_block_of_flattened_features_per_channel():
    g = coupled_group(M.cnn(), "conv2")
    assert g.units == 4
    assert Slice("fc.weight", 1, "sink", 0, 16) in g.slices


def test_batch_norm_parameters_join_the_channel_group():
    assert {s.param for s in coupled_group(M.batch_norm_cnn(), "conv1").slices} == {
        "conv1.weight", "conv1.bias", "bn.scale", "bn.bias", "bn.mean", "bn.var", "fc.weight"}


def test_residual_add_couples_both_operands_producers():
    g = coupled_group(M.residual(), "fcb")
    assert set(g.params("source")) == {"fcb.weight", "fcb.bias", "fc1.weight", "fc1.bias"}
    assert set(g.params("sink")) == {"fca.weight", "fc3.weight"}
    assert set(coupled_group(M.residual(), "fc1").slices) == set(g.slices)


def test_branch_inside_the_block_is_its_own_group():
    assert set(coupled_group(M.residual(), "fca").params()) == {
        "fca.weight", "fca.bias", "fcb.weight"}


def test_concat_offsets_the_consumers_slice():
    x = mb.graph.expr.Var("input", mb.ops.types.TensorType((2, 3), "float64"))
    import numpy as np
    from mlcbook.graph.expr import Call, Constant, Function
    from mlcbook.ops.types import Attrs
    a = Call("gemm", (x, Constant(np.ones((4, 3)), "a.weight")), Attrs(trans_b=1), "a")
    b = Call("gemm", (x, Constant(np.ones((2, 3)), "b.weight")), Attrs(trans_b=1), "b")
    cat = Call("concat", (a, b), Attrs(axis=1), "cat")
    f = Function((x,), Call("gemm", (cat, Constant(np.ones((5, 6)), "c.weight")),
                            Attrs(trans_b=1), "c"))
    assert Slice("c.weight", 1, "sink", 4, 1) in coupled_group(f, "b").slices


def test_output_layer_cannot_be_grouped():
    with pytest.raises(RewriteError, match="model's output"):
        coupled_group(M.mlp(), "fc3")


def test_unknown_layer_names_the_layers():
    with pytest.raises(RewriteError, match=r"'fc9' is not a gemm or conv.*fc1"):
        coupled_group(mb.train.mlp((4, 8, 3)), "fc9")
