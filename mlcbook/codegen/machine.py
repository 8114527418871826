"""What one core of the target CPU can do, described once: vector width and registers, FMA
and load throughput, caches, dot-product instructions. Schedules derive their choices from
it (:mod:`mlcbook.rules.tile_size` sizes register tiles by FMA and load throughput) instead
of from constants fitted to one CPU.

    >>> print(mb.Target("llvm -mtriple=aarch64-linux-gnu -mcpu=neoverse-n1").machine)
    neoverse-n1 (aarch64), figures of the neoverse-n1 row (Graviton2, Ampere Altra)
      vectors       128-bit, 32 registers (4 float32 lanes); broadcasts take a register
      FMA           2 per cycle, latency 4 cycles; 2 vector loads per cycle
      caches        L1d 64 KiB, L2 1 MiB per core; L3 32 MiB
      cores         not this host
      dot products  sdot (s8s8, 128-bit): latency 4, 2 per cycle

Which instructions exist (the vector width, the dot products) follows the target's
*features*: ``-mattr``, an x86-64 level's or the host's, else what :data:`CPUS` says the
named CPU has, so ``-mcpu=x86-64-v3`` has no AVX-512 on any host. How fast they run and the
caches come from the CPU's row of :data:`CPUS`, or for a CPU not in it from the generic row of
its ISA. The host CPU's caches and cores come from the operating system.
"""

from __future__ import annotations

import functools
import glob
import os
from dataclasses import dataclass, replace

KiB, MiB = 1 << 10, 1 << 20


@dataclass(frozen=True)
class DotProduct:
    """A dot-product instruction the CPU has: each 32-bit lane of the accumulator adds the
    dot product of 4 uint8 x int8 (``"u8i8"``: x86 ``vpdpbusd``, Arm ``usdot``), 4 int8 x int8
    (``"s8s8"``: Arm ``sdot``) or 2 bfloat16 pairs (``"bf16"``, into float32).

        >>> mb.Target("llvm -mcpu=cascadelake").machine.dot_product("u8i8").lanes
        16
    """

    kind: str           # "u8i8", "s8s8" or "bf16"
    feature: str        # the LLVM feature that enables it: "avx512vnni", "dotprod", ...
    instruction: str    # "vpdpbusd", "vdpbf16ps", "sdot", ...
    bits: int           # the width of the registers it works on
    latency: int        # cycles until its accumulator can be updated again
    per_cycle: float    # how many issue per cycle

    @property
    def lanes(self) -> int:
        """Accumulators (int32 or float32) per register."""
        return self.bits // 32


