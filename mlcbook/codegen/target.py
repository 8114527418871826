"""What to compile for: ``mb.Target("llvm -mcpu=skylake-avx512")``.

    >>> mb.Target("llvm")                            # this machine (the default)
    Target('llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=znver5')
    >>> mb.Target("llvm -mtriple=aarch64-linux-gnu")  # emit assembly for inspection only

Options: ``-mtriple=`` (default: this process), ``-mcpu=`` (default: the host CPU when the
triple is the host's, else ``generic``), ``-mattr=+f1,-f2`` (default: the host's features
when the CPU is the host's, the level's features for the x86-64 levels ``x86-64-v2``,
``-v3`` (AVX2, FMA) and ``-v4`` (AVX-512), which make portable binaries). A target whose
triple is not this machine's can produce LLVM IR, assembly and object files, but its
kernels cannot run here; neither can code that uses features this CPU lacks::

    >>> mb.Target("llvm -mcpu=x86-64-v3").missing_features()    # on a CPU without AVX2
    ['+avx', '+avx2', '+bmi', '+bmi2', '+f16c', '+fma', '+lzcnt', '+movbe', '+xsave']
"""

from __future__ import annotations

import functools

from ..errors import TargetError


@functools.lru_cache(maxsize=None)
def llvm_binding():
    import llvmlite.binding as llvm
    # llvmlite >= 0.45 initializes LLVM itself; only targets and printers are ours to add
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


class Target:
    """An LLVM target: triple, CPU name and feature string."""

    def __init__(self, spec: "str | Target" = "llvm"):
        if isinstance(spec, Target):
            self.triple, self.cpu, self.features = spec.triple, spec.cpu, spec.features
            return
        if not isinstance(spec, str):
            raise TargetError(f"a target is a string like 'llvm -mcpu=skylake-avx512', got {spec!r}")
        words = spec.split()
        if not words or words[0] != "llvm":
            raise TargetError(
                f"unknown target {spec!r}; mlcbook compiles for LLVM CPUs: use 'llvm' "
                "optionally followed by -mtriple=..., -mcpu=..., -mattr=...")
        opts = {}
        for w in words[1:]:
            key, eq, value = w.partition("=")
            if not eq or key not in ("-mtriple", "-mcpu", "-mattr"):
                raise TargetError(
                    f"unknown target option {w!r} in {spec!r}; known: -mtriple=, -mcpu=, -mattr=")
            opts[key] = value
        llvm = llvm_binding()
        host_triple = llvm.get_process_triple()
        self.triple = _normalize_triple(opts.get("-mtriple", host_triple))
        on_host = _arch(self.triple) == _arch(host_triple)
        host_cpu = llvm.get_host_cpu_name()
        default_cpu = host_cpu if on_host else "generic"
        self.cpu = opts.get("-mcpu", default_cpu)
        if "-mattr" in opts:
            self.features = opts["-mattr"]
        elif on_host and self.cpu == host_cpu:
            self.features = llvm.get_host_cpu_features().flatten()
        elif self.cpu in X86_LEVELS and self.arch == "x86_64":
            self.features = ",".join(X86_LEVELS[self.cpu])
        else:
            self.features = ""
        try:
            llvm.Target.from_triple(self.triple)
        except RuntimeError as e:
            raise TargetError(f"LLVM does not know the triple {self.triple!r}: {e}") from None

    @staticmethod
    def host() -> "Target":
        return Target("llvm")

    @property
    def is_host(self) -> bool:
        """Whether code for this target can run in this process."""
        return _arch(self.triple) == _arch(llvm_binding().get_process_triple())

    def missing_features(self) -> list[str]:
        """The features this target enables that this machine's CPU lacks: code for it
        would stop with an illegal instruction here. Empty for another architecture
        (:attr:`is_host` says whether that code can run at all)."""
        if not self.is_host:
            return []
        lacks = {f[1:] for f in llvm_binding().get_host_cpu_features().flatten().split(",")
                 if f.startswith("-")}
        return sorted(f for f in self.features.split(",") if f.startswith("+") and f[1:] in lacks)

    @property
    def vector_bits(self) -> int:
        """Width of the widest SIMD registers the features enable (128 if unknown)."""
        feats = set(self.features.split(","))
        if "+avx512f" in feats:
            return 512
        if "+avx" in feats or "+avx2" in feats:
            return 256
        if not self.features and self.cpu in _WIDE_CPUS:
            return _WIDE_CPUS[self.cpu]
        return 128

    def has_feature(self, name: str) -> bool:
        """Whether the target has the CPU feature ``name`` (LLVM's name: ``"avx512vnni"``),
        from ``-mattr`` or the host's features, else from what the named CPU is known to have.

            >>> mb.Target("llvm -mcpu=znver4").has_feature("avx512vnni")
            True
        """
        if self.features:
            return f"+{name}" in self.features.split(",")
        return name in _CPU_FEATURES.get(self.cpu, ())

    @property
    def arch(self) -> str:
        """The architecture part of the triple: ``"x86_64"``, ``"aarch64"``, ..."""
        return _arch(self.triple)

    @property
    def vector_registers(self) -> int:
        """How many SIMD registers the code can use: 32 on AVX-512 and on 64-bit ARM (NEON,
        SVE), 16 on other x86-64 (SSE, AVX2). A register tile must fit in them, with a few to
        spare for the values it is updated from."""
        if self.arch in ("aarch64", "arm64", "aarch64_be"):
            return 32
        if self.arch in ("x86_64", "amd64"):
            return 32 if self.vector_bits == 512 else 16
        return 16

    def vector_lanes(self, dtype: str = "float32") -> int:
        """How many ``dtype`` values fit in one vector register: 16 float32 on AVX-512."""
        import numpy as np
        return self.vector_bits // (8 * np.dtype(dtype).itemsize)

    def target_machine(self, jit: bool = False, opt: int = 3):
        llvm = llvm_binding()
        t = llvm.Target.from_triple(self.triple)
        return t.create_target_machine(
            cpu=self.cpu, features=self.features, opt=opt,
            reloc="default" if jit else "pic",
            codemodel="jitdefault" if jit else "default", jit=jit)

    def __str__(self) -> str:
        s = f"llvm -mtriple={self.triple} -mcpu={self.cpu}"
        if self.features and self._explicit_features():
            s += f" -mattr={self.features}"
        return s

    def _explicit_features(self) -> bool:
        llvm = llvm_binding()
        return not (self.cpu == llvm.get_host_cpu_name() and self.is_host
                    and self.features == llvm.get_host_cpu_features().flatten())

    def __repr__(self) -> str:
        return f"Target({str(self)!r})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Target) and (self.triple, self.cpu, self.features) == (
            other.triple, other.cpu, other.features)

    def __hash__(self) -> int:
        return hash((self.triple, self.cpu, self.features))


