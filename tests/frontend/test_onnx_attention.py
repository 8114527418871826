"""The converters of Attention, RotaryEmbedding and CausalConvWithState: a model with the
layouts the node suite lacks, checked against onnx's reference evaluator, and the errors
for what a model may not ask."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import mlcbook as mb
from mlcbook.graph import interpret
from mlcbook.errors import OpAttributeError, OpShapeError, UnsupportedModelError

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _model(op, inputs, outputs, opset, **attrs):
    """One ``op`` node; inputs and outputs are (name, elem type, shape), "" skips one."""
    node = helper.make_node(op, [n for n, *_ in inputs], [n for n, *_ in outputs], **attrs)
    info = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs + outputs if n]
    g = helper.make_graph([node], "g", info[:len([i for i in inputs if i[0]])],
                          info[len([i for i in inputs if i[0]]):])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _run_both(model, feeds):
    got = interpret(mb.from_onnx(model), *feeds.values())
    expected = ReferenceEvaluator(model).run(None, feeds)
    return (got if isinstance(got, tuple) else (got,)), expected


def test_3d_grouped_attention_with_cache_and_float_mask_matches_onnx():
    # the node suite's 3-D cache cases have as many query heads as key heads; here 4 over 2
    rng = np.random.default_rng(0)
    feeds = {"q": rng.standard_normal((2, 3, 16)), "k": rng.standard_normal((2, 3, 8)),
             "v": rng.standard_normal((2, 3, 6)), "m": rng.standard_normal((3, 5)),
             "pk": rng.standard_normal((2, 2, 2, 4)), "pv": rng.standard_normal((2, 2, 2, 3))}
    feeds = {k: v.astype(np.float32) for k, v in feeds.items()}
    model = _model("Attention", [(n, F, list(v.shape)) for n, v in feeds.items()],
                   [("y", F, [2, 3, 12]), ("present_k", F, [2, 2, 5, 4]),
                    ("present_v", F, [2, 2, 5, 3]), ("qk", F, [2, 4, 3, 5])], 23,
                   q_num_heads=4, kv_num_heads=2, is_causal=1, qk_matmul_output_mode=2)
    got, expected = _run_both(model, feeds)
    assert len(got) == 4
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)


def test_rotary_embedding_of_3d_input_with_positions_matches_onnx():
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((2, 3, 16)).astype(np.float32),
             "cos": rng.standard_normal((10, 2)).astype(np.float32),
             "sin": rng.standard_normal((10, 2)).astype(np.float32),
             "pos": np.array([[0, 4, 9], [1, 1, 2]], np.int64)}
    model = _model("RotaryEmbedding", [("x", F, [2, 3, 16]), ("cos", F, [10, 2]),
                                       ("sin", F, [10, 2]), ("pos", I64, [2, 3])],
                   [("y", F, [2, 3, 16])], 23, num_heads=2, interleaved=1,
                   rotary_embedding_dim=4)
    (got,), (expected,) = _run_both(model, feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def _attention(q_shape, kv_shape, extra=(), opset=23, y_shape=None, **attrs):
    inputs = [("q", F, q_shape), ("k", F, kv_shape), ("v", F, kv_shape), *extra]
    return _model("Attention", inputs, [("y", F, y_shape or q_shape)], opset, **attrs)


def test_3d_attention_with_head_counts_that_do_not_divide_says_what_to_give():
    with pytest.raises(OpAttributeError, match="q_num_heads=3 does not divide. Instead: give q_num_heads"):
        # (onnx's own shape inference rounds 8 / 3 down and expects 3 heads of 4 values)
        mb.from_onnx(_attention([1, 2, 8], [1, 2, 8], q_num_heads=3, kv_num_heads=2,
                                y_shape=[1, 2, 12]))


def test_4d_attention_with_head_counts_is_refused():
    with pytest.raises(OpAttributeError, match="for 3-D inputs only.*Instead: leave them out"):
        mb.from_onnx(_attention([1, 2, 3, 4], [1, 2, 3, 4], q_num_heads=2, kv_num_heads=2))


def test_past_key_without_past_value_is_refused():
    extra = [("", F, None), ("pk", F, [1, 2, 1, 4])]
    with pytest.raises(OpShapeError, match="past_key and past_value come together.*Instead: give both"):
        mb.from_onnx(_attention([1, 2, 3, 4], [1, 2, 3, 4], extra))


def test_valid_key_counts_with_a_cache_are_refused():
    extra = [("", F, None), ("pk", F, [1, 2, 1, 4]), ("pv", F, [1, 2, 1, 4]), ("n", I64, [1])]
    with pytest.raises(OpShapeError, match="nonpad_kv_seqlen cannot be combined with past_key.*Instead"):
        mb.from_onnx(_attention([1, 2, 3, 4], [1, 2, 3, 4], extra, opset=24))