@dataclass(frozen=True)
class Machine:
    """One core of a CPU as the schedules see it (fields: see the comments).

        >>> m = mb.Target("llvm -mcpu=znver4").machine
        >>> m.vector_bits, m.fma_per_cycle, m.lanes("int8")   # AVX-512 on 256-bit datapaths
        (512, 1.0, 64)
    """

    cpu: str
    arch: str                 # "x86_64", "aarch64", ...
    vector_bits: int          # the widest vectors the features enable
    vector_registers: int     # 32 with AVX-512 and on 64-bit Arm, else 16
    fma_per_cycle: float      # vector FMAs issued per cycle at vector_bits
    fma_latency: int          # cycles from an FMA to the next FMA on its accumulator
    loads_per_cycle: int      # vector loads per cycle at vector_bits
    broadcast_operand: bool   # an FMA can broadcast a memory operand (AVX-512's {1toN})
    masked_tails: bool        # a short last vector is one masked load/store (AVX-512)
    l1d_bytes: int            # per core
    l2_bytes: int             # per core (Apple's: per cluster of cores)
    l3_bytes: int             # the L3 a core shares (one CCD's on AMD, one socket's on Intel)
    cores: int | None         # this process's usable cores when this is the host CPU, else None
    dot_products: tuple[DotProduct, ...]
    basis: str = ""           # where the figures come from
    l1d_set_stride: int = 4096  # addresses this far apart share an L1 set (size / ways: 64 sets
    #                             of 64-byte lines on every core in the table)

    def lanes(self, dtype: str = "float32") -> int:
        """How many ``dtype`` values fit in one vector register: 16 float32 on AVX-512."""
        import numpy as np
        return self.vector_bits // (8 * np.dtype(dtype).itemsize)

    @property
    def l2_loads_per_cycle(self) -> float:
        """Vectors a core reads from its L2 per cycle, taken as half its L1 loads: 64 bytes
        a cycle on Zen 5 and Skylake-X (one zmm), 32 on Zen 3 (one ymm) and Zen 4 (half a
        zmm)."""
        return self.loads_per_cycle / 2

    def dot_product(self, kind: str) -> DotProduct | None:
        """The widest dot-product instruction of ``kind`` (``"u8i8"``, ``"s8s8"``,
        ``"bf16"``) the target has, else None."""
        found = [d for d in self.dot_products if d.kind == kind]
        return max(found, key=lambda d: d.bits) if found else None

    def __str__(self) -> str:
        loads = "broadcast memory operands" if self.broadcast_operand else \
            "broadcasts take a register"
        tails = "; masked tails" if self.masked_tails else ""
        dots = [f"{d.instruction} ({d.kind}, {d.bits}-bit): latency {d.latency}, "
                f"{d.per_cycle:g} per cycle" for d in self.dot_products] or ["none"]
        cores = "not this host" if self.cores is None else f"{self.cores} usable here"
        return "\n".join([
            f"{self.cpu} ({self.arch}), {self.basis}",
            f"  vectors       {self.vector_bits}-bit, {self.vector_registers} registers "
            f"({self.lanes()} float32 lanes); {loads}{tails}",
            f"  FMA           {self.fma_per_cycle:g} per cycle, latency {self.fma_latency} "
            f"cycles; {self.loads_per_cycle} vector load{'s' * (self.loads_per_cycle > 1)} "
            "per cycle",
            f"  caches        L1d {_size(self.l1d_bytes)}, L2 {_size(self.l2_bytes)} per core; "
            f"L3 {_size(self.l3_bytes)}",
            f"  cores         {cores}",
            *(f"  {'dot products' if i == 0 else '':12}  {d}" for i, d in enumerate(dots))])


@dataclass(frozen=True)
class CPU:
    """One row of :data:`CPUS`: the features ``-mcpu=NAME`` enables and the figures of one
    core. Throughput is given as (units, bits each) so that it holds at every vector width:
    Zen 4's two 256-bit FMA pipes issue two ymm FMAs a cycle but one zmm FMA."""

    arch: str
    features: frozenset[str]
    fma: tuple[int, int]            # (vector FMA pipes, bits each)
    fma_latency: int
    loads: tuple[int, int]          # (vector loads per cycle, bits each)
    caches: tuple[int, int, int]    # L1d and L2 per core, the L3 a core shares
    part: str                       # the part the caches describe
    # (instruction, latency, per cycle) for those of DOT_PRODUCTS its features enable (an
    # instruction's figures hold for each of its encodings); the others get DOT_PRODUCTS'
    dots: tuple[tuple[str, int, float], ...] = ()


#: the x86-64 psABI microarchitecture levels as LLVM features (each level has the ones before):
#: -mcpu=x86-64-v3 runs on every x86 CPU since Haswell (2013) and Zen 1
_V2 = ["+cx16", "+popcnt", "+sahf", "+sse3", "+sse4.1", "+sse4.2", "+ssse3"]
_V3 = _V2 + ["+avx", "+avx2", "+bmi", "+bmi2", "+f16c", "+fma", "+lzcnt", "+movbe", "+xsave"]
X86_LEVELS = {"x86-64-v2": _V2, "x86-64-v3": _V3,
              "x86-64-v4": _V3 + ["+avx512bw", "+avx512cd", "+avx512dq", "+avx512f", "+avx512vl"]}

