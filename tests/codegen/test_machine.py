"""The machine model: named CPUs are data, features decide the ISA, the host reports itself."""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

import mlcbook as mb
from mlcbook.codegen import DotProduct, Machine
from mlcbook.codegen.machine import CPUS, machine_for

KiB = 1024
HOST_CPU = llvm.get_host_cpu_name()


def named(cpu: str, triple: str = "x86_64-linux-gnu") -> Machine:
    """The model of ``-mcpu=cpu`` from the table, whatever this host is: through Target when
    the CPU is not this one (else the host's caches and features would show)."""
    t = mb.Target(f"llvm -mtriple={triple} -mcpu={cpu}")
    if t.is_host and cpu == HOST_CPU:
        return machine_for(cpu, t.arch)
    return t.machine


def test_zen3_is_avx2_without_dot_products():
    m = named("znver3")
    assert (m.vector_bits, m.vector_registers, m.lanes(), m.lanes("int8")) == (256, 16, 8, 32)
    assert (m.fma_per_cycle, m.fma_latency, m.loads_per_cycle) == (2, 4, 2)
    assert m.dot_product("u8i8") is None and m.dot_product("bf16") is None
    assert not m.broadcast_operand and not m.masked_tails
    assert (m.l1d_bytes, m.l2_bytes) == (32 * KiB, 512 * KiB) and m.cores is None


def test_zen5_has_512_bit_datapaths_vnni_and_bf16():
    m = named("znver5")
    assert (m.vector_bits, m.vector_registers, m.fma_per_cycle) == (512, 32, 2)
    assert m.l1d_bytes == 48 * KiB and m.broadcast_operand and m.masked_tails
    vnni, bf16 = m.dot_product("u8i8"), m.dot_product("bf16")
    assert (vnni.instruction, vnni.bits, vnni.lanes) == ("vpdpbusd", 512, 16)
    assert (bf16.instruction, bf16.feature) == ("vdpbf16ps", "avx512bf16")
    # the VEX vpdpbusd (AVX-VNNI) is there too, but the widest is the one taken
    assert {d.bits for d in m.dot_products if d.kind == "u8i8"} == {256, 512}


def test_zen4_issues_one_zmm_fma_a_cycle_but_two_ymm_ones():
    # AVX-512 on 256-bit datapaths: throughput is per datapath, so narrower vectors gain
    assert named("znver4").fma_per_cycle == 1 and named("znver4").loads_per_cycle == 1
    ymm = machine_for("znver4", "x86_64", "-avx512f")
    assert (ymm.vector_bits, ymm.fma_per_cycle, ymm.loads_per_cycle) == (256, 2, 2)
    assert ymm.dot_product("u8i8") is None          # AVX-512 VNNI went with AVX-512F


def test_cascadelake_has_vnni_but_no_bf16():
    m = named("cascadelake")
    assert m.dot_product("u8i8").feature == "avx512vnni" and m.dot_product("bf16") is None


def test_haswell_fmas_take_five_cycles():
    assert named("haswell").fma_latency == 5 and named("skylake").fma_latency == 4


def test_a_portable_level_has_no_avx512_whatever_the_host():
    m = mb.Target("llvm -mtriple=x86_64-linux-gnu -mcpu=x86-64-v3").machine
    assert (m.vector_bits, m.vector_registers, m.dot_products) == (256, 16, ())
    assert m.cores is None
    assert not mb.Target("llvm -mcpu=x86-64-v3").has_feature("avx512vnni")


def test_neoverse_n1_is_neon_with_sdot():
    m = named("neoverse-n1", "aarch64-linux-gnu")
    assert (m.arch, m.vector_bits, m.vector_registers, m.lanes()) == ("aarch64", 128, 32, 4)
    assert m.dot_product("s8s8").instruction == "sdot" and m.dot_product("u8i8") is None
    assert m.l1d_bytes == 64 * KiB


