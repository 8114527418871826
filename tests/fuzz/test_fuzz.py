"""The differential fuzzer: a fixed-seed batch agrees with onnxruntime at every opt level;
a wrong kernel is caught, shrunk to the op that computes it, and saved as a repro."""
import numpy as np
import onnx
import pytest

from mlcbook import ops
from mlcbook.fuzz import fuzz
from mlcbook.fuzz.check import check, run_onnxruntime, save, shrink
from mlcbook.fuzz.generate import Case, random_model
from mlcbook.te import ops as T

BATCH = 50


def test_fixed_seed_batch_matches_onnxruntime():
    report = fuzz(models=BATCH, seed=2026, large=0.0)
    assert report.models == BATCH
    assert report.failures == [], report.summary()


def test_long_reduction_models_are_generated():
    cases = [random_model(np.random.default_rng([24, i]), large=1.0) for i in range(5)]
    kinds = {tuple(c.ops) for c in cases}
    assert kinds == {("ReduceMean",), ("LayerNormalization",), ("MeanVarianceNormalization",)}
    assert all(c.inputs["x0"].size >= 1 << 16 for c in cases)
    # both along rows (the last axis longest) and down columns (the first)
    assert {np.argmax(c.inputs["x0"].shape) for c in cases} == {0, 1}


def test_generated_models_pass_the_onnx_checker():
    for i in range(20):
        onnx.checker.check_model(random_model(np.random.default_rng([3, i])).model,
                                 full_check=True)


@pytest.fixture
def broken_sin():
    """sin legalized as tanh: a wrong kernel the fuzzer must find."""
    op = ops.get("sin")
    right = op.legalize
    ops.register_legalization("sin")(lambda ins, attrs, out_type: T.tanh(ins[0], name="sin"))
    yield
    ops.register_legalization("sin")(right)


def _chain_with_sin():
    from onnx import helper, TensorProto as TP
    nodes = [helper.make_node("Relu", ["x0"], ["a"]), helper.make_node("Sin", ["a"], ["b"]),
             helper.make_node("Tanh", ["b"], ["c"]), helper.make_node("Add", ["c", "x0"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x0", TP.FLOAT, [3, 4])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [3, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    x = np.random.default_rng(0).uniform(0.5, 2, (3, 4)).astype(np.float32)
    return Case(model, {"x0": x}, [n.op_type for n in nodes])


def test_a_wrong_kernel_is_a_mismatch(broken_sin):
    failure = check(_chain_with_sin())
    assert failure is not None and failure.kind == "mismatch" and failure.opt_level == 0


def test_a_failure_shrinks_to_the_wrong_op_and_saves_a_repro(broken_sin, tmp_path):
    case = _chain_with_sin()
    small = shrink(case, check(case))
    assert small.ops == ["Sin"]
    base = save(small, check(small), str(tmp_path), "sin")
    again = Case(onnx.load(base + ".onnx"), dict(np.load(base + ".npz")))
    assert check(again).kind == "mismatch"
    assert "Reproduce" in open(base + ".md").read()


def test_correct_kernels_pass_the_same_chain():
    assert check(_chain_with_sin()) is None


def test_onnxruntime_mvn_of_equal_values_is_nan_so_the_generator_avoids_them():
    # ONNX's function body gives 0 here (tests/frontend/test_onnx_tensor_ops.py); when this
    # fails onnxruntime agrees, and _norm in mlcbook/fuzz/generate.py may feed MVN any value
    from onnx import helper, TensorProto as TP
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TP.FLOAT, [1, 3])],
                              [helper.make_tensor_value_info("y", TP.FLOAT, [1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    case = Case(model, {"x": np.zeros((1, 3), np.float32)}, ["MeanVarianceNormalization"])
    assert np.isnan(run_onnxruntime(case)[0]).all()
