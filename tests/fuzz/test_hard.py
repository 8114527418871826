"""The fuzzer makes the shapes of model that found round two's hard cases: each generator
makes what it says, on several seeds, and onnxruntime runs every model it makes."""

import numpy as np
import onnx
import pytest

from mlcbook.frontend.onnx_ops import CONVERTERS
from mlcbook.fuzz import hard
from mlcbook.fuzz.check import run_onnxruntime
from mlcbook.fuzz.generate import Case, _Builder, random_model

SEEDS = range(6)


def _build(generator, seed, shape=(2, 3, 5, 4)):
    b = _Builder(np.random.default_rng(seed), frozenset(CONVERTERS))
    b.add_input(shape)
    out = generator(b)
    assert out is not None
    from onnx import helper
    outs = [b.values[-1]] + [v for v in b.values if v.name in b.keep_outputs]
    graph = helper.make_graph(b.nodes, "t", b.input_infos,
                              [helper.make_tensor_value_info(v.name, hard._onnx_type(v.dtype),
                                                             v.shape) for v in outs],
                              initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    case = Case(model, b.inputs, [n.op_type for n in b.nodes])
    got = run_onnxruntime(case)
    for v, array in zip(outs, got):
        assert array.shape == v.shape          # the generator's shapes are onnxruntime's
    return case


@pytest.mark.parametrize("seed", SEEDS)
def test_nested_concats_feed_a_concat_into_a_concat(seed):
    case = _build(hard.nested_concat, seed)
    produced = {n.output[0]: n.op_type for n in case.model.graph.node}
    assert any(n.op_type == "Concat" and any(produced.get(i) == "Concat" for i in n.input)
               for n in case.model.graph.node)


def test_some_nested_concats_are_also_model_outputs():
    kept = [_build(hard.nested_concat, s).model.graph for s in range(20)]
    assert any(len(g.output) > 1 or any(o.name in {i for n in g.node for i in n.input}
                                        for o in g.output) for g in kept)


@pytest.mark.parametrize("seed", SEEDS)
def test_wide_pad_convs_pad_more_than_the_kernel(seed):
    case = _build(hard.wide_pad_conv, seed)
    node = case.model.graph.node[-1]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "Conv":
        assert all(p >= k for p, k in zip(attrs["pads"], attrs["kernel_shape"] * 2))
    else:
        assert case.ops[-2:] == ["Pad", "AveragePool"]


@pytest.mark.parametrize("seed", SEEDS)
def test_many_input_ops_take_nine_or_more(seed):
    case = _build(hard.many_inputs, seed)
    assert len(case.model.graph.node[-1].input) >= 9


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_long_chains_are_longer_than_one_fused_kernel(seed):
    from mlcbook.graph.fusion import MAX_GROUP_OPS
    assert len(_build(hard.long_chain, seed).ops) > MAX_GROUP_OPS


def test_integer_ops_cover_every_integer_dtype_and_many_ops():
    dtypes, ops = set(), set()
    for seed in range(60):
        case = _build(hard.integer_elementwise, seed)
        casts = [n for n in case.model.graph.node if n.op_type == "Cast"]
        dtypes.add(onnx.helper.tensor_dtype_to_np_dtype(casts[0].attribute[0].i).name)
        ops.update(case.ops)
    assert dtypes == set(hard.INT_DTYPES)
    assert {"Div", "Mod", "BitShift", "BitwiseAnd", "Sign", "Abs", "PRelu", "Shrink",
            "GreaterOrEqual", "LessOrEqual"} <= ops


@pytest.mark.parametrize("seed", range(12))
def test_old_opset_models_run_in_onnxruntime_at_their_opset(seed):
    model, inputs, ops = hard.old_opset_model(np.random.default_rng(seed))
    onnx.checker.check_model(model, full_check=True)
    assert model.opset_import[0].version <= 12
    run_onnxruntime(Case(model, inputs, ops))


def test_old_opset_models_cover_the_ops_whose_meaning_changed():
    kinds = {hard.old_opset_model(np.random.default_rng(s))[2][-1] for s in range(60)}
    assert kinds == {"Hardmax", "Softmax", "LogSoftmax", "Resize", "Upsample", "Clip"}


def test_random_models_include_old_opset_models():
    cases = [random_model(np.random.default_rng([5, i]), old=0.5) for i in range(10)]
    assert {c.model.opset_import[0].version for c in cases} - {18}


def _unrunnable(rng, **kw):
    """A model onnxruntime refuses: BitShift on int32 has no kernel there."""
    from onnx import helper
    node = helper.make_node("BitShift", ["x0", "x0"], ["y"], direction="LEFT")
    info = [helper.make_tensor_value_info(n, hard._onnx_type("int32"), [2]) for n in ("x0", "y")]
    model = helper.make_model(helper.make_graph([node], "g", info[:1], info[1:]),
                              opset_imports=[helper.make_opsetid("", 18)])
    return Case(model, {"x0": np.ones(2, "int32")}, ["BitShift"])


@pytest.mark.parametrize("models", [1, 3])
def test_a_model_onnxruntime_refuses_is_counted_not_fatal(monkeypatch, models):
    import mlcbook.fuzz as fuzz_module
    monkeypatch.setattr(fuzz_module, "random_model", _unrunnable)
    report = fuzz_module.fuzz(models=models, seed=0)
    assert report.models == 0 and report.failures == []
    assert [i for i, _ in report.rejected] == list(range(models))
    assert "onnxruntime refused it (not counted)" in report.summary()
