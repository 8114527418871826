"""The elementwise ops against ONNX's type constraints: every integer dtype ONNX allows an
elementwise op is accepted, and the integer forms whose meaning is subtle (Shrink's
fractional bounds, PRelu of unsigned values) match onnxruntime or ONNX's reference."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import MLCError
from mlcbook.graph import Function, Var, op
from mlcbook.ops import get, list_ops
from mlcbook.ops.registry import OpKind
from mlcbook.ops.types import TensorType

onnx = pytest.importorskip("onnx")
from onnx import defs, helper  # noqa: E402

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _declared_elementwise():
    for name in list_ops():
        op = get(name)
        # (the (de)quantizers' scales and zero points are not of their data's type: their
        # dtypes are checked in tests/ops/test_quant.py)
        if op.onnx and ":" not in op.onnx and op.kind <= OpKind.BROADCAST and \
                op.onnx not in ("QuantizeLinear", "DequantizeLinear"):
            yield op


@pytest.mark.parametrize("op", list(_declared_elementwise()), ids=lambda o: o.onnx)
def test_every_integer_dtype_onnx_allows_is_accepted(op):
    schema = defs.get_schema(op.onnx)
    allowed = {t[len("tensor("):-1] for t in schema.type_constraints[-1].allowed_type_strs}
    refused = []
    for dtype in sorted(allowed & set(INTS)):
        types = [TensorType((2,), dtype)] * op.num_inputs[0]
        if op.onnx == "Where":
            types = [TensorType((2,), "bool")] + types[1:]
        try:      # (Cast's: from the dtype to the dtype; its constraint holds for both)
            op.infer_type(types, {"dtype": dtype} if "dtype" in op.attrs else {})
        except MLCError as e:
            refused.append(f"{dtype}: {e}")
    assert not refused, refused


def _model(op_type, dtype, n_inputs=1, **attrs):
    t = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    ins = [f"x{k}" for k in range(n_inputs)]
    graph = helper.make_graph([helper.make_node(op_type, ins, ["y"], **attrs)], "g",
                              [helper.make_tensor_value_info(i, t, [9]) for i in ins],
                              [helper.make_tensor_value_info("y", t, [9])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def _reference(model, feeds):
    try:
        import onnxruntime as ort
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(None, feeds)[0]
    except Exception:  # noqa: BLE001 - no kernel for this dtype in onnxruntime: ONNX's own
        from onnx.reference import ReferenceEvaluator
        return ReferenceEvaluator(model).run(None, feeds)[0]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("bias,lambd", [(1.5, 1.5), (0.7, 2.2), (-1.5, 0.5)])
@pytest.mark.parametrize("opt_level", [0, 3])
def test_shrink_on_integers_keeps_its_fractional_bounds_and_bias(dtype, bias, lambd, opt_level):
    # onnxruntime compares and adds in floating point and truncates once: rounding the
    # attributes to the dtype first was off by one (Shrink(bias=1.5) of -4: -2, not -3)
    x = np.arange(-4, 5) if dtype.startswith("int") else np.arange(9)
    model = _model("Shrink", dtype, bias=bias, lambd=lambd)
    feeds = {"x0": x.astype(dtype)}
    got = mb.compile(mb.from_onnx(model), opt_level=opt_level).run(feeds)
    np.testing.assert_array_equal(got, _reference(model, feeds))


@pytest.mark.parametrize("dtype", ["uint32", "uint64", "int32", "int64"])
def test_prelu_of_integers_matches_the_reference(dtype):
    rng = np.random.default_rng(0)
    low = 0 if dtype.startswith("u") else -9
    feeds = {"x0": rng.integers(low, 9, 9).astype(dtype), "x1": rng.integers(0, 4, 9).astype(dtype)}
    model = _model("PRelu", dtype, n_inputs=2)
    got = mb.compile(mb.from_onnx(model), opt_level=3).run(feeds)
    np.testing.assert_array_equal(got, _reference(model, feeds))


def test_neg_of_int16_is_supported():
    # the leftover of the last fuzzer run: Neg on int16 was refused as unsupported
    x = np.array([-3, 0, 7, -32767], "int16")
    got = mb.compile(mb.from_onnx(_model("Neg", "int16")), opt_level=3).run(
        {"x0": np.resize(x, 9)})
    np.testing.assert_array_equal(got, -np.resize(x, 9))


@pytest.mark.parametrize("opt_level", [0, 2, 3])
def test_bitwise_not_of_a_widened_unsigned_value_converts_all_64_bits(opt_level):
    # LLVM 22's SLP vectorizer narrowed uitofp(xor(zext i1 to i64, -1)) to 32 bits (the
    # fuzzer, seed 141, model 1543): 2**32 instead of 2**64
    x = Var("x", TensorType((6, 2, 2), "bool"))
    f = Function([x], op.cast(op.bitwise_not(op.cast(x, dtype="uint64")), dtype="float32"))
    xv = (np.arange(24) % 2).astype(bool).reshape(6, 2, 2)
    got = mb.compile(f, opt_level=opt_level).run({"x": xv})
    np.testing.assert_array_equal(got, (~xv.astype(np.uint64)).astype(np.float32))


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("float32", "uint8"),
                                     ("float64", "float16"), ("int64", "int8"),
                                     ("float32", "bool"), ("bool", "float32"),
                                     ("float32", "bfloat16")], ids=str)
def test_cast_is_numpys_astype(src, dst):
    x = np.array([0, -0.0, 1.5, -2.7, 300.7, -300.2, 7e4, 1], np.float64)
    x = (x != 0) if src == "bool" else x.astype(src)
    got = get("cast").reference(x, dtype=dst)
    assert got.dtype == np.dtype(dst)
    with np.errstate(over="ignore", invalid="ignore"):   # 7e4 is past float16 and uint8
        want = x.astype(dst)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


def test_cast_needs_its_dtype():
    with pytest.raises(MLCError, match="op 'cast' needs the attribute 'dtype'"):
        get("cast").infer_type([TensorType((2,))], {})
