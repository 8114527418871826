"""mb.tir.TensorIntrin: registration, lookup, availability by target features."""

import pytest

import mlcbook as mb
from mlcbook.errors import TIRError
from mlcbook.tir import TensorIntrin

DOT = "x86.avx2.dot_u8i8_8x4"


def test_builtins_are_registered():
    assert {DOT, "x86.vnni.dot_u8i8_16x4", "x86.avx2.fma_f32_4x16",
            "x86.avx512.fma_f32_4x32"} <= set(TensorIntrin.names())


def test_availability_follows_target_features():
    znver3 = TensorIntrin.available(mb.Target("llvm -mcpu=znver3"))
    znver4 = TensorIntrin.available(mb.Target("llvm -mcpu=znver4"))
    assert DOT in znver3 and "x86.vnni.dot_u8i8_16x4" not in znver3
    assert "x86.vnni.dot_u8i8_16x4" in znver4 and "x86.avx512.fma_f32_4x32" in znver4
    plain = mb.Target("llvm -mcpu=x86-64 -mattr=+sse2")
    assert TensorIntrin.get(DOT).missing_features(plain) == ["avx2"]


def test_unknown_name_lists_registered():
    with pytest.raises(TIRError, match=r"no tensor intrinsic named 'x'.*x86.avx2.dot_u8i8_8x4"):
        TensorIntrin.get("x")


def test_register_refuses_a_taken_name():
    t = TensorIntrin.get(DOT)
    with pytest.raises(TIRError, match="already registered"):
        TensorIntrin.register(DOT, t.desc, t.impl)


def test_register_refuses_impl_with_other_buffers():
    t = TensorIntrin.get(DOT)
    other = TensorIntrin.get("x86.avx2.fma_f32_4x16").impl
    with pytest.raises(TIRError, match="same shapes and dtypes"):
        TensorIntrin.register("mine", t.desc, other)


def test_register_refuses_impl_without_tensor_call():
    t = TensorIntrin.get(DOT)
    with pytest.raises(TIRError, match=r"Evaluate\(TensorCall"):
        TensorIntrin.register("mine", t.desc, t.desc)


def test_a_user_intrinsic_registers_and_tensorizes():
    t = TensorIntrin.get(DOT)
    TensorIntrin.register("test.my_dot", t.desc, t.impl, features=("avx2",), override=True)
    assert TensorIntrin.get("test.my_dot").features == ("avx2",)
    assert "test.my_dot" in TensorIntrin.available(mb.Target("llvm -mcpu=haswell"))


def test_tensor_call_prints():
    impl = TensorIntrin.get(DOT).impl
    assert 'T.tensor_call("x86.dot_u8i8.8x4", A[0], B[0, 0], C[0])' in impl.script()
