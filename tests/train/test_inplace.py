"""update_in_place: outputs written over inputs, kernels reordered so reads come first."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import TrainingError
from mlcbook.graph import Constant, Function, Tuple, Var, op
from mlcbook.ops.types import TensorType
from mlcbook.train.inplace import update_in_place


def test_a_late_reader_of_the_old_value_moves_before_the_writer():
    w = Var("w", TensorType((4,)))
    first = op.mul(w, Constant(np.float32(2)))
    new_w = op.sub(w, Constant(np.float32(1)))
    late = op.sum(op.mul(w, w), keepdims=0)          # planned after new_w's kernel
    # opt_level 1: one kernel per op, so the steps can be found by the op's name
    exe = mb.compile(Function((w,), Tuple([first, new_w, late])), opt_level=1)
    steps = [k for k, _ in exe.plan.steps]
    assert steps.index("sub") < steps.index("sum")
    exe = update_in_place(exe, {1: "w"}, keep_outputs=(0, 2))
    value = np.arange(4, dtype=np.float32)
    doubled, squares = exe(value)
    np.testing.assert_array_equal(value, np.arange(4) - 1)          # updated in place
    np.testing.assert_array_equal(doubled, np.arange(4) * 2)
    assert squares == np.sum(np.arange(4) ** 2)                      # read the old value


def test_an_output_that_is_not_computed_cannot_alias():
    w = Var("w", TensorType((2,)))
    exe = mb.compile(Function((w,), Tuple([op.relu(w), w])))
    with pytest.raises(TrainingError, match="in place"):
        update_in_place(exe, {1: "w"})


def test_an_update_that_is_not_elementwise_is_refused():
    class Transposing(mb.train.SGD):
        def update(self, p, g, state, lr):
            return op.transpose(op.transpose(op.sub(p, op.mul(lr, g)))), {}
    with pytest.raises(TrainingError, match="elementwise"):
        mb.train.build_step(mb.train.mlp((4, 3), batch=2), "cross_entropy",
                            Transposing(lr=0.1))
