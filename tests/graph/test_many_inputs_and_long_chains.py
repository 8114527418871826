"""Ops with more than eight inputs and chains of hundreds of elementwise ops compile at every
opt_level and match onnxruntime; a long chain is split into several fused kernels."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.graph.fusion import MAX_GROUP_OPS, fuse_ops


def _ort(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _variadic(op, n, out_shape, **attrs):
    ins = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [2, 3]) for i in range(n)]
    node = helper.make_node(op, [f"x{i}" for i in range(n)], ["y"], **attrs)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)
    return helper.make_model(helper.make_graph([node], "g", ins, [out]),
                             opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("opt_level", [0, 3])
@pytest.mark.parametrize("op,n,attrs", [("Concat", 9, {"axis": 0}), ("Concat", 20, {"axis": 1}),
                                        ("Sum", 12, {}), ("Max", 9, {}), ("Mean", 11, {})])
def test_an_op_with_more_than_eight_inputs_matches_onnxruntime(op, n, attrs, opt_level):
    out = [2 * n, 3] if attrs.get("axis") == 0 else [2, 3 * n] if op == "Concat" else [2, 3]
    model = _variadic(op, n, out, **attrs)
    rng = np.random.default_rng(n)
    xs = [rng.standard_normal((2, 3)).astype("float32") for _ in range(n)]
    exe = mb.compile(mb.from_onnx(model), opt_level=opt_level)
    want = _ort(model, {f"x{i}": x for i, x in enumerate(xs)})
    np.testing.assert_allclose(exe(*xs), want, rtol=1e-6, atol=1e-6)


def _chain(n: int, seed: int):
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        op = ["Relu", "Neg", "Abs", "Sigmoid", "Add", "Mul", "Tanh"][rng.integers(7)]
        inputs = [prev]
        if op in ("Add", "Mul"):
            inits.append(onnx.numpy_helper.from_array(
                np.full(8, rng.uniform(0.5, 1.0), "float32"), f"c{i}"))
            inputs.append(f"c{i}")
        nodes.append(helper.make_node(op, inputs, [f"t{i}"]))
        prev = f"t{i}"
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4, 8])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("n,opt_level", [(600, 3), (1000, 3), (1000, 0)])
def test_a_long_elementwise_chain_compiles_and_matches_onnxruntime(n, opt_level):
    # at opt_level 3 this was a RecursionError, and compile time grew with the square of n
    model = _chain(n, seed=n)
    x = np.random.default_rng(0).standard_normal((4, 8)).astype("float32")
    exe = mb.compile(mb.from_onnx(model), opt_level=opt_level)
    np.testing.assert_allclose(exe(x), _ort(model, {"x": x}), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [MAX_GROUP_OPS + 1, 3 * MAX_GROUP_OPS])
def test_fusion_splits_a_long_chain_into_groups_of_at_most_max_group_ops(n):
    func = mb.from_onnx(_chain(n, seed=1))["main"]
    plan = fuse_ops(func)
    sizes = [len(g.calls) for g in plan.groups]
    assert max(sizes) <= MAX_GROUP_OPS and sum(sizes) == len(func.calls())
    assert len(plan.groups) >= -(-n // MAX_GROUP_OPS)
    assert any("more than 32 ops" in why for _, _, why in plan.boundaries)
