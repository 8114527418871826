"""Targets: the host by default, overridable CPU and features, other triples for inspection."""

from __future__ import annotations

import os

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.codegen.machine import CPUS
from mlcbook.codegen.target import HOST_CPU_ENV
from mlcbook.errors import ForeignTargetError, TargetError

from ._util import map_func


def test_default_target_is_this_machine():
    import llvmlite.binding as llvm
    t = mb.Target()
    assert t.is_host and t.cpu == (os.environ.get(HOST_CPU_ENV) or llvm.get_host_cpu_name())
    assert str(t).startswith("llvm -mtriple=")
    assert mb.Target(str(t)) == t


def test_cpu_and_features_can_be_chosen():
    t = mb.Target("llvm -mcpu=skylake-avx512")
    assert t.cpu == "skylake-avx512" and t.vector_bits == 512
    assert t.vector_lanes("float32") == 16
    assert mb.Target("llvm -mcpu=x86-64 -mattr=+avx2,+fma").vector_bits == 256


def test_mattr_changes_the_named_cpus_features_as_llvm_does():
    # -mattr adds to and takes from what -mcpu has, with the features each one implies
    no512 = mb.Target("llvm -mcpu=znver4 -mattr=-avx512f")
    assert no512.vector_bits == 256 and no512.vector_registers == 16
    assert not no512.has_feature("avx512vnni") and no512.has_feature("avx2")
    avx2 = mb.Target("llvm -mcpu=x86-64 -mattr=+avx2")
    assert avx2.has_feature("avx") and avx2.has_feature("sse4.2") and avx2.vector_bits == 256
    assert mb.Target("llvm -mcpu=x86-64").has_feature("sse2")


def test_target_answers_from_its_machine_model():
    t = mb.Target("llvm -mcpu=skylake-avx512")
    assert (t.vector_bits, t.vector_registers, t.vector_lanes("int8")) == (
        t.machine.vector_bits, t.machine.vector_registers, t.machine.lanes("int8"))
    assert repr(t) == "Target('llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512')"


@pytest.mark.parametrize("spec,arch,registers", [
    ("llvm -mcpu=skylake-avx512", "x86_64", 32),
    ("llvm -mcpu=x86-64 -mattr=+avx2,+fma", "x86_64", 16),
    ("llvm -mcpu=x86-64 -mattr=+sse2", "x86_64", 16),
    ("llvm -mtriple=aarch64-linux-gnu", "aarch64", 32),
])
def test_register_count_follows_the_architecture(spec, arch, registers):
    t = mb.Target(spec)
    assert t.arch == arch and t.vector_registers == registers


def test_kernel_built_for_an_older_cpu_still_runs_here():
    k = mb.build(map_func(lambda x: x + 1.0, ["float32"], "float32", lanes=16),
                 target="llvm -mcpu=x86-64 -mattr=+sse2")
    assert "zmm" not in k.asm() and "xmm" in k.asm()
    a = np.arange(64, dtype="float32")
    np.testing.assert_array_equal(k(a), a + 1)


def _beyond_this_cpu() -> str:
    """A CPU of the table with a feature this one lacks (skip if this one has them all)."""
    arch = mb.Target.host().arch
    name = next((c for c, row in CPUS.items() if row.arch == arch and
                 mb.Target(f"llvm -mcpu={c}").missing_features()), None)
    if name is None:
        pytest.skip("this CPU has every feature of the CPUs in the table")
    return name


def test_a_kernel_for_a_cpu_with_features_this_one_lacks_is_refused_not_run():
    cpu = _beyond_this_cpu()
    k = mb.build(map_func(lambda x: x + 1.0, ["float32"], "float32", lanes=4),
                 target=f"llvm -mcpu={cpu}")
    with pytest.raises(ForeignTargetError, match=f"compiled for the CPU '{cpu}' with .*which "
                                                 "this CPU .* lacks: it would stop"):
        k(np.zeros(64, "float32"))


def test_the_default_target_can_stand_for_an_older_cpu(monkeypatch):
    """MLCBOOK_HOST_CPU=x86-64-v3: the default target is that CPU, its machine model, and
    its code runs here."""
    if mb.Target("llvm -mcpu=x86-64-v3").missing_features() or mb.Target.host().arch != "x86_64":
        pytest.skip("this CPU cannot run x86-64-v3 code")
    monkeypatch.setenv(HOST_CPU_ENV, "x86-64-v3")
    t = mb.Target()
    assert t.cpu == "x86-64-v3" and not t.has_feature("avx512f") and t.vector_bits == 256
    k = mb.build(map_func(lambda x: x * 2.0, ["float32"], "float32", lanes=16))
    assert "zmm" not in k.asm()
    np.testing.assert_array_equal(k(np.arange(64, dtype="float32")), np.arange(64) * 2)