#: the x86-64 psABI microarchitecture levels as LLVM features (each level has the ones before):
#: -mcpu=x86-64-v3 runs on every x86 CPU since Haswell (2013) and Zen 1
_V2 = ["+cx16", "+popcnt", "+sahf", "+sse3", "+sse4.1", "+sse4.2", "+ssse3"]
_V3 = _V2 + ["+avx", "+avx2", "+bmi", "+bmi2", "+f16c", "+fma", "+lzcnt", "+movbe", "+xsave"]
X86_LEVELS = {"x86-64-v2": _V2, "x86-64-v3": _V3,
              "x86-64-v4": _V3 + ["+avx512bw", "+avx512cd", "+avx512dq", "+avx512f", "+avx512vl"]}

_WIDE_CPUS = {"skylake-avx512": 512, "cascadelake": 512, "icelake-server": 512,
              "sapphirerapids": 512, "znver4": 512, "znver5": 512, "haswell": 256,
              "skylake": 256, "znver2": 256, "znver3": 256}


_AVX2 = ("avx", "avx2", "fma")
_AVX512 = _AVX2 + ("avx512f", "avx512bw", "avx512vl")
_VNNI = _AVX512 + ("avx512vnni",)
#: features of CPUs named without -mattr (used for targets other than the host CPU)
_CPU_FEATURES = {"haswell": _AVX2, "skylake": _AVX2, "znver2": _AVX2, "znver3": _AVX2,
                 "skylake-avx512": _AVX512, "cascadelake": _VNNI, "icelake-server": _VNNI,
                 "cooperlake": _VNNI + ("avx512bf16",), "sapphirerapids": _VNNI + ("avx512bf16",),
                 "znver4": _VNNI + ("avx512bf16",), "znver5": _VNNI + ("avx512bf16",)}


def _arch(triple: str) -> str:
    return triple.split("-")[0]


def _normalize_triple(triple: str) -> str:
    parts = triple.split("-")
    if len(parts) == 3 and parts[1] in ("linux", "windows", "darwin", "none"):
        return f"{parts[0]}-unknown-{parts[1]}-{parts[2]}"
    return triple
