"""Tensor calls in code generation: CPU features of targets, MissingFeatureError."""

import pytest

import mlcbook as mb
from mlcbook.codegen.tensor_calls import TENSOR_CALLS, lookup
from mlcbook.errors import BuildError
from mlcbook.tir.x86_intrinsics import u8i8_tile


def test_target_features_from_cpu_name():
    t = mb.Target("llvm -mcpu=znver4")
    assert t.has_feature("avx512vnni") and t.has_feature("avx512bf16")
    assert not mb.Target("llvm -mcpu=znver3").has_feature("avx512vnni")
    assert mb.Target("llvm -mcpu=znver3").has_feature("avx2")


def test_target_features_from_mattr():
    t = mb.Target("llvm -mcpu=x86-64 -mattr=+avx2,-avx512f")
    assert t.has_feature("avx2") and not t.has_feature("avx512f")


def test_host_features_come_from_llvm():
    host = mb.Target()
    assert host.has_feature("sse2")


def test_every_intrinsic_op_has_an_emitter():
    u8i8_tile("pmaddwd", 2, 3)     # a register-tiled kernel's emitter is made on first lookup
    for name in mb.tir.TensorIntrin.names():
        op = mb.tir.TensorIntrin.get(name).impl.body.value.op
        assert lookup(op).name == op and op in TENSOR_CALLS


def test_unknown_op_is_a_build_error():
    with pytest.raises(BuildError, match="no code generation for tensor call 'nope'"):
        lookup("nope")
