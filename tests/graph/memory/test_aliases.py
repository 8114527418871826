"""Outputs declared to update inputs (with_output_aliases): written into the input's array,
the kernels ordered so that reads of the old value come first."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import GraphError
from mlcbook.graph import Constant, Function, Tuple, Var, op
from mlcbook.graph.memory.aliases import alias_outputs, declared_aliases, with_output_aliases
from mlcbook.graph.memory.plan import make_plan
from mlcbook.ops.types import TensorType


def _late_reader():
    w = Var("w", TensorType((4,)))
    first = op.mul(w, Constant(np.float32(2)))
    new_w = op.sub(w, Constant(np.float32(1)))
    late = op.sum(op.mul(w, w), keepdims=0)          # planned after new_w's kernel
    return Function((w,), Tuple([first, new_w, late]))


def test_the_declaration_is_an_attr_of_the_function():
    f = with_output_aliases(_late_reader(), {1: "w"})
    assert declared_aliases(f) == {1: "w"} and declared_aliases(_late_reader()) == {}


@pytest.mark.parametrize("opt_level", [1, 3])
def test_a_late_reader_of_the_old_value_runs_before_the_writer(opt_level):
    f = _late_reader()
    # opt_level 1: one kernel per op, so the steps can be found by the op's name
    plain = [k for k, _ in mb.compile(f, opt_level=1).plan.steps]
    assert plain.index("sub") < plain.index("sum")
    exe = mb.compile(with_output_aliases(f, {1: "w"}), opt_level=opt_level)
    value = np.arange(4, dtype=np.float32)
    doubled, squares = exe(value)
    np.testing.assert_array_equal(value, np.arange(4) - 1)          # updated in place
    np.testing.assert_array_equal(doubled, np.arange(4) * 2)
    assert squares == np.sum(np.arange(4) ** 2)                      # read the old value


def test_the_arena_is_planned_after_the_steps_are_reordered():
    exe = mb.compile(with_output_aliases(_late_reader(), {1: "w"}))
    names = [k for k, _ in exe.plan.steps]
    assert names.index("fused_mul_sum") < names.index("sub") and exe.plan.offsets
    steps = [name for name, _ in exe.stats["passes"]]
    assert steps.index("alias_outputs") < steps.index("plan_memory")


def test_the_aliased_output_is_a_view_of_the_input():
    plan, _ = make_plan(mb.graph.legalize(_late_reader())["main"])
    out = plan.outputs[1]
    new = alias_outputs(plan, {1: "w"})
    assert new.slots[out].kind == "view" and new.slots[new.slots[out].ref].kind == "input"
    assert len(new.outputs) == 2 and out not in new.outputs


def test_an_output_that_is_not_computed_cannot_alias():
    w = Var("w", TensorType((2,)))
    with pytest.raises(GraphError, match="output 1 cannot update input 'w' in place.*Instead"):
        mb.compile(with_output_aliases(Function((w,), Tuple([op.relu(w), w])), {1: "w"}))


def test_an_alias_of_another_shape_is_refused():
    w = Var("w", TensorType((2,)))
    f = Function((w,), Tuple([op.relu(w), op.sum(w, keepdims=1)]))
    with pytest.raises(GraphError, match=r"output 1 \(1,\) float32 cannot update input 'w'"):
        mb.compile(with_output_aliases(f, {1: "w"}))


def test_an_alias_of_an_unknown_input_is_named():
    with pytest.raises(GraphError, match="input 'v', which is not an input.*inputs: w"):
        mb.compile(with_output_aliases(_late_reader(), {1: "v"}))


def test_an_alias_of_a_missing_output_is_named():
    with pytest.raises(GraphError, match="output 7 is declared.*has 3 outputs"):
        mb.compile(with_output_aliases(_late_reader(), {7: "w"}))


def test_an_old_value_needed_after_the_new_one_is_refused():
    # b reads the new a and the old one: no order of the two kernels works
    a = Var("a", TensorType((4,)))
    new_a = op.add(a, Constant(np.float32(1)))
    b = op.mul(new_a, a)
    f = Function((a,), Tuple([b, new_a]))
    with pytest.raises(GraphError, match="cannot update their inputs in place.*Instead"):
        mb.compile(with_output_aliases(f, {1: "a"}), opt_level=1)
