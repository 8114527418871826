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

What one core of the target can do (vector width and registers, FMA and load throughput,
caches, dot products) is :attr:`Target.machine`, from which schedules size their tiles::

    >>> mb.Target("llvm -mcpu=znver4").machine.fma_per_cycle   # AVX-512 on 256-bit datapaths
    1.0
    >>> print(mb.Target().machine)                              # this CPU as a table
    znver5 (x86_64), figures of the znver5 row (Zen 5, one CCD's L3); caches and cores of this host
      vectors       512-bit, 32 registers (16 float32 lanes); ...
"""

from __future__ import annotations

import difflib
import functools
import os
import subprocess
import sys

from ..errors import TargetError
from .machine import CPUS, X86_LEVELS, Machine, feature_set, machine_for


#: the environment variable naming a CPU that ``mb.Target("llvm")`` compiles for in place of
#: this one, with that CPU's features and machine model: ``MLCBOOK_HOST_CPU=znver3`` runs
#: everything, the test suite included, as on an AVX2-only Zen 3 (its code runs here when
#: this CPU has its features; a CPU with features this one lacks is refused)
HOST_CPU_ENV = "MLCBOOK_HOST_CPU"


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
        host_cpu, real = _host_cpu(llvm, host_triple)
        default_cpu = host_cpu if on_host else "generic"
        self.cpu = opts.get("-mcpu", default_cpu)
        try:
            llvm.Target.from_triple(self.triple)
        except RuntimeError as e:
            raise TargetError(f"LLVM does not know the triple {self.triple!r}: {e}") from None
        # LLVM aborts the whole process on some CPU names it does not know (it goes on
        # with a CPU that lacks 64-bit mode), and ignores unknown features: check first.
        if "-mcpu" in opts and self.cpu != host_cpu:
            _check_cpu(self.cpu, self.triple)
        if "-mattr" in opts:
            self.features = opts["-mattr"]
            _check_features(self.features, self.triple)
        elif on_host and self.cpu == host_cpu and real:
            self.features = llvm.get_host_cpu_features().flatten()
        elif on_host and self.cpu == host_cpu:
            # a CPU standing for this one: its features spelt out, as the host's are
            self.features = ",".join(f"+{f}" for f in sorted(_named_features(host_cpu,
                                                                             self.arch)))
        elif self.cpu in X86_LEVELS and self.arch == "x86_64":
            self.features = ",".join(X86_LEVELS[self.cpu])
        else:
            self.features = ""

    @staticmethod
    def host() -> "Target":
        return Target("llvm")

    @property
    def is_host(self) -> bool:
        """Whether code for this target can run in this process."""
        return _arch(self.triple) == _arch(llvm_binding().get_process_triple())

    def missing_features(self) -> list[str]:
        """The features this target has (its CPU's, changed by ``-mattr``) that this
        machine's CPU lacks: code for it would stop with an illegal instruction here. Empty
        for another architecture (:attr:`is_host` says whether that code can run at all)."""
        if not self.is_host:
            return []
        return _lacking(feature_set(self.cpu, self.arch, self.features), self.arch)

    @functools.cached_property
    def machine(self) -> Machine:
        """What one core of this target can do (:mod:`mlcbook.codegen.machine`): vector
        width and registers, FMA and load throughput, caches, dot-product instructions.

            >>> m = mb.Target("llvm -mcpu=znver3").machine
            >>> m.vector_bits, m.fma_per_cycle, m.l2_bytes, m.dot_product("u8i8")
            (256, 2.0, 524288, None)
        """
        llvm = llvm_binding()
        host = self.is_host and self.cpu == llvm.get_host_cpu_name()
        return machine_for(self.cpu, self.arch, self.features, host)

    @property
    def vector_bits(self) -> int:
        """Width of the widest SIMD registers the features enable (128 if unknown)."""
        return self.machine.vector_bits

    def has_feature(self, name: str) -> bool:
        """Whether the target has the CPU feature ``name`` (LLVM's name: ``"avx512vnni"``):
        what the named CPU is known to have, changed by ``-mattr`` (or the level's or the
        host's features) as LLVM changes it.

            >>> mb.Target("llvm -mcpu=znver4").has_feature("avx512vnni")
            True
        """
        return name in feature_set(self.cpu, self.arch, self.features)

    @property
    def arch(self) -> str:
        """The architecture part of the triple: ``"x86_64"``, ``"aarch64"``, ..."""
        return _arch(self.triple)

    @property
    def vector_registers(self) -> int:
        """How many SIMD registers the code can use: 32 on AVX-512 and on 64-bit ARM (NEON,
        SVE), 16 on other x86-64 (SSE, AVX2). A register tile must fit in them, with a few to
        spare for the values it is updated from."""
        return self.machine.vector_registers

    def vector_lanes(self, dtype: str = "float32") -> int:
        """How many ``dtype`` values fit in one vector register: 16 float32 on AVX-512."""
        return self.machine.lanes(dtype)

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


def _arch(triple: str) -> str:
    return triple.split("-")[0]


def _normalize_triple(triple: str) -> str:
    parts = triple.split("-")
    if len(parts) == 3 and parts[1] in ("linux", "windows", "darwin", "none"):
        return f"{parts[0]}-unknown-{parts[1]}-{parts[2]}"
    return triple


_LISTING = """
import sys
import llvmlite.binding as llvm
llvm.initialize_all_targets()
llvm.initialize_all_asmprinters()
llvm.Target.from_triple(sys.argv[1]).create_target_machine(cpu="help", features="")
"""


@functools.lru_cache(maxsize=None)
def llvm_names(triple: str) -> tuple[frozenset[str], frozenset[str]]:
    """The CPU names and feature names LLVM knows for ``triple``, as ``(cpus, features)``.

        >>> "znver4" in llvm_names("x86_64-unknown-linux-gnu")[0]
        True

    LLVM prints them only as its ``-mcpu=help`` listing on the C-level stderr, so a child
    process prints it and this one parses it (once per triple). Empty sets if that fails.
    """
    try:
        done = subprocess.run([sys.executable, "-c", _LISTING, triple], capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return frozenset(), frozenset()
    sections: dict[str, set[str]] = {"CPUs": set(), "features": set()}
    current = None
    for line in done.stderr.splitlines():
        if line.startswith("Available "):
            current = sections.get(line.split()[1])
        elif current is not None and line.startswith("  ") and " - " in line:
            current.add(line.split()[0])
    return frozenset(sections["CPUs"]), frozenset(sections["features"])


def _suggest(name: str, known) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""


def _host_cpu(llvm, triple: str) -> tuple[str, bool]:
    """The CPU the default target compiles for, and whether it is this one: the CPU named by
    :data:`HOST_CPU_ENV` if set (checked: LLVM knows it, this CPU has its features)."""
    real = llvm.get_host_cpu_name()
    name = os.environ.get(HOST_CPU_ENV, "").strip()
    if not name or name == real:
        return real, True
    _check_cpu(name, triple)
    lacks = _lacking(_named_features(name, _arch(triple)), _arch(triple))
    if lacks:
        raise TargetError(f"{HOST_CPU_ENV}={name!r} names a CPU with features this one "
                          f"({real}) lacks: {', '.join(lacks[:6])}; its code would stop with "
                          "an illegal instruction. Instead: name a CPU this one can stand for "
                          "(e.g. x86-64-v3 or znver3 on an AVX-512 machine), or unset it")
    return name, False


def _named_features(cpu: str, arch: str) -> frozenset[str]:
    """The features of ``-mcpu=cpu`` alone: its row of the table, or its x86-64 level's."""
    return feature_set(cpu, arch, ",".join(X86_LEVELS.get(cpu, ())))


@functools.lru_cache(maxsize=None)
def _host_features(arch: str) -> frozenset[str]:
    """This machine's CPU's features (it does not change while the process runs)."""
    llvm = llvm_binding()
    return feature_set(llvm.get_host_cpu_name(), arch, llvm.get_host_cpu_features().flatten())


def _lacking(need: frozenset, arch: str) -> list[str]:
    """``+feature`` for each of ``need`` this machine's CPU lacks."""
    return sorted(f"+{f}" for f in need - _host_features(arch))


def _check_cpu(cpu: str, triple: str) -> None:
    arch = _arch(triple)
    row = CPUS.get(cpu)
    if cpu == "generic" or (row is not None and row.arch == arch) or (
            cpu in X86_LEVELS and arch == "x86_64"):
        return
    cpus = llvm_names(triple)[0]
    if cpu in cpus:
        return
    known = cpus or {c for c, r in CPUS.items() if r.arch == arch}
    raise TargetError(f"unknown CPU {cpu!r} in -mcpu= for {triple}: LLVM does not know it "
                      f"(and would stop the process); {_suggest(cpu, known)}Instead: use a CPU "
                      f"name LLVM knows, e.g. {', '.join(sorted(known)[:6])}, or 'generic'")


def _check_features(features: str, triple: str) -> None:
    words = [w for w in features.split(",") if w]
    for word in words:
        if word[0] not in "+-" or len(word) < 2:
            raise TargetError(f"the feature {word!r} in -mattr={features} has no sign: "
                              f"Instead: write +{word.lstrip('+-')} to enable it or "
                              f"-{word.lstrip('+-')} to disable it")
    known = llvm_names(triple)[1]
    if not known:
        return
    for word in words:
        if word[1:] not in known:
            raise TargetError(f"unknown CPU feature {word[1:]!r} in -mattr={features} for "
                              f"{triple}: LLVM would silently ignore it; "
                              f"{_suggest(word[1:], known)}Instead: use LLVM's feature names "
                              "(avx2, fma, avx512f, ...) or leave it out")
