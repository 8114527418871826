import pytest

from mlcbook import ops
from mlcbook.errors import GraphError, OpAttributeError, UnknownOpError
from mlcbook.ops import OpKind, TensorType


def test_every_listed_op_is_registered_with_a_kind_and_a_legalization():
    names = ops.list_ops()
    for name in ("add", "matmul", "gemm", "conv", "max_pool", "avg_pool", "batch_norm",
                 "layer_norm", "softmax", "reshape", "split", "gather", "pad", "sum", "where"):
        assert name in names
    for name in names:
        op = ops.get(name)
        assert isinstance(op.kind, OpKind)
        assert op.legalize is not None, name


def test_fusion_kinds_follow_the_tvm_categories():
    assert ops.get("relu").kind == OpKind.ELEMWISE
    assert ops.get("add").kind == OpKind.BROADCAST
    assert ops.get("transpose").kind == OpKind.INJECTIVE
    assert ops.get("sum").kind == OpKind.REDUCTION
    assert ops.get("matmul").kind == OpKind.OUT_ELEMWISE_FUSABLE


def test_view_ops_are_the_ops_marked_is_view():
    assert ops.view_ops() == ("flatten", "reshape", "squeeze", "unsqueeze")
    assert ops.get("reshape").is_view
    assert not ops.get("transpose").is_view


def test_unknown_op_suggests_close_names():
    with pytest.raises(UnknownOpError, match="did you mean 'relu'"):
        ops.get("rellu")


def test_unknown_attribute_is_named():
    with pytest.raises(OpAttributeError, match="no attribute 'axs'"):
        ops.get("softmax").infer_type([TensorType((2, 3))], {"axs": 1})


def test_missing_required_attribute_is_named():
    with pytest.raises(OpAttributeError, match="needs the attribute 'shape'"):
        ops.get("reshape").infer_type([TensorType((2, 3))], {})


def test_wrong_number_of_inputs():
    with pytest.raises(GraphError, match="takes 2 input"):
        ops.get("add").infer_type([TensorType((2, 3))], {})


def test_registering_a_new_op_and_removing_it():
    import numpy as np
    ops.register("square_test", kind=OpKind.ELEMWISE, infer=lambda t, a: t[0],
                 reference=lambda x: x * x)
    try:
        assert ops.get("square_test").reference(np.array([3.0])) == 9.0
        with pytest.raises(GraphError, match="already registered"):
            ops.register("square_test", kind=OpKind.ELEMWISE, infer=lambda t, a: t[0],
                         reference=lambda x: x)
    finally:
        ops.unregister("square_test")
    with pytest.raises(UnknownOpError):
        ops.get("square_test")


def test_gradient_ops_are_listed_only_on_request():
    assert "relu_grad" not in ops.list_ops()
    assert {"relu_grad", "mul_grad0", "mul_grad1"} <= set(ops.list_ops(gradients=True))
    assert ops.get("relu_grad").gradient_of == "relu"
    assert ops.get("relu").grad_ops == ("relu_grad",)
