"""docs/adding_an_op.md, run: its declaration of QuickGelu gives a compiled kernel, ONNX
import and export (checked with onnxruntime, which has the op) and a gradient."""
import re
from pathlib import Path

import numpy as np
import pytest

from mlcbook import ops
from mlcbook.graph import interpret
from mlcbook.train.gradcheck import max_gradient_error

PAGE = Path(__file__).resolve().parents[2] / "docs" / "adding_an_op.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


@pytest.fixture
def page():
    """The namespace of the page's two code blocks; the op they declare is removed after."""
    namespace: dict = {}
    try:
        for block in BLOCKS:
            exec(compile(block, str(PAGE), "exec"), namespace)
        yield namespace
    finally:
        ops.unregister("quick_gelu")
        ops.unregister("quick_gelu_grad")


def _quick_gelu(x, alpha=1.702):
    return x / (1 + np.exp(-alpha * x.astype(np.float64)))


def test_the_page_has_the_declaration_and_its_use():
    assert len(BLOCKS) == 2 and "declare.unary(" in BLOCKS[0]


def test_the_declared_op_computes_its_formula(page):
    x = np.random.default_rng(0).standard_normal((2, 8)).astype("float32")
    np.testing.assert_allclose(page["exe"](x), _quick_gelu(x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(interpret(page["f"], x), _quick_gelu(x), rtol=1e-6, atol=1e-7)


def test_it_exports_and_imports_as_onnxruntimes_quick_gelu(page):
    ort = pytest.importorskip("onnxruntime")
    model = page["model"]
    assert [(n.domain, n.op_type) for n in model.graph.node] == [("com.microsoft", "QuickGelu")]
    x = np.random.default_rng(1).standard_normal((2, 8)).astype("float32")
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(page["mb"].compile(page["back"])(x), want, rtol=1e-5, atol=1e-6)


def test_its_derivative_matches_finite_differences(page):
    from mlcbook.graph import Function, Var, op
    from mlcbook.ops import TensorType
    x = Var("x", TensorType((3, 4), "float64"))
    f = Function([x], op.sum(op.mul(op.quick_gelu(x, alpha=1.3), op.quick_gelu(x)), keepdims=0))
    arrays = {"x": np.random.default_rng(2).standard_normal((3, 4))}
    assert max_gradient_error(f, arrays, ["x"], 1e-6) < 1e-6
    assert "quick_gelu_grad" in str(page["step"])


def test_another_dtype_is_refused_naming_the_op(page):
    from mlcbook.errors import OpDTypeError
    from mlcbook.graph import Var, op
    from mlcbook.ops import TensorType
    with pytest.raises(OpDTypeError, match="quick_gelu: the input has dtype int8"):
        op.quick_gelu(Var("x", TensorType((3,), "int8")))
