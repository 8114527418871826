"""te.ops.lowbit: every bit pattern of every low-bit format decoded, and a grid of floats
(ties, subnormals, the largest value, overflow, NaN, Inf, -0) encoded, by the loop-IR
interpreter, by native code and by numpy (:mod:`mlcbook.te.evaluate`, the graph ops'
reference), compared with ml_dtypes and onnx's reference conversions (``onnx_cast``)."""
import ml_dtypes  # noqa: F401 - numpy knows the low-bit dtypes by name
import numpy as np
import pytest
from onnx.numpy_helper import to_float8e8m0

import mlcbook as mb
from mlcbook import te
from mlcbook.errors import TEAttributeError, TEError
from mlcbook.ops import get
from mlcbook.te.evaluate import evaluate
from mlcbook.te.ops.lowbit import FORMATS, decode, encode

NAMES = list(FORMATS)


def _patterns(fmt: str) -> np.ndarray:
    bits = np.arange(256, dtype=np.uint8)
    return bits % (1 << FORMATS[fmt].bits) if FORMATS[fmt].bits < 8 else bits


def _grid(fmt: str) -> np.ndarray:
    """Every finite value of ``fmt``, the midpoints between neighbours (ties) and the float32
    values just beside them, beyond the largest value, and the special values."""
    v = np.unique(_patterns(fmt).view(fmt).astype(np.float32))
    v = v[np.isfinite(v)]
    mid = ((v[:-1].astype(np.float64) + v[1:]) / 2).astype(np.float32)
    top = np.float32(FORMATS[fmt].max_value)
    with np.errstate(over="ignore"):
        extra = [np.nextafter(mid, np.float32(np.inf)), np.nextafter(mid, np.float32(-np.inf)),
                 [top * 1.03, top * 1.07, top * 2, -top * 1.07, 3e38, -3e38, 1e-30, -1e-30,
                  1e-45, np.nan, np.inf, -np.inf, -0.0, 0.0, 2.0 ** -126, 2.0 ** -127]]
    g = np.concatenate([v, mid] + [np.asarray(e, np.float32) for e in extra])
    if FORMATS[fmt].kind == "int":    # beside the int range and half-way points
        g = np.concatenate([g, np.arange(-40, 40, 0.25, dtype=np.float32)])
    return g.astype(np.float32)


def onnx_cast(x: np.ndarray, fmt: str, saturate: bool = True) -> np.ndarray:
    """The oracle: ONNX's Cast of ``x`` to ``fmt`` by ml_dtypes' conversions, clamped first
    where ``saturate`` says so, and by onnx's own for E8M0."""
    f = FORMATS[fmt]
    with np.errstate(invalid="ignore", over="ignore"):
        if f.kind == "e8m0":
            return to_float8e8m0(x.astype(np.float32), saturate)
        if f.kind == "int":
            # a C cast to int32 truncates; ml_dtypes keeps the low bits
            v = np.where(np.isfinite(x), x, 0).astype(np.float64)
            return np.trunc(v).astype(np.int64).astype(fmt)
        if saturate:
            x = np.clip(x.astype(np.float64), -f.max_value, f.max_value)
        return x.astype(fmt)


RUNNERS = ["interpreted", "native", "evaluated"]


def _run(x, out, arrays, runner: str):
    """``out`` of the te program from the placeholder ``x``, run by ``runner``."""
    if runner == "evaluated":
        arrays[1][...] = evaluate(out, {x: arrays[0]})
    elif runner == "native":
        mb.build(te.create_prim_func([x, out]), target="llvm")(*arrays)
    else:
        mb.tir.interpret(te.create_prim_func([x, out]), *arrays)


def _same(got: np.ndarray, want: np.ndarray, fmt: str) -> None:
    """Equal bit patterns, except that any NaN matches any NaN (mlcbook writes NaN with its
    sign bit clear, ml_dtypes keeps the input's)."""
    g, w = got.view(fmt).astype(np.float32), want.view(fmt).astype(np.float32)
    bad = (got != want) & ~(np.isnan(g) & np.isnan(w))
    where = np.nonzero(bad)[0][:8]
    assert not bad.any(), f"{fmt} at {where}: got {got[where]}, want {want[where]}"


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("fmt", NAMES)
def test_decode_every_bit_pattern(fmt, runner):
    bits = _patterns(fmt)
    x = te.placeholder((256,), "uint8", name="x")
    out = np.zeros(256, np.float32)
    _run(x, decode(x, fmt), [bits, out], runner)
    np.testing.assert_array_equal(out, bits.view(fmt).astype(np.float32))