#: what every CPU of an architecture has (x86-64's baseline is SSE2; AArch64's, NEON)
_BASE = {"x86_64": frozenset({"sse", "sse2"}), "aarch64": frozenset({"neon", "fp-armv8"})}


def _x86(level: str | None, *extra: str) -> frozenset[str]:
    return _BASE["x86_64"] | {f[1:] for f in X86_LEVELS.get(level, ())} | set(extra)


def _arm(*extra: str) -> frozenset[str]:
    return _BASE["aarch64"] | set(extra)


_SKX = dict(fma=(2, 512), fma_latency=4, loads=(2, 512))
_VNNI_SKX = ("vpdpbusd", 5, 2.0)     # uops.info: one uop on ports 0 and 5, latency 5

#: one row per CPU LLVM names. Sources: Intel's and AMD's optimization guides, Arm's Neoverse
#: software optimization guides, uops.info and Agner Fog's tables; caches of the part named.
#: Intel's server parts with AVX-512 have two 512-bit FMA units (the Xeon Gold 6 and
#: Platinum SKUs; Silver, Bronze and some Gold 5 have one). FMA latency is 5 cycles on
#: Haswell and Zen 2, 4 since Skylake and Zen 3. Zen 4 runs AVX-512 on 256-bit datapaths and
#: loads two 256-bit vectors a cycle; Zen 5 (desktop and server) has 512-bit ones.
CPUS: dict[str, CPU] = {
    "haswell": CPU("x86_64", _x86("x86-64-v3"), (2, 256), 5, (2, 256),
                   (32 * KiB, 256 * KiB, 8 * MiB), "Core i7-4770"),
    "skylake": CPU("x86_64", _x86("x86-64-v3"), (2, 256), 4, (2, 256),
                   (32 * KiB, 256 * KiB, 8 * MiB), "Core i7-6700K"),
    "skylake-avx512": CPU("x86_64", _x86("x86-64-v4"), **_SKX,
                          caches=(32 * KiB, 1 * MiB, 77 * MiB // 2), part="Xeon Platinum 8180"),
    "cascadelake": CPU("x86_64", _x86("x86-64-v4", "avx512vnni"), **_SKX,
                       caches=(32 * KiB, 1 * MiB, 77 * MiB // 2), part="Xeon Platinum 8280",
                       dots=(_VNNI_SKX,)),
    "cooperlake": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avx512bf16"), **_SKX,
                      caches=(32 * KiB, 1 * MiB, 77 * MiB // 2), part="Xeon Platinum 8380H",
                      dots=(_VNNI_SKX,)),
    "icelake-server": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avx512vbmi", "avx512ifma"),
                          **_SKX, caches=(48 * KiB, 5 * MiB // 4, 60 * MiB),
                          part="Xeon Platinum 8380", dots=(_VNNI_SKX,)),
    "sapphirerapids": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avxvnni", "avx512bf16",
                                         "avx512fp16", "amx-tile", "amx-int8", "amx-bf16"),
                          **_SKX, caches=(48 * KiB, 2 * MiB, 105 * MiB),
                          part="Xeon Platinum 8480+", dots=(_VNNI_SKX,)),
    "emeraldrapids": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avxvnni", "avx512bf16",
                                        "avx512fp16", "amx-tile", "amx-int8", "amx-bf16"),
                         **_SKX, caches=(48 * KiB, 2 * MiB, 320 * MiB),
                         part="Xeon Platinum 8592+", dots=(_VNNI_SKX,)),
    "graniterapids": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avxvnni", "avx512bf16",
                                        "avx512fp16", "amx-tile", "amx-int8", "amx-bf16"),
                         **_SKX, caches=(48 * KiB, 2 * MiB, 504 * MiB),
                         part="Xeon 6980P", dots=(_VNNI_SKX,)),
    # client parts: Ice Lake to Rocket Lake run a zmm FMA on their two 256-bit pipes fused
    # (one a cycle); Alder Lake and later have no AVX-512, but VEX-encoded VNNI (AVX-VNNI)
    "broadwell": CPU("x86_64", _x86("x86-64-v3"), (2, 256), 5, (2, 256),
                     (32 * KiB, 256 * KiB, 6 * MiB), "Core i7-5775C"),
    "icelake-client": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avx512vbmi", "avx512ifma"),
                          (2, 256), 4, (2, 512), (48 * KiB, 512 * KiB, 8 * MiB),
                          "Core i7-1065G7", dots=(("vpdpbusd", 5, 1.0),)),
    "tigerlake": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avx512vbmi", "avx512ifma"),
                     (2, 256), 4, (2, 512), (48 * KiB, 5 * MiB // 4, 12 * MiB),
                     "Core i7-1185G7", dots=(("vpdpbusd", 5, 1.0),)),
    "rocketlake": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avx512vbmi", "avx512ifma"),
                      (2, 256), 4, (2, 512), (48 * KiB, 512 * KiB, 16 * MiB),
                      "Core i9-11900K", dots=(("vpdpbusd", 5, 1.0),)),
    "alderlake": CPU("x86_64", _x86("x86-64-v3", "avxvnni"), (2, 256), 4, (3, 256),
                     (48 * KiB, 5 * MiB // 4, 30 * MiB), "Core i9-12900K performance cores",
                     dots=(("vpdpbusd", 5, 2.0),)),
    "raptorlake": CPU("x86_64", _x86("x86-64-v3", "avxvnni"), (2, 256), 4, (3, 256),
                      (48 * KiB, 2 * MiB, 36 * MiB), "Core i9-13900K performance cores",
                      dots=(("vpdpbusd", 5, 2.0),)),
    "meteorlake": CPU("x86_64", _x86("x86-64-v3", "avxvnni"), (2, 256), 4, (3, 256),
                      (48 * KiB, 2 * MiB, 24 * MiB), "Core Ultra 7 155H performance cores",
                      dots=(("vpdpbusd", 5, 2.0),)),
    "arrowlake": CPU("x86_64", _x86("x86-64-v3", "avxvnni"), (2, 256), 4, (3, 256),
                     (48 * KiB, 3 * MiB, 36 * MiB), "Core Ultra 9 285K performance cores",
                     dots=(("vpdpbusd", 5, 2.0),)),
    "lunarlake": CPU("x86_64", _x86("x86-64-v3", "avxvnni"), (2, 256), 4, (3, 256),
                     (48 * KiB, 5 * MiB // 2, 12 * MiB), "Core Ultra 7 258V performance cores",
                     dots=(("vpdpbusd", 5, 2.0),)),
    # Zen 1 runs a ymm FMA on its two 128-bit pipes
    "znver1": CPU("x86_64", _x86("x86-64-v3"), (2, 128), 5, (2, 128),
                  (32 * KiB, 512 * KiB, 8 * MiB), "Zen, one CCX's L3"),
    "znver2": CPU("x86_64", _x86("x86-64-v3"), (2, 256), 5, (2, 256),
                  (32 * KiB, 512 * KiB, 16 * MiB), "Zen 2, one CCX's L3"),
    "znver3": CPU("x86_64", _x86("x86-64-v3"), (2, 256), 4, (2, 256),
                  (32 * KiB, 512 * KiB, 32 * MiB), "Zen 3, one CCD's L3"),
    "znver4": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avx512bf16"), (2, 256), 4,
                  (2, 256), (32 * KiB, 1 * MiB, 32 * MiB), "Zen 4, one CCD's L3",
                  dots=(("vpdpbusd", 4, 1.0), ("vdpbf16ps", 6, 1.0))),
    "znver5": CPU("x86_64", _x86("x86-64-v4", "avx512vnni", "avx512bf16", "avxvnni"),
                  (2, 512), 4, (2, 512), (48 * KiB, 1 * MiB, 32 * MiB), "Zen 5, one CCD's L3",
                  dots=(("vpdpbusd", 4, 2.0), ("vdpbf16ps", 6, 2.0))),
    # the generic rows, one per ISA, for CPUs not above (and these names themselves): the
    # throughput of Skylake and later and Zen 3 and later, caches small enough for most CPUs
    # of the ISA. Without FMA instructions (SSE) a multiply-add is a mul and an add, two of
    # each a cycle, the add's latency on the accumulator.
    "x86-64": CPU("x86_64", _x86(None), (2, 128), 4, (2, 128),
                  (32 * KiB, 256 * KiB, 8 * MiB), "generic x86-64 (SSE2)"),
    "x86-64-v2": CPU("x86_64", _x86("x86-64-v2"), (2, 128), 4, (2, 128),
                     (32 * KiB, 256 * KiB, 8 * MiB), "generic x86-64-v2 (SSE4.2)"),
    "x86-64-v3": CPU("x86_64", _x86("x86-64-v3"), (2, 256), 4, (2, 256),
                     (32 * KiB, 256 * KiB, 8 * MiB), "generic x86-64-v3 (AVX2)"),
    "x86-64-v4": CPU("x86_64", _x86("x86-64-v4"), (2, 512), 4, (2, 512),
                     (32 * KiB, 1 * MiB, 16 * MiB), "generic x86-64-v4 (AVX-512)"),
    "generic": CPU("aarch64", _arm(), (2, 128), 4, (2, 128),
                   (32 * KiB, 512 * KiB, 4 * MiB), "generic AArch64 (NEON)"),
    "neoverse-n1": CPU("aarch64", _arm("dotprod", "fullfp16"), (2, 128), 4, (2, 128),
                       (64 * KiB, 1 * MiB, 32 * MiB), "Graviton2, Ampere Altra",
                       dots=(("sdot", 4, 2.0),)),
    # four 128-bit FMA pipes (two 256-bit SVE ones); mlcbook emits NEON-width vectors
    "neoverse-v1": CPU("aarch64", _arm("dotprod", "fullfp16", "sve", "bf16", "i8mm"), (4, 128),
                       4, (3, 128), (64 * KiB, 1 * MiB, 32 * MiB), "Graviton3",
                       dots=(("sdot", 3, 4.0), ("usdot", 3, 4.0), ("bfdot", 4, 2.0))),
    "neoverse-n2": CPU("aarch64", _arm("dotprod", "fullfp16", "sve", "sve2", "bf16", "i8mm"),
                       (2, 128), 4, (3, 128), (64 * KiB, 1 * MiB, 32 * MiB),
                       "Azure Cobalt 100, Alibaba Yitian 710",
                       dots=(("sdot", 3, 2.0), ("usdot", 3, 2.0), ("bfdot", 4, 2.0))),
    "neoverse-v2": CPU("aarch64", _arm("dotprod", "fullfp16", "sve", "sve2", "bf16", "i8mm"),
                       (4, 128), 4, (3, 128), (64 * KiB, 2 * MiB, 36 * MiB),
                       "Graviton4, Grace",
                       dots=(("sdot", 3, 4.0), ("usdot", 3, 4.0), ("bfdot", 4, 2.0))),
    # Firestorm cores: the 12 MiB L2 is shared by the four of them; the L3 is the SLC
    "apple-m1": CPU("aarch64", _arm("dotprod", "fullfp16"), (4, 128), 4, (3, 128),
                    (128 * KiB, 12 * MiB, 8 * MiB), "M1 performance cores",
                    dots=(("sdot", 3, 4.0),)),
    "apple-m2": CPU("aarch64", _arm("dotprod", "fullfp16", "bf16", "i8mm"), (4, 128), 4,
                    (3, 128), (128 * KiB, 16 * MiB, 8 * MiB), "M2 performance cores",
                    dots=(("sdot", 3, 4.0), ("usdot", 3, 4.0), ("bfdot", 4, 2.0))),
}

