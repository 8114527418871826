"""Opsets before 13 are converted with onnx.version_converter; newer-than-known opsets and
models the converter cannot convert are refused with the fix."""
import logging

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mlcbook as mb
from mlcbook.errors import UnsupportedModelError
from mlcbook.graph import interpret

from .test_onnx_import import make, vi


def _old_mlp(opset, ir_version):
    """Gemm -> Dropout -> Unsqueeze(axes attribute, opset < 13) with the initializers listed
    as graph inputs, as IR version 3 requires."""
    rng = np.random.default_rng(0)
    w, b = rng.standard_normal((3, 4)).astype("float32"), rng.standard_normal(3).astype("float32")
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], transB=1),
             # ratio is an attribute before opset 12, an input from 12 on
             helper.make_node("Dropout", ["h"], ["d"], **({"ratio": 0.5} if opset < 12 else {})),
             helper.make_node("Unsqueeze", ["d"], ["y"], axes=[0])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    inputs = [vi("x", [2, 4]), vi("w", [3, 4]), vi("b", [3])]
    g = helper.make_graph(nodes, "g", inputs, [vi("y", [1, 2, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = ir_version
    return m, w, b


@pytest.mark.parametrize("opset", [6, 7, 9, 11, 12])
def test_old_opsets_are_converted_with_a_log_line(opset, caplog):
    model, w, b = _old_mlp(opset, ir_version=3)
    x = np.ones((2, 4), "float32")
    with caplog.at_level(logging.INFO, logger="mlcbook.frontend.onnx"):
        mod = mb.from_onnx(model)
    assert f"opset {opset}: converting it to opset 13" in caplog.text
    assert [p.name for p in mod["main"].params] == ["x"]   # w and b are weights, not inputs
    np.testing.assert_allclose(interpret(mod, x=x), (x @ w.T + b)[None], rtol=1e-6)


def test_current_opsets_import_without_a_log_line(caplog):
    model = make([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2])], [vi("y", [2])],
                 opset=onnx.defs.onnx_opset_version())
    with caplog.at_level(logging.INFO, logger="mlcbook.frontend.onnx"):
        mb.from_onnx(model)
    assert caplog.text == ""


def test_a_model_the_converter_cannot_convert_is_refused_with_the_fix(monkeypatch):
    from onnx import version_converter

    def fail(model, version):
        raise RuntimeError("No Adapter For Foo")
    monkeypatch.setattr(version_converter, "convert_version", fail)
    model, _, _ = _old_mlp(9, ir_version=3)
    with pytest.raises(UnsupportedModelError,
                       match="from opset 9 to 13: No Adapter For Foo. Instead: re-export"):
        mb.from_onnx(model)


def test_big_weights_survive_the_conversion_and_stay_weights():
    # weights of 4096 elements and more skip the converter (it copies the model twice);
    # IR 7 does not list initializers as inputs, so the import must not leave them as inputs
    w = np.random.default_rng(0).standard_normal((64, 64)).astype("float32")
    node = helper.make_node("MatMul", ["x", "w"], ["y"])
    model = make([node], [vi("x", [1, 64])], [vi("y", [1, 64])],
                 [numpy_helper.from_array(w, "w")], opset=9)
    model.ir_version = 7
    mod = mb.from_onnx(model)
    assert [p.name for p in mod["main"].params] == ["x"]
    assert list(mod["main"].weights) == ["w"]
    x = np.ones((1, 64), "float32")
    np.testing.assert_allclose(interpret(mod, x=x), x @ w, rtol=1e-5)
    assert [i.name for i in model.graph.initializer] == ["w"]   # the caller's model is untouched