def _encode(g: np.ndarray, fmt: str, runner: str, **kw) -> np.ndarray:
    x = te.placeholder(g.shape, "float32", name="x")
    out = np.zeros(g.shape, np.uint8)
    _run(x, encode(x, fmt, **kw), [g, out], runner)
    return out


ENCODE = [(f, s) for f in NAMES for s in (True, False)
          if s or FORMATS[f].kind == "float" and FORMATS[f].nan is not None]


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("fmt,saturate", ENCODE, ids=[f"{f}-{'sat' if s else 'nosat'}"
                                                       for f, s in ENCODE])
def test_encode_grid_as_onnx_cast(fmt, saturate, runner):
    g = _grid(fmt)
    _same(_encode(g, fmt, runner, saturate=saturate), onnx_cast(g, fmt, saturate).view(np.uint8),
          fmt)


def test_encode_reference_is_ml_dtypes_with_onnx_saturation():
    # the graph op's reference against ml_dtypes directly: clamp, then round to nearest even
    v = np.array([0x39, 0x3A, 0x3B], np.uint8).view("float8_e4m3fn").astype(np.float32)
    ties = [(v[0] + v[1]) / 2, (v[1] + v[2]) / 2]     # both go to the even pattern 0x3A
    g = np.array([0.5, 449.0, 464.0, 480.0, 1e6, -np.inf] + ties, np.float32)
    want = np.clip(g, -448, 448).astype("float8_e4m3fn").view(np.uint8)
    got = get("lowbit_encode").reference(g, format="float8_e4m3fn").view(np.uint8)
    np.testing.assert_array_equal(got, want)
    assert list(got) == [0x30, 0x7E, 0x7E, 0x7E, 0x7E, 0xFE, 0x3A, 0x3A]


@pytest.mark.parametrize("mode", ["up", "down", "nearest"])
@pytest.mark.parametrize("saturate", [True, False])
def test_e8m0_round_modes_match_onnx(mode, saturate):
    near_max = np.float32(2.0 ** 127) * np.float32([1.0, 1.25, 1.5, 1.75])
    g = np.concatenate([_grid("float8_e8m0fnu"), near_max,
                        np.float32([2.0 ** -130, 3 * 2.0 ** -128, 0.75, 1.5, 1.25 + 2.0 ** -20])])
    want = to_float8e8m0(g, saturate, mode).view(np.uint8)
    _same(_encode(g, "float8_e8m0fnu", "interpreted", saturate=saturate, round_mode=mode), want,
          "float8_e8m0fnu")


def test_encode_sign_rules_of_zero_and_nan():
    g = np.array([-0.0, -1e-30, np.nan], np.float32)
    assert list(_encode(g, "float8_e4m3fn", "interpreted")) == [0x80, 0x80, 0x7F]
    assert list(_encode(g, "float8_e4m3fnuz", "interpreted")) == [0, 0, 0x80]   # no -0 in FNUZ
    assert list(_encode(g, "float4_e2m1fn", "interpreted")) == [0x8, 0x8, 0x8]  # as ml_dtypes


def test_decode_refuses_a_tensor_that_is_not_bytes():
    x = te.placeholder((4,), "int32", name="codes")
    with pytest.raises(TEError, match=r"'codes' is int32.*Instead"):
        decode(x, "int4")


def test_unknown_format_and_round_mode_are_errors():
    x = te.placeholder((4,), "float32", name="x")
    with pytest.raises(TEAttributeError, match=r"format='float8_e4m3' is not a low-bit "
                                               "type.*Instead"):
        encode(x, "float8_e4m3")
    with pytest.raises(TEAttributeError, match=r"round_mode='even'.*Instead"):
        encode(x, "float8_e8m0fnu", round_mode="even")
