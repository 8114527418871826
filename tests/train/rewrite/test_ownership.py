import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import RewriteError
from mlcbook.graph.expr import Call, Constant, Function, Var
from mlcbook.ops.types import Attrs, TensorType
from mlcbook.train.rewrite.ownership import parameters, state_of

from . import _models as M
from . import _onnx_models as O


def test_gemm_weight_roles_are_out_then_in():
    info = parameters(mb.train.mlp((4, 8, 3)))
    assert info["fc1.weight"].owner == "fc1"
    assert info["fc1.weight"].roles == ("out", "in")
    assert info["fc2.bias"].roles == ("out",)


def test_conv_weight_roles_end_in_kernel_axes():
    info = parameters(mb.train.cnn(channels=(2, 3)))
    assert info["conv2.weight"].roles == ("out", "in", "kernel", "kernel")


def test_norm_parameters_are_per_channel_or_feature():
    assert parameters(M.batch_norm_cnn())["bn.var"].roles == ("channel",)
    assert parameters(M.layer_norm())["ln.scale"].roles == ("feature",)


def test_axis_by_role_and_its_error():
    info = parameters(mb.train.mlp((4, 8, 3)))["fc1.weight"]
    assert info.axis("in") == 1
    with pytest.raises(RewriteError, match="no 'channel' axis"):
        info.axis("channel")


def test_state_of_reads_the_step_functions_state_owners():
    step = mb.train.build_step(mb.train.mlp((4, 8, 3), batch=2), "cross_entropy",
                               mb.train.Adam())
    assert state_of(step.function, "fc1.weight") == {
        "m": "fc1.weight.m", "v": "fc1.weight.v", "step": "fc1.weight.step"}


def test_state_of_needs_a_step_function():
    with pytest.raises(RewriteError, match="state_owners"):
        state_of(mb.train.mlp((4, 8, 3)), "fc1.weight")


def test_matmul_weight_roles_follow_its_side():
    assert parameters(O.matmul_mlp())["w1"].roles == ("in", "out")
    left = parameters(O.weight_left())
    assert left["w1"].roles == ("out", "in")
    assert left["b1"].roles == ("out", "broadcast")     # (8, 1) added to (8, batch)
    assert parameters(O.matmul_mlp())["b1"].roles == ("out",)


def test_batched_matmul_weight_has_leading_batch_axes():
    x = Var("input", TensorType((2, 3, 4), "float64"))
    w = Constant(np.ones((2, 4, 5)), "heads.weight")
    f = Function((x,), Call("matmul", (x, w), Attrs(), "heads"))
    assert parameters(f)["heads.weight"].roles == ("batch", "in", "out")


def test_a_weight_without_known_roles_blocks_only_the_rewrite_that_needs_it():
    ids = Var("input", TensorType((2, 3), "int64"))
    table = Constant(np.ones((10, 4)), "embed.table")
    f = Function((ids,), Call("gather", (table, ids), Attrs(axis=0), "embed"))
    info = parameters(f)["embed.table"]
    assert info.roles == ()
    with pytest.raises(RewriteError, match=r"'embed.table' of the gather call 'embed': no "
                                           r"axis roles.*Instead: rewrite a layer"):
        info.axis("out")
