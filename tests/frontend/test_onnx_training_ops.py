"""The optimizers of ai.onnx.preview.training, compiled, against onnx's reference evaluator
at the first step (T = 0, treated apart) and a later one, for two tensors at once."""
import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError

DOMAIN = "ai.onnx.preview.training"
STATES = {"Adagrad": ("G", "H"), "Adam": ("G", "V", "H"), "Momentum": ("G", "V")}
ATTRS = {"Adagrad": dict(decay_factor=0.1, epsilon=1e-5, norm_coefficient=0.01),
         "Adam": dict(alpha=0.9, beta=0.8, epsilon=1e-3, norm_coefficient=0.01,
                      norm_coefficient_post=0.02),
         "Momentum": dict(alpha=0.9, beta=0.5, mode="nesterov", norm_coefficient=0.01)}


def _model(op, attrs):
    names = ["X1", "X2"] + [f"{s}{k}" for s in STATES[op] for k in (1, 2)]
    outs = [f"{n}_new" for n in ["X1", "X2"] + [f"{s}{k}" for s in STATES[op][1:]
                                                for k in (1, 2)]]
    node = helper.make_node(op, ["R", "T"] + names, outs, domain=DOMAIN, **attrs)
    shapes = {"1": [3], "2": [2, 2]}
    inputs = [helper.make_tensor_value_info("R", TensorProto.FLOAT, []),
              helper.make_tensor_value_info("T", TensorProto.INT64, [])]
    inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n[-1]]) for n in names]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n.split("_")[0][-1]])
               for n in outs]
    g = helper.make_graph([node], "g", inputs, outputs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid(DOMAIN, 1)])


@pytest.mark.parametrize("op", sorted(STATES))
@pytest.mark.parametrize("step", [0, 3])
def test_optimizer_step_matches_onnx_reference(op, step):
    model = _model(op, ATTRS[op])
    rng = np.random.default_rng(step)
    feed = {"R": np.array(0.1, np.float32), "T": np.array(step, np.int64)}
    for inp in model.graph.input[2:]:
        shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
        feed[inp.name] = np.abs(rng.standard_normal(shape)).astype(np.float32)
    want = ReferenceEvaluator(model).run(None, feed)
    got = mb.compile(mb.from_onnx(model)).run(feed)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_momentum_refuses_an_unknown_mode():
    with pytest.raises(UnsupportedModelError, match="mode='heavy' is not 'standard' or "
                       "'nesterov'"):
        mb.from_onnx(_model("Momentum", dict(ATTRS["Momentum"], mode="heavy")))