def test_a_default_cpu_this_one_cannot_stand_for_is_refused(monkeypatch):
    cpu = _beyond_this_cpu()
    monkeypatch.setenv(HOST_CPU_ENV, cpu)
    with pytest.raises(TargetError, match=f"MLCBOOK_HOST_CPU='{cpu}' names a CPU with features "
                                          "this one .* lacks.*Instead: name a CPU"):
        mb.Target()


def test_an_unknown_default_cpu_is_refused(monkeypatch):
    monkeypatch.setenv(HOST_CPU_ENV, "znver9")
    with pytest.raises(TargetError, match="unknown CPU 'znver9'"):
        mb.Target()


def test_avx512_target_uses_zmm_registers():
    k = mb.build(map_func(lambda x: x * 2.0, ["float32"], "float32", lanes=16),
                 target="llvm -mcpu=skylake-avx512")
    assert "zmm" in k.asm()


def test_other_triple_emits_assembly_but_cannot_run():
    k = mb.build(map_func(lambda x: x * 2.0, ["float32"], "float32", lanes=4),
                 target="llvm -mtriple=aarch64-linux-gnu")
    asm = k.asm()
    assert ".4s" in asm and "ldp\tq" in asm  # NEON: 4 float32 lanes in q registers
    with pytest.raises(ForeignTargetError, match=r"\[MLC-C003\].*aarch64.*not for this machine"):
        k(np.zeros(64, "float32"))


@pytest.mark.parametrize("spec,msg", [("cuda", "unknown target 'cuda'"),
                                      ("llvm -mfoo=1", "unknown target option '-mfoo=1'"),
                                      ("llvm -mtriple=nonsense-cpu-os", "does not know the triple")])
def test_bad_targets_are_explained(spec, msg):
    with pytest.raises(TargetError, match=msg):
        mb.Target(spec)


@pytest.mark.parametrize("spec,close", [
    ("llvm -mcpu=skylake-avx51", "skylake-avx512"),
    ("llvm -mcpu=znver44", "znver4"),
    ("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-v9", "neoverse-v1"),
])
def test_a_mistyped_cpu_is_refused_with_close_names(spec, close):
    # Before the check, LLVM went on with a CPU without 64-bit mode and aborted the process.
    with pytest.raises(TargetError, match=rf"\[MLC-C002\] unknown CPU .*did you mean .*"
                                          rf"'{close}'.*Instead:"):
        mb.Target(spec)


def test_a_cpu_of_another_architecture_is_refused():
    with pytest.raises(TargetError, match="unknown CPU 'neoverse-v1' in -mcpu= for x86_64"):
        mb.Target("llvm -mtriple=x86_64-linux-gnu -mcpu=neoverse-v1")


@pytest.mark.parametrize("mattr,bad,close", [("+avx512fx", "avx512fx", "avx512f"),
                                             ("+avx2,-fmaa", "fmaa", "fma")])
def test_an_unknown_feature_is_refused_not_ignored(mattr, bad, close):
    with pytest.raises(TargetError, match=rf"unknown CPU feature '{bad}' .*'{close}'"):
        mb.Target(f"llvm -mcpu=x86-64 -mattr={mattr}")


def test_a_feature_without_sign_is_refused():
    with pytest.raises(TargetError, match=r"'avx2' in -mattr=avx2 has no sign.*\+avx2"):
        mb.Target("llvm -mcpu=x86-64 -mattr=avx2")


@pytest.mark.parametrize("spec", ["llvm -mcpu=cascadelake", "llvm -mcpu=x86-64-v3",
                                  "llvm -mcpu=generic", "llvm -mcpu=x86-64 -mattr=+avx2,-avx512f",
                                  "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72"])
def test_known_cpus_and_features_are_accepted(spec):
    assert mb.Target(spec).cpu == spec.split("-mcpu=")[1].split()[0]


def test_llvm_names_lists_cpus_and_features_of_each_architecture():
    from mlcbook.codegen.target import llvm_names
    cpus, features = llvm_names("x86_64-unknown-linux-gnu")
    assert {"znver4", "skylake-avx512", "x86-64"} <= cpus and {"avx2", "avx512f"} <= features
    arm_cpus, arm_features = llvm_names("aarch64-unknown-linux-gnu")
    assert "neoverse-v1" in arm_cpus and "neon" in arm_features and "znver4" not in arm_cpus
