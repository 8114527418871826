"""An op declared with ``onnx_attrs`` imports and exports with its ONNX attributes mapped:
renamed, dtypes as element type numbers, ONNX-only ones derived from, mlcbook-only ones left
out or refused, their values checked."""
import numpy as np
import pytest

import mlcbook as mb
from mlcbook import ops
from mlcbook.errors import UnsupportedModelError
from mlcbook.graph import Function, Var, interpret, op
from mlcbook.ops import OpKind, TensorType, declare
from mlcbook.te.ops.util import axis_names, compute_named, load, store

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

DOMAIN = "test.mlcbook"


def _scale(x, *, factor, bias, dtype, mode, name):
    return compute_named(x.shape, axis_names(x.ndim),
                         lambda *i: store(load(x, i) * factor + bias, dtype), name)


def _auto_bias(attrs, types, used):
    """ONNX's auto_bias=1 says: bias = the length of the last axis."""
    return {"bias": float(types[0].shape[-1])} if attrs.get("auto_bias") else {}


@pytest.fixture
def scale():
    """The op ``scale`` (x * factor + bias, as dtype), ONNX's ``test.mlcbook:Scale``."""
    declare.op("scale", _scale, kind=OpKind.ELEMWISE, onnx=f"{DOMAIN}:Scale",
               attrs={"factor": 1.0, "bias": 0.0, "dtype": "float32", "mode": 0},
               onnx_attrs=declare.OnnxAttrs(
                   names={"factor": "Factor", "dtype": "to"}, dtypes=("dtype",),
                   onnx_only=("auto_bias",), derive=_auto_bias,
                   local={"mode": "mlcbook's own. Instead: export it with mode=0"},
                   check=lambda attrs: ["Factor=0 is not supported"] if attrs.get("Factor") == 0
                   else []))
    yield
    ops.unregister("scale")


def _model(**attrs):
    node = helper.make_node("Scale", ["x"], ["y"], domain=DOMAIN, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 3])], [helper.make_tensor_value_info(
            "y", TensorProto.DOUBLE, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid(DOMAIN, 1)])


def test_the_import_renames_converts_and_derives(scale):
    mod = mb.from_onnx(_model(Factor=2.0, to=TensorProto.DOUBLE, auto_bias=1))
    (call,) = mod["main"].calls()
    assert dict(call.attrs) == {"factor": 2.0, "bias": 3.0, "dtype": "float64", "mode": 0}
    x = np.arange(6, dtype="float32").reshape(2, 3)
    got = interpret(mod, x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, x.astype("float64") * 2 + 3)


def test_the_export_maps_the_attributes_back(scale):
    x = Var("x", TensorType((2, 3)))
    model = mb.to_onnx(Function([x], op.scale(x, factor=2.0, bias=0.5, dtype="float64")))
    (node,) = model.graph.node
    assert (node.domain, node.op_type) == (DOMAIN, "Scale")
    assert {a.name: helper.get_attribute_value(a) for a in node.attribute} == {
        "Factor": 2.0, "bias": 0.5, "to": TensorProto.DOUBLE}
    (back,) = mb.from_onnx(model)["main"].calls()
    assert dict(back.attrs) == {"factor": 2.0, "bias": 0.5, "dtype": "float64", "mode": 0}


def test_an_attribute_onnx_lacks_is_refused_at_export_with_its_reason(scale):
    x = Var("x", TensorType((2, 3)))
    with pytest.raises(UnsupportedModelError, match=r"to_onnx: scale 'scale' has mode=1, "
                                                    r"mlcbook's own. Instead: export it"):
        mb.to_onnx(Function([x], op.scale(x, mode=1)))


def test_the_import_lists_the_problems_of_the_values_and_refuses_mlcbook_only_names(scale):
    with pytest.raises(UnsupportedModelError, match="Factor=0 is not supported"):
        mb.from_onnx(_model(Factor=0.0))
    with pytest.raises(UnsupportedModelError, match=r"the attribute mode=1 is not supported"):
        mb.from_onnx(_model(mode=1))


def test_a_dtype_onnx_names_but_mlcbook_lacks_is_named(scale):
    with pytest.raises(UnsupportedModelError, match=r"the attribute 'to' has element type "
                                                    r"STRING"):
        mb.from_onnx(_model(to=TensorProto.STRING))


def test_an_input_holding_one_number_reads_as_that_number():
    k = declare.OnnxInput(1, "scalar")
    assert k.read(np.array([3], np.int64), "k") == 3 and k.read(None, "k") is None
    assert declare.OnnxInput(1, "floats").read(np.array([2, 0.5]), "scales") == (2.0, 0.5)


def test_an_input_of_more_than_one_number_is_refused_naming_it():
    with pytest.raises(mb.errors.OpAttributeError, match="'K' .*one value, got shape \\(2,\\)"):
        declare.OnnxInput(1, "one").read(np.array([1, 2]), "K")


def test_an_input_exports_in_its_form_and_dtype():
    assert declare.OnnxInput(1, "one").array(2, "float32").tolist() == [2]
    assert declare.OnnxInput(1, "one").array(2, "float32").dtype == np.int64
    assert declare.OnnxInput(2, "scalar", "like").array(0.5, "float16").dtype == np.float16
    assert declare.OnnxInput(2, "floats").array((2, 1), "int8").dtype == np.float32


def test_an_unknown_input_form_is_refused():
    with pytest.raises(mb.errors.ArgumentError, match="form='list'"):
        declare.OnnxInput(1, "list")


def test_a_split_node_without_sizes_splits_evenly_or_says_what_to_do():
    derive = ops.get("split").onnx_attrs.derive
    assert derive({"axis": 1}, [TensorType((2, 8))], (True, True)) == {"sizes": (4, 4)}
    assert derive({"num_outputs": 3}, [TensorType((7,))], (True,) * 3) == {"sizes": (3, 3, 1)}
    with pytest.raises(mb.errors.OpAttributeError,
                       match="cannot split 7 evenly into 2 outputs; Instead"):
        derive({"axis": 1}, [TensorType((2, 7))], (True, True))
