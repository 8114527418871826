"""linear_attention (ONNX's LinearAttention), declared from its closed-form te compute,
against a numpy oracle that runs the recurrence step by step, interpreted and compiled;
its errors; its ONNX export."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import OpAttributeError, OpDTypeError, OpShapeError
from mlcbook.graph import Function, Var, interpret, op
from mlcbook.ops import TensorType as T
from mlcbook.ops import get, legalize_call

RULES = ("linear", "gated", "delta", "gated_delta")


def oracle(q, k, v, state=None, decay=None, beta=None, *, hq, hkv, rule, scale=0.0):
    """The recurrence of ONNX's definition, one step and one head at a time, in float64."""
    b, steps = q.shape[:2]
    dk, dv = q.shape[2] // hq, v.shape[2] // hkv
    scale = scale or 1 / np.sqrt(dk)
    heads = lambda x, n: x.astype(np.float64).reshape(b, steps, n, -1)  # noqa: E731
    q, k, v = heads(q, hq), heads(k, hkv), heads(v, hkv)
    g = None if decay is None else heads(decay, hkv)
    w = None if beta is None else heads(beta, beta.shape[2])
    s = np.zeros((b, hkv, dk, dv)) if state is None else state.astype(np.float64).copy()
    out = np.zeros((b, steps, hq, dv))
    for i in range(b):
        for t in range(steps):
            for h in range(hkv):
                S = s[i, h]
                if g is not None:
                    S = np.exp(g[i, t, h])[:, None] * S   # one decay per key row (or per head)
                new = v[i, t, h]
                if w is not None:
                    rate = w[i, t, h if w.shape[2] > 1 else 0, 0]
                    new = rate * (new - S.T @ k[i, t, h])
                s[i, h] = S + np.outer(k[i, t, h], new)
            for h in range(hq):
                out[i, t, h] = scale * q[i, t, h] @ s[i, h // (hq // hkv)]
    return out.reshape(b, steps, hq * dv), s


def make(rule, steps=5, hq=4, hkv=2, past=True, per_head=False, dtype="float32", seed=0):
    """Inputs of a call (the ones it takes, in order) and the oracle's keyword arguments."""
    rng = np.random.default_rng(seed)
    b, dk, dv = 2, 8, 6
    k = rng.standard_normal((b, steps, hkv, dk))
    k /= np.linalg.norm(k, axis=-1, keepdims=True)      # the delta rule is stable so
    ins = {"q": rng.standard_normal((b, steps, hq * dk)), "k": k.reshape(b, steps, -1),
           "v": rng.standard_normal((b, steps, hkv * dv))}
    if past:
        ins["state"] = rng.standard_normal((b, hkv, dk, dv))
    if rule in ("gated", "gated_delta"):
        ins["decay"] = -0.3 * np.abs(rng.standard_normal((b, steps, hkv * (1 if per_head else dk))))
    if rule in ("delta", "gated_delta"):
        ins["beta"] = rng.random((b, steps, hkv if per_head else 1))
    return {n: a.astype(dtype) for n, a in ins.items()}


def _graph(ins, **attrs):
    vs = [Var(n, T(a.shape, str(a.dtype))) for n, a in ins.items()]
    return Function(vs, op.linear_attention(*vs, **attrs))


def _want(ins, hq, hkv, rule, **extra):
    return oracle(ins["q"], ins["k"], ins["v"], ins.get("state"), ins.get("decay"),
                  ins.get("beta"), hq=hq, hkv=hkv, rule=rule, **extra)


CASES = [(rule, *shape) for rule in RULES
         for shape in ((4, 4, False, False), (4, 2, True, True), (8, 1, True, False))]


@pytest.mark.parametrize("rule,hq,hkv,past,per_head", CASES)
@pytest.mark.parametrize("steps", [1, 5, 9])
def test_interpreter_matches_the_stepwise_oracle(rule, hq, hkv, past, per_head, steps):
    ins = make(rule, steps, hq, hkv, past, per_head)
    got = interpret(_graph(ins, q_num_heads=hq, kv_num_heads=hkv, update_rule=rule),
                    *ins.values())
    for g, w in zip(got, _want(ins, hq, hkv, rule)):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("rule", RULES)
def test_compiled_kernel_matches_the_stepwise_oracle(rule):
    ins = make(rule, steps=6, hq=4, hkv=2, past=True, per_head=rule == "gated_delta")
    f = _graph(ins, q_num_heads=4, kv_num_heads=2, update_rule=rule, scale=0.25)
    got = mb.compile(f)(*ins.values())
    for g, w in zip(got, _want(ins, 4, 2, rule, scale=0.25)):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_float16_is_computed_in_float32_and_stored_in_float16():
    ins = make("gated_delta", steps=4, hq=4, hkv=4, past=False, dtype="float16")
    f = _graph(ins, q_num_heads=4, kv_num_heads=4)
    want = _want(ins, 4, 4, "gated_delta")
    for got in (interpret(f, *ins.values()), mb.compile(f)(*ins.values())):
        for g, w in zip(got, want):
            assert g.dtype == np.float16
            np.testing.assert_allclose(g.astype(np.float64), w, rtol=2e-3, atol=2e-3)


def test_present_state_keeps_the_past_states_dtype():
    ins = make("gated", steps=3, dtype="float16")
    ins["state"] = ins["state"].astype("float32")
    y, state = interpret(_graph(ins, q_num_heads=4, kv_num_heads=2, update_rule="gated"),
                         *ins.values())
    assert (y.dtype, state.dtype) == (np.float16, np.float32)


def test_stages_grow_with_the_log_of_the_steps_not_the_steps():
    def blocks(steps):
        types = [T((1, steps, 8))] * 3 + [T((1, 1, 8, 8)), T((1, steps, 8)), T((1, steps, 1))]
        return str(legalize_call("linear_attention", types, {"q_num_heads": 1,
                                                             "kv_num_heads": 1})).count("block(")
    assert blocks(256) - blocks(16) == 2 * 4       # 4 more doublings of two stages each


def _types(ins):
    return [T(a.shape, str(a.dtype)) for a in ins.values()]


def test_refuses_query_heads_not_a_multiple_of_kv_heads():
    ins = make("linear", hq=4, hkv=2, past=False)
    with pytest.raises(OpAttributeError, match="linear_attention: q_num_heads=4 is not a "
                       "multiple of kv_num_heads=3; Instead"):
        get("linear_attention").infer_type(_types(ins), {"q_num_heads": 4, "kv_num_heads": 3,
                                                         "update_rule": "linear"})


def test_refuses_a_key_whose_heads_do_not_match_the_query():
    ins = make("linear", hq=4, hkv=2, past=False)
    ins["k"] = ins["k"][:, :, :12]
    with pytest.raises(OpShapeError, match=r"key has shape \(2, 5, 12\); its last axis must "
                       r"be kv_num_heads \* d_k = 16 .*Instead: give keys of the queries'"):
        get("linear_attention").infer_type(_types(ins), {"q_num_heads": 4, "kv_num_heads": 2,
                                                         "update_rule": "linear"})


def test_refuses_a_gated_rule_without_decay():
    ins = make("linear", past=False)
    with pytest.raises(OpShapeError, match="update_rule='gated' needs decay input; Instead"):
        get("linear_attention").infer_type(_types(ins), {"q_num_heads": 4, "kv_num_heads": 2,
                                                         "update_rule": "gated"})


def test_refuses_inputs_the_rule_does_not_take():
    ins = make("gated_delta")
    with pytest.raises(OpAttributeError, match="6 inputs given; update_rule='linear' takes at "
                       "most 4 .*Instead: leave out the others"):
        get("linear_attention").infer_type(_types(ins), {"q_num_heads": 4, "kv_num_heads": 2,
                                                         "update_rule": "linear"})


def test_refuses_a_past_state_of_the_wrong_shape_and_a_bad_decay():
    ins = make("gated")
    ins["state"] = ins["state"][:, :, :4]
    attrs = {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": "gated"}
    with pytest.raises(OpShapeError, match=r"past_state is \(2, 2, 4, 6\) float32; Instead: "
                       r"give \(2, 2, 8, 6\)"):
        get("linear_attention").infer_type(_types(ins), attrs)
    ins = make("gated", past=False)
    ins["decay"] = ins["decay"][:, :, :3]
    with pytest.raises(OpShapeError, match=r"decay has shape \(2, 5, 3\); Instead: give "
                       r"\(2, 5, n\) with n one of \(16, 2\)"):
        get("linear_attention").infer_type(_types(ins), attrs)


def test_refuses_an_unknown_rule_mixed_dtypes_and_a_bad_chunk_size():
    ins = make("linear", past=False)
    attrs = {"q_num_heads": 4, "kv_num_heads": 2}
    la = get("linear_attention")
    with pytest.raises(OpAttributeError, match="update_rule='mamba' is not one of linear"):
        la.infer_type(_types(ins), {**attrs, "update_rule": "mamba"})
    with pytest.raises(OpAttributeError, match="chunk_size=0; Instead: give a positive int"):
        la.infer_type(_types(ins), {**attrs, "update_rule": "linear", "chunk_size": 0})
    ins["v"] = ins["v"].astype("float16")
    with pytest.raises(OpDTypeError, match="value is float16; query, key and value must share"):
        la.infer_type(_types(ins), {**attrs, "update_rule": "linear"})


def test_exports_one_linear_attention_node_at_opset_27():
    ins = make("gated", past=False, per_head=True)
    f = _graph(ins, q_num_heads=4, kv_num_heads=2, update_rule="gated")
    model = mb.to_onnx(f)
    (node,) = model.graph.node
    assert node.op_type == "LinearAttention" and list(node.input) == ["q", "k", "v", "", "decay"]
    assert [o.version for o in model.opset_import if o.domain == ""] == [27]
    want = interpret(f, *ins.values())
    for g, w in zip(interpret(mb.from_onnx(model), *ins.values()), want):
        np.testing.assert_array_equal(g, w)
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString())
    for g, w in zip(session.run(None, ins), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