def test_an_unknown_cpu_gets_the_generic_figures_of_its_isa():
    m = mb.Target("llvm -mtriple=x86_64-linux-gnu -mcpu=cannonlake "
                  "-mattr=+avx512f,+avx512bw,+avx512vl,+avx512vnni").machine
    generic = CPUS["x86-64-v4"]
    assert m.cpu == "cannonlake" and "x86-64-v4" in m.basis
    assert (m.vector_bits, m.vector_registers) == (512, 32)
    assert (m.l1d_bytes, m.l2_bytes, m.l3_bytes) == generic.caches
    assert m.fma_latency == generic.fma_latency
    assert m.dot_product("u8i8").bits == 512      # the features decide which instructions exist
    avx2 = mb.Target("llvm -mtriple=x86_64-linux-gnu -mcpu=cannonlake -mattr=+avx2").machine
    assert "x86-64-v3" in avx2.basis and avx2.vector_bits == 256
    # a CPU LLVM knows that has no row of CPUS (a misspelt one is refused: test_target.py)
    arm = mb.Target("llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a55").machine
    assert "generic" in arm.basis and (arm.vector_bits, arm.vector_registers) == (128, 32)


def test_the_host_reports_its_caches_and_cores():
    # named, not "llvm": MLCBOOK_HOST_CPU may make the default target another CPU
    host = mb.Target(f"llvm -mcpu={HOST_CPU}")
    m = host.machine
    assert m.cpu == HOST_CPU and m.cores >= 1
    assert 0 < m.l1d_bytes < m.l2_bytes and m.l3_bytes > 0
    assert "this host" in m.basis
    assert m.vector_bits == host.vector_bits      # Target delegates to the model


def test_the_target_caches_its_machine():
    t = mb.Target("llvm -mcpu=znver3")
    assert t.machine is t.machine


def test_printing_names_the_cpu_its_caches_and_dot_products():
    text = str(named("cascadelake"))
    assert text.startswith("cascadelake (x86_64)")
    assert "L1d 32 KiB, L2 1 MiB per core; L3 38.5 MiB" in text
    assert "vpdpbusd (u8i8, 512-bit)" in text and "not this host" in text
    host = mb.Target(f"llvm -mcpu={HOST_CPU}").machine
    assert f"{host.cores} usable here" in str(host)
    assert "dot products  none" in str(named("znver3"))


def test_models_are_frozen_data():
    m = named("znver3")
    with pytest.raises(AttributeError):
        m.vector_bits = 512
    assert m == named("znver3") and hash(m) == hash(named("znver3"))
    assert DotProduct("s8s8", "dotprod", "sdot", 128, 4, 2.0).lanes == 4


@pytest.mark.parametrize("cpu", sorted(CPUS))
def test_every_row_is_consistent(cpu):
    row = CPUS[cpu]
    m = machine_for(cpu)
    assert m.arch == row.arch and cpu in m.basis
    assert m.fma_per_cycle > 0 and m.loads_per_cycle >= 1 and m.fma_latency >= 3
    assert 0 < m.l1d_bytes < m.l2_bytes and m.l3_bytes > 0
    assert all(d.feature in row.features and d.bits <= m.vector_bits for d in m.dot_products)


@pytest.mark.parametrize("cpu", ["alderlake", "raptorlake", "arrowlake"])
def test_intel_client_cores_since_alder_lake_are_avx2_with_vex_vnni(cpu):
    m = machine_for(cpu)
    assert (m.vector_bits, m.vector_registers) == (256, 16)
    assert m.dot_product("u8i8").instruction == "vpdpbusd" and m.dot_product("u8i8").bits == 256


def test_tiger_lake_has_avx512_vnni_but_one_zmm_fma_a_cycle():
    m = machine_for("tigerlake")
    assert (m.vector_bits, m.fma_per_cycle) == (512, 1.0)
    assert m.dot_product("u8i8").bits == 512 and m.dot_product("bf16") is None


def test_every_row_names_a_cpu_llvm_knows():
    # a row is trusted without asking LLVM (target._check_cpu): a name LLVM does not know
    # would stop the process when a kernel is built for it
    from mlcbook.codegen.target import llvm_names
    for cpu, row in CPUS.items():
        triple = f"{row.arch}-unknown-linux-gnu"
        assert cpu in llvm_names(triple)[0] or cpu == "generic" or cpu.startswith("x86-64"), cpu
