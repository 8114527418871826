"""RNN, GRU and LSTM with the attributes onnx's node suite leaves at their defaults, each
against onnxruntime: the reference (interpreter), the loop IR and native code."""
import numpy as np
import pytest
from onnx import TensorProto, helper

import mlcbook as mb
from mlcbook.errors import OpAttributeError, OpShapeError, UnsupportedModelError
from mlcbook.graph import interpret
from mlcbook.graph.compile import compile as compile_module
from mlcbook.graph.legalize import legalize
from mlcbook.ops import TensorType as T

ort = pytest.importorskip("onnxruntime")


def _model(op, ins, outs, **attrs):
    """A one-node model of ``op``; ``ins``/``outs``: (name, shape, elem type) in order."""
    def vi(name, shape, et=TensorProto.FLOAT):
        return helper.make_tensor_value_info(name, et, shape)
    node = helper.make_node(op, [i[0] for i in ins], [o[0] for o in outs], **attrs)
    graph = helper.make_graph([node], op.lower(), [vi(*i) for i in ins if i[0]],
                              [vi(*o) for o in outs if o[0]])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


def _feed(ins, rng):
    out = {}
    for name, shape, *et in ins:
        if not name:
            continue
        if et and et[0] == TensorProto.INT32:
            # mixed lengths, the longest the whole sequence
            out[name] = np.minimum([3, 1, 2], ins[0][1][0]).astype(np.int32)
        else:
            out[name] = rng.standard_normal(shape).astype(np.float32)
    return out


def _onnxruntime(model, feed):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def _check(model, feed, runner, want):
    mod = mb.from_onnx(model)
    args = [feed[v.name] for v in model.graph.input]
    if runner == "compiled":
        got = compile_module(mod, target="llvm").run(feed)
    else:
        got = interpret(legalize(mod) if runner == "legalized" else mod, *args)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-4, atol=1e-5)


# seq 3, batch 3, input 2, hidden 4
_GRU = ("GRU", [("X", [3, 3, 2]), ("W", [2, 12, 2]), ("R", [2, 12, 4]), ("B", [2, 24]),
                ("", None), ("initial_h", [2, 3, 4])],
        [("Y", [3, 2, 3, 4]), ("Y_h", [2, 3, 4])],
        {"hidden_size": 4, "direction": "bidirectional", "linear_before_reset": 1,
         "clip": 0.8})
_LSTM = ("LSTM", [("X", [3, 3, 2]), ("W", [1, 16, 2]), ("R", [1, 16, 4]), ("B", [1, 32]),
                  ("sequence_lens", [3], TensorProto.INT32), ("initial_h", [1, 3, 4]),
                  ("initial_c", [1, 3, 4]), ("P", [1, 12])],
         [("Y", [3, 1, 3, 4]), ("Y_h", [1, 3, 4]), ("Y_c", [1, 3, 4])],
         {"hidden_size": 4, "direction": "reverse"})
_RNN = ("RNN", [("X", [2, 3, 2]), ("W", [2, 4, 2]), ("R", [2, 4, 4])],
        [("Y", [2, 2, 3, 4]), ("Y_h", [2, 3, 4])],
        {"hidden_size": 4, "direction": "bidirectional",
         "activations": ["Relu", "Softsign"]})
_GRU_RESET_FIRST = ("GRU", [("X", [2, 3, 2]), ("W", [1, 12, 2]), ("R", [1, 12, 4]),
                            ("B", [1, 24]), ("sequence_lens", [3], TensorProto.INT32)],
                    [("Y", [2, 1, 3, 4]), ("Y_h", [1, 3, 4])],
                    {"hidden_size": 4, "activations": ["Softplus", "Tanh"]})
CASES = {"gru-bidirectional-linear-before-reset-clip": _GRU,
         "lstm-reverse-sequence-lens-peepholes": _LSTM,
         "rnn-bidirectional-relu-softsign": _RNN,
         "gru-reset-before-product-sequence-lens": _GRU_RESET_FIRST}


#: compiling unrolls every step into loops (seconds each): one case is compiled here, one
#: per op by the conformance tests
RUNS = [(c, r) for c in CASES for r in ("interpret", "legalized")] + [
    ("gru-reset-before-product-sequence-lens", "compiled")]


@pytest.mark.parametrize("case,runner", RUNS, ids=[f"{c}-{r}" for c, r in RUNS])
def test_recurrent_layer_matches_onnxruntime(case, runner):
    op, ins, outs, attrs = CASES[case]
    model, feed = _model(op, ins, outs, **attrs), _feed(ins, np.random.default_rng(0))
    _check(model, feed, runner, _onnxruntime(model, feed))


@pytest.mark.parametrize("runner", ["interpret", "legalized"])
def test_batch_major_layout_is_the_sequence_major_layer_transposed(runner):
    # onnxruntime has no layout=1: it runs the sequence-major model on the transposed input
    op, ins, outs, attrs = _RNN
    feed = _feed(ins, np.random.default_rng(1))
    y, y_h = _onnxruntime(_model(op, ins, outs, **attrs), feed)
    batch_ins = [("X", [3, 2, 2])] + ins[1:]
    batch_outs = [("Y", [3, 2, 2, 4]), ("Y_h", [3, 2, 4])]
    model = _model(op, batch_ins, batch_outs, **attrs, layout=1)
    feed["X"] = feed["X"].transpose(1, 0, 2).copy()
    _check(model, feed, runner, [y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2)])


def test_activation_with_parameters_is_reported_as_unsupported():
    op, ins, outs, attrs = _RNN
    model = _model(op, ins, outs, **{**attrs, "activations": ["LeakyRelu", "Tanh"]})
    with pytest.raises(UnsupportedModelError, match="LeakyRelu.*without parameters"):
        mb.from_onnx(model)


def test_lstm_input_forget_is_reported_as_unsupported():
    op, ins, outs, attrs = _LSTM
    with pytest.raises(UnsupportedModelError, match="input_forget=1"):
        mb.from_onnx(_model(op, ins, outs, **attrs, input_forget=1))


def test_rnn_op_names_the_input_of_the_wrong_shape():
    types = [T((5, 2, 3)), T((1, 4, 2)), T((1, 4, 4)), T((1, 8)), T((1, 2, 4))]
    with pytest.raises(OpShapeError, match=r"rnn: w .*is \(1, 4, 2\).* must be \(1, 4, 3\)"):
        mb.ops.get("rnn").infer_type(types, {})


def test_gru_op_says_which_activations_it_takes():
    types = [T((5, 2, 3)), T((1, 12, 3)), T((1, 12, 4)), T((1, 24)), T((1, 2, 4))]
    with pytest.raises(OpAttributeError, match="'elu'.*Instead: use sigmoid"):
        mb.ops.get("gru").infer_type(types, {"activations": ("sigmoid", "elu")})