#: every dot-product instruction mlcbook knows, with the latency and issue rate assumed for
#: a CPU whose row does not give them
DOT_PRODUCTS = (
    DotProduct("u8i8", "avx512vnni", "vpdpbusd", 512, 5, 1.0),
    DotProduct("u8i8", "avxvnni", "vpdpbusd", 256, 5, 2.0),      # the VEX encoding
    DotProduct("bf16", "avx512bf16", "vdpbf16ps", 512, 6, 1.0),
    DotProduct("s8s8", "dotprod", "sdot", 128, 4, 2.0),
    DotProduct("u8i8", "i8mm", "usdot", 128, 4, 2.0),
    DotProduct("bf16", "bf16", "bfdot", 128, 4, 2.0),
)

#: LLVM's implications between the features that decide the figures: +f enables these too,
#: -f disables every feature that implies f
_IMPLIES = {
    "sse2": ("sse",), "sse3": ("sse2",), "ssse3": ("sse3",), "sse4.1": ("ssse3",),
    "sse4.2": ("sse4.1",), "avx": ("sse4.2",), "avx2": ("avx",), "fma": ("avx",),
    "f16c": ("avx",), "avxvnni": ("avx2",), "avx512f": ("avx2", "fma", "f16c"),
    **{f: ("avx512f",) for f in ("avx512bw", "avx512cd", "avx512dq", "avx512vl", "avx512vnni",
                                 "avx512ifma", "avx512vpopcntdq")},
    "avx512vbmi": ("avx512bw",), "avx512bf16": ("avx512bw",),
    "avx512fp16": ("avx512bw", "avx512dq", "avx512vl"),
    "amx-int8": ("amx-tile",), "amx-bf16": ("amx-tile",),
    "neon": ("fp-armv8",), "fullfp16": ("fp-armv8",), "dotprod": ("neon",), "i8mm": ("neon",),
    "sve": ("neon", "fullfp16"), "sve2": ("sve",),
}


