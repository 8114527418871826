"""The low-bit graph ops, ``lowbit_decode`` and ``lowbit_encode``, and ``bitcast`` to and
from the low-bit types: their types, their values (reference and compiled) against numpy's
conversions and views, and their errors. (Every bit pattern and a grid of values are checked
against ml_dtypes and onnx in tests/te/test_lowbit.py.)"""
import ml_dtypes  # noqa: F401 - numpy knows the low-bit dtypes by name
import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import OpAttributeError, OpDTypeError
from mlcbook.graph import Function, Var, op
from mlcbook.ops import TensorType, get
from mlcbook.te.ops.lowbit import FORMATS

from ..te.test_lowbit import onnx_cast


def _compiled(name, x: np.ndarray, **attrs):
    v = Var("x", TensorType(x.shape, x.dtype.name))
    return mb.compile(Function([v], getattr(op, name)(v, **attrs)))(x)


def test_lowbit_encode_is_typed_by_its_format():
    t = get("lowbit_encode").infer_type([TensorType((2, 3), "float16")], {"format": "int4"})
    assert t == TensorType((2, 3), "int4")


@pytest.mark.parametrize("fmt", ["float8_e4m3fn", "float8_e5m2fnuz", "float4_e2m1fn", "uint2"])
def test_encode_then_decode_is_onnx_cast_there_and_back(fmt):
    x = np.array([[0.3, -1.75, 2.5, 600.0], [-0.0, 7.0, -3.2, 1e-3]], np.float32)
    want = onnx_cast(x, fmt)
    for run in (lambda a, **k: get("lowbit_encode").reference(a, **k),
                lambda a, **k: _compiled("lowbit_encode", a, **k)):
        q = run(x, format=fmt)
        assert q.dtype == np.dtype(fmt)
        np.testing.assert_array_equal(q.view(np.uint8), want.view(np.uint8))
    np.testing.assert_array_equal(get("lowbit_decode").reference(want, format=fmt),
                                  want.astype(np.float32))
    np.testing.assert_array_equal(_compiled("lowbit_decode", want, format=fmt),
                                  want.astype(np.float32))


@pytest.mark.parametrize("src,dst", [("uint8", "float8_e4m3fn"), ("float8_e5m2", "int8"),
                                     ("float8_e4m3fnuz", "float8_e8m0fnu"), ("int4", "uint4"),
                                     ("uint4", "float4_e2m1fn"), ("int2", "uint2")])
def test_bitcast_reads_low_bit_patterns_as_numpy_views_them(src, dst):
    codes = np.array([0, 1, 7, 8, 9, 0x7F, 0x80, 0xC3, 0xFF], np.uint8)
    width = FORMATS[src].bits if src in FORMATS else 8
    x = (codes if width == 8 else codes % (1 << width)).view(src)
    want = x.view(dst)
    for got in (get("bitcast").reference(x, dtype=dst), _compiled("bitcast", x, dtype=dst)):
        assert got.dtype == np.dtype(dst)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("src,dst", [("int8", "int4"), ("uint4", "uint2"),
                                     ("float8_e5m2", "float16")])
def test_bitcast_needs_low_bit_types_of_the_same_width(src, dst):
    with pytest.raises(OpDTypeError, match=rf"bitcast: a {src} tensor cannot be read as {dst}; "
                       r"the two types must have the same width.*Instead: cast it"):
        get("bitcast").infer_type([TensorType((3,), src)], {"dtype": dst})


def test_a_format_that_is_not_a_low_bit_type_is_refused():
    for name in ("lowbit_encode", "lowbit_decode"):
        with pytest.raises(OpAttributeError, match=rf"{name}: format='float8' is not a low-bit "
                           r"type; Instead: use one of float8_e4m3fn"):
            get(name).infer_type([TensorType((4,), "float8_e4m3fn")], {"format": "float8"})


def test_an_unknown_round_mode_is_refused():
    with pytest.raises(OpAttributeError, match=r"lowbit_encode: round_mode='even' is not one "
                       r"of up, down, nearest"):
        get("lowbit_encode").infer_type([TensorType((4,))], {"format": "float8_e8m0fnu",
                                                             "round_mode": "even"})
