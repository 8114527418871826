"""Constant folding refuses a value larger than FOLD_LIMIT_BYTES instead of running out of
memory: ConstantOfShape and Range of 2^33 elements are an UnsupportedModelError."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.graph.passes.fold import FOLD_LIMIT_BYTES


def _model(nodes, inits, out_dtype=TensorProto.FLOAT):
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("y", out_dtype, [])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _constant_of_shape(dims):
    return _model([helper.make_node("ConstantOfShape", ["s"], ["c"],
                                    value=numpy_helper.from_array(np.array([1.0], "float32"))),
                   helper.make_node("ReduceSum", ["c"], ["y"], keepdims=0)],
                  [numpy_helper.from_array(np.array(dims, "int64"), "s")])


def _range(n):
    inits = [numpy_helper.from_array(np.array(v, "int64"), k)
             for k, v in (("a", 0), ("b", n), ("d", 1))]
    return _model([helper.make_node("Range", ["a", "b", "d"], ["r"]),
                   helper.make_node("ReduceMax", ["r"], ["y"], keepdims=0)], inits,
                  TensorProto.INT64)


@pytest.mark.parametrize("model,what", [
    (_constant_of_shape([1 << 17, 1 << 16]), r"constant_of_shape 'c' computes a constant of "
                                             r"type .*\(131072, 65536\).*32.0 GiB"),
    (_constant_of_shape([1 << 33]), r"constant_of_shape .*32.0 GiB"),
    (_range(1 << 33), r"range 'r' computes a constant .*64.0 GiB"),
])
def test_a_huge_folded_constant_is_refused(model, what):
    with pytest.raises(UnsupportedModelError, match=rf"\[MLC-G006\] {what}.*FOLD_LIMIT_BYTES"
                                                    r".*Instead: check the shape"):
        mb.compile(mb.from_onnx(model), opt_level=0)


@pytest.mark.parametrize("model,want", [(_constant_of_shape([1000, 1000]), 1e6),
                                        (_range(100_000), 99_999)])
def test_a_constant_under_the_limit_folds(model, want):
    assert 1000 * 1000 * 4 < FOLD_LIMIT_BYTES
    exe = mb.compile(mb.from_onnx(model), opt_level=0)
    assert exe() == want
