"""legalize_fused: one call_tir a fusion group, carrying what the memory planner may do with
it (call_facts)."""

import mlcbook as mb
from mlcbook.graph import CallTIR, Function, TensorType, Var, fuse_ops, op
from mlcbook.graph.expr import rebuild
from mlcbook.graph.fused_kernels import legalize_fused
from mlcbook.ops.types import Attrs


def _main_call(body_of):
    x, y = Var("x", TensorType((1, 4, 8))), Var("y", TensorType((1, 4, 8)))
    f = Function([x, y], body_of(x, y))
    call = legalize_fused(f, fuse_ops(f))["main"].body
    assert isinstance(call, CallTIR)
    return call


def test_an_elementwise_group_may_run_in_place():
    call = _main_call(lambda x, y: op.relu(op.add(op.exp(x), y)))
    assert call.func.startswith("fused_") and call.attrs == Attrs(inplace=1)


def test_a_group_with_a_reduction_may_not():
    assert "inplace" not in _main_call(lambda x, y: op.softmax(op.exp(x), axis=2)).attrs


def test_a_concat_of_distinct_values_carries_its_axis():
    assert _main_call(lambda x, y: op.concat(x, y, axis=1)).attrs == Attrs(concat_axis=1)


def test_a_concat_of_one_value_twice_does_not():
    assert "concat_axis" not in _main_call(lambda x, y: op.concat(x, x, axis=1)).attrs


def test_the_facts_survive_a_rewrite_and_a_rename():
    call = _main_call(lambda x, y: op.relu(x))
    z = Var("z", TensorType((1, 4, 8)))
    assert rebuild(call, (z,)).attrs == Attrs(inplace=1)
    assert mb.graph.Builder().emit(call, name="renamed").attrs == Attrs(inplace=1)
