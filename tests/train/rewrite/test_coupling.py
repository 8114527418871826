import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.frontend import examples
from mlcbook.graph.expr import Call, Constant, Function
from mlcbook.ops.types import Attrs
from mlcbook.train.rewrite.coupling import Slice, coupled_group, follow_reshape

from . import _models as M
from . import _onnx_models as O


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
    with pytest.raises(RewriteError, match=r"'fc9' is not a layer \(a gemm, conv or matmul.*fc1"):
        coupled_group(mb.train.mlp((4, 8, 3)), "fc9")


def test_heads_split_off_by_a_reshape_name_the_reshape():
    with pytest.raises(RewriteError, match=r"split across axes by reshape 'v.r' to "
                                           r"\(2, 3, 2, 2\).*Instead:"):
        coupled_group(O.attention(heads=2), "v.mm")


def test_query_units_contracted_with_keys_name_the_matmul():
    with pytest.raises(RewriteError, match=r"'q.mm' are contracted with another computed "
                                           r"value by matmul 'scores'.*Instead:"):
        coupled_group(O.attention(), "q.mm")


def test_packed_qkv_split_names_the_split():
    f = mb.from_onnx(examples.attention_block(batch=2, seq=3, dim=4, heads=2))["main"]
    with pytest.raises(RewriteError, match=r"'qkv' flow into split 'split', whose coupling is "
                                           r"unknown. Instead:"):
        coupled_group(f, "qkv")


def test_units_reduced_together_name_the_reduction():
    f = O.attention()
    pool = [c for c in f.calls() if c.name == "pool"][0]
    g = Function(f.params, Call("mean", (pool.args[0],), Attrs(axes=(2,), keepdims=0), "pool"))
    with pytest.raises(RewriteError, match=r"reduced together by mean 'pool'.*Instead:"):
        coupled_group(g, "o.mm")


def test_follow_reshape_merges_and_refuses_splits():
    assert follow_reshape((2, 3, 4, 4), (2, 48), 1) == (1, 16)
    assert follow_reshape((2, 3, 8), (6, 8), 2) == (1, 1)
    assert follow_reshape((2, 8, 16), (2, 8, 4, 4), 2) is None


def _after_matmul(op, *extra, attrs=None):
    """input (2, 3) @ W (3, 4), then ``op(h, *extra)``, then @ W2 (4, 2)."""
    x = mb.graph.expr.Var("input", mb.ops.types.TensorType((2, 3), "float64"))
    h = Call("matmul", (x, Constant(np.ones((3, 4)), "w1")), Attrs(), "mm1")
    h = Call(op, (h, *extra), Attrs(attrs or {}), "next")
    return Function((x,), Call("matmul", (h, Constant(np.ones((4, 2)), "w2")), Attrs(), "mm2"))


def test_a_softmax_over_the_units_names_the_softmax():
    with pytest.raises(RewriteError, match=r"normalized together by softmax 'next'.*Instead:"):
        coupled_group(_after_matmul("softmax", attrs={"axis": -1}), "mm1")


def test_an_unnamed_constant_spanning_the_units_names_its_op():
    f = _after_matmul("add", Constant(np.ones(4)))
    with pytest.raises(RewriteError, match=r"unnamed constant of add 'next'.*Instead: give"):
        coupled_group(f, "mm1")
    assert coupled_group(_after_matmul("add", Constant(np.ones(4), "b1")), "mm1").params() == [
        "w1", "b1", "w2"]