@functools.lru_cache(maxsize=None)
def _implied(f: str) -> frozenset[str]:
    out, todo = set(), [f]
    while todo:
        g = todo.pop()
        if g not in out:
            out.add(g)
            todo.extend(_IMPLIES.get(g, ()))
    return frozenset(out)


def arch_family(arch: str) -> str:
    """``"x86_64"`` for x86-64 triples, ``"aarch64"`` for 64-bit Arm ones, else ``arch``."""
    return {"amd64": "x86_64", "arm64": "aarch64", "aarch64_be": "aarch64"}.get(arch, arch)


@functools.lru_cache(maxsize=None)
def feature_set(cpu: str, arch: str, features: str = "") -> frozenset[str]:
    """The CPU features of a target, as LLVM decides them: what ``-mcpu=cpu`` has (its row
    of :data:`CPUS`, or the architecture's baseline), then each of ``features`` (``-mattr``,
    a level's or the host's: ``"+avx2,-avx512f"``) in order, with the features it implies.

        >>> sorted(feature_set("x86-64", "x86_64", "+avx2") & {"avx", "avx2", "fma"})
        ['avx', 'avx2']
    """
    arch = arch_family(arch)
    row = CPUS.get(cpu)
    have = set(row.features if row and row.arch == arch else _BASE.get(arch, ()))
    for f in filter(None, features.split(",")):
        if f[0] == "+":
            have |= _implied(f[1:])
        elif f[0] == "-":
            have = {g for g in have if f[1:] not in _implied(g)}
    return frozenset(have)


