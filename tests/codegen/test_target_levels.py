"""Portable x86-64 levels, cross-compiled objects, and code for features this CPU lacks."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook import models
from mlcbook.codegen.target import X86_LEVELS
from mlcbook.errors import ForeignTargetError

HOST = mb.Target()
X86 = HOST.arch == "x86_64"
EM_AARCH64 = 183


@pytest.mark.parametrize("level, bits", [("x86-64-v2", 128), ("x86-64-v3", 256),
                                         ("x86-64-v4", 512)])
def test_a_level_enables_its_features_and_round_trips(level, bits):
    t = mb.Target(f"llvm -mtriple=x86_64-linux-gnu -mcpu={level}")
    assert set(X86_LEVELS[level]) == set(t.features.split(","))
    assert t.vector_bits == bits
    assert mb.Target(str(t)) == t


def test_levels_include_the_one_below():
    assert set(X86_LEVELS["x86-64-v2"]) < set(X86_LEVELS["x86-64-v3"]) < set(
        X86_LEVELS["x86-64-v4"])


def test_the_host_lacks_none_of_its_own_features():
    assert HOST.missing_features() == []


@pytest.mark.skipif(not X86 or mb.Target("llvm -mcpu=x86-64-v3").missing_features() != [],
                    reason="needs an x86-64-v3 CPU")
def test_a_portable_model_runs_here_and_matches_the_host_build():
    mod = mb.from_onnx(models.tiny_convnet(), batch_size=2)
    x = models.sample_input(2, seed=1)
    portable = mb.compile(mod, target="llvm -mcpu=x86-64-v3")
    np.testing.assert_allclose(portable(x), mb.compile(mod)(x), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not X86 or not mb.Target("llvm -mcpu=x86-64-v4").missing_features(),
                    reason="needs an x86 CPU without AVX-512")
def test_code_for_features_this_cpu_lacks_is_refused_by_name():
    exe = mb.compile(mb.from_onnx(models.tiny_convnet(), batch_size=1),
                     target="llvm -mcpu=x86-64-v4")
    with pytest.raises(ForeignTargetError, match=r"'x86-64-v4' with \+avx512.*which this CPU "
                       r"\(.*\) lacks.*Instead: compile for 'llvm'"):
        exe(models.sample_input(1))


def test_an_aarch64_object_is_cross_compiled(tmp_path):
    exe = mb.compile(mb.from_onnx(models.tiny_convnet(), batch_size=1),
                     target="llvm -mtriple=aarch64-linux-gnu")
    obj = tmp_path / "k.o"
    next(iter(exe.kernels.values())).export_object(obj)
    head = obj.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[4] == 2                   # 64-bit ELF
    assert int.from_bytes(head[18:20], "little") == EM_AARCH64
    with pytest.raises(ForeignTargetError, match="aarch64"):
        exe(models.sample_input(1))