@functools.lru_cache(maxsize=None)
def machine_for(cpu: str, arch: str | None = None, features: str = "",
                host: bool = False) -> Machine:
    """The :class:`Machine` of ``-mcpu=cpu`` on ``arch`` (default: the CPU's own) with the
    ``-mattr`` list ``features``; ``host``: the CPU is this one, whose caches and cores the
    operating system reports. :attr:`Target.machine <mlcbook.codegen.Target.machine>` calls
    it; called directly, it gives the table's figures on any host.

        >>> machine_for("cannonlake", "x86_64", "+avx512f").basis   # not in the table
        "figures of the x86-64-v4 row: no row for 'cannonlake' on x86_64"
    """
    row = CPUS.get(cpu)
    arch = arch_family(arch or (row.arch if row else "x86_64"))
    have = feature_set(cpu, arch, features)
    bits = 512 if "avx512f" in have else 256 if "avx" in have else 128
    if arch != "x86_64":
        bits = 128           # NEON width: LLVM keeps fixed-length vectors out of SVE registers
    if row is not None and row.arch == arch:
        basis = f"figures of the {cpu} row ({row.part})"
    else:
        row = CPUS[_generic(arch, bits)]
        basis = f"figures of the {_generic(arch, bits)} row: no row for {cpu!r} on {arch}"
    # AVX-512 masks and {1toN} broadcasts; SVE has predicates too, but LLVM keeps NEON-width
    # vectors out of SVE registers, so a masked NEON load would be scalarized
    avx512 = arch == "x86_64" and bits == 512
    l1, l2, l3 = row.caches
    cores = None
    if host:
        found = _host_caches()
        l1, l2, l3 = found.get(1, l1), found.get(2, l2), found.get(3, l3)
        cores = _host_cores()
        basis += "; caches and cores of this host"
    timings = {ins: (lat, rate) for ins, lat, rate in row.dots}
    dots = tuple(replace(d, latency=timings[d.instruction][0], per_cycle=timings[d.instruction][1])
                 if d.instruction in timings else d
                 for d in DOT_PRODUCTS if d.feature in have and d.bits <= bits)
    return Machine(
        cpu=cpu, arch=arch, vector_bits=bits,
        vector_registers=32 if avx512 or arch == "aarch64" else 16,
        # a pipe narrower than the vector takes several passes; a wider one does one vector
        fma_per_cycle=row.fma[0] * min(1.0, row.fma[1] / bits), fma_latency=row.fma_latency,
        loads_per_cycle=max(1, row.loads[0] * min(row.loads[1], bits) // bits),
        broadcast_operand=avx512, masked_tails=avx512,
        l1d_bytes=l1, l2_bytes=l2, l3_bytes=l3, cores=cores, dot_products=dots, basis=basis)


def _generic(arch: str, bits: int) -> str:
    """The generic row for a CPU the table does not know, by its ISA."""
    if arch == "x86_64":
        return {512: "x86-64-v4", 256: "x86-64-v3"}.get(bits, "x86-64")
    return "generic"


def _host_caches() -> dict[int, int]:
    """{level: bytes} of the first core's data caches, from Linux's sysfs (empty elsewhere):
    each the size of one instance, so the L3 is the one this core shares (and a cluster's
    shared L2 counts whole: one core alone may fill it)."""
    found = {}
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            level = int(_read(f"{d}/level"))
            kind, size = _read(f"{d}/type"), _read(f"{d}/size")
            n = int(size.rstrip("KMG")) << {"K": 10, "M": 20, "G": 30}.get(size[-1:], 0)
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and n > 0:
            found[level] = n
    return found


def _read(path: str) -> str:
    with open(path) as f:
        return f.read().strip()


def _host_cores() -> int:
    # the cores this process may run on: fewer than the machine's under taskset or a cgroup
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _size(n: int) -> str:
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


__all__ = ["Machine", "DotProduct", "CPU", "CPUS", "DOT_PRODUCTS", "X86_LEVELS",
           "arch_family", "feature_set", "machine_for"]
