"""LLVM IR text -> optimized machine code, through llvmlite.

Optimization uses LLVM's new pass manager (``create_pass_builder`` with pipeline tuning
options at ``-O3``); llvmlite >= 0.45 has no legacy pass manager. Code for this machine is
loaded with MCJIT and its entry points are looked up by symbol; code for another triple can
only be shown (``asm``) or written out (``object_code``).

    >>> lib = compile_ir(ir_text, entries, Target())
    >>> lib.address("mlcb_main")                      # an int: the native function
"""

from __future__ import annotations

import ctypes.util
import functools

from ..errors import BuildError, ForeignTargetError, MissingFeatureError
from .target import Target, llvm_binding


@functools.lru_cache(maxsize=None)
def load_libm() -> None:
    # math functions the kernels call (expf, tanhf, erff, ...) must be visible to the JIT
    llvm = llvm_binding()
    name = ctypes.util.find_library("m")
    if name:
        llvm.load_library_permanently(name)


def _optimize(mod, tm, level: int = 3, slp: bool = True) -> None:
    llvm = llvm_binding()
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = slp
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)


class CompiledModule:
    """Machine code for one LLVM module, with its IR before and after optimization."""

    def __init__(self, ir_text: str, entries: list, target: Target,
                 cannot_run: str | None = None):
        llvm = llvm_binding()
        self.target, self.entries = target, entries
        self.llvm_ir = ir_text
        try:
            mod = llvm.parse_assembly(ir_text)
            mod.verify()
        except RuntimeError as e:
            raise BuildError(f"mlcbook generated invalid LLVM IR (a bug in mlcbook): {e}") from None
        self._tm = target.target_machine(jit=target.is_host)
        mod.triple = self._tm.triple
        mod.data_layout = str(self._tm.target_data)
        # LLVM 22's SLP vectorizer narrows a scalar uint64 -> float conversion of a value it
        # thinks small (uitofp(xor(zext i1 to i64, -1)) became 2**32, not 2**64): modules that
        # convert scalar uint64 to float are optimized without it (our kernels vectorize
        # their loops themselves; SLP only packs what is left scalar)
        _optimize(mod, self._tm, slp="uitofp i64 " not in ir_text)
        self.optimized_ir = str(mod)
        self._engine = None
        self._missing = target.missing_features()
        self.cannot_run = cannot_run
        if target.is_host and not self._missing and cannot_run is None:
            load_libm()
            self._engine = llvm.create_mcjit_compiler(mod, self._tm)
            self._engine.finalize_object()

    def address(self, symbol: str) -> int:
        if self.cannot_run is not None:
            raise MissingFeatureError(self.cannot_run)
        if self._engine is None and self._missing:
            raise ForeignTargetError(
                f"this kernel was compiled for the CPU {self.target.cpu!r} with "
                f"{', '.join(self._missing[:6])}, which this CPU ({llvm_binding().get_host_cpu_name()}) "
                "lacks: it would stop with an illegal instruction. Instead: compile for 'llvm' "
                "(this CPU) or a level it has (e.g. 'llvm -mcpu=x86-64-v2'); .asm(), the object "
                "code and export still work")
        if self._engine is None:
            raise ForeignTargetError(
                f"this kernel was compiled for {self.target.triple}, not for this machine; it "
                "can show its .asm() and .llvm_ir() and be exported, but not run here")
        addr = self._engine.get_function_address(symbol)
        if not addr:
            raise BuildError(f"symbol {symbol!r} not found in the compiled module")
        return addr

    def global_address(self, symbol: str) -> int:
        return self._engine.get_global_value_address(symbol)

    def asm(self) -> str:
        """The assembly of the optimized module for the target."""
        return self._fresh_tm().emit_assembly(self._reparse())

    def object_code(self) -> bytes:
        """A relocatable (position-independent) object file of the optimized module."""
        return self._fresh_tm().emit_object(self._reparse())

    def _fresh_tm(self):
        return self.target.target_machine(jit=False)

    def _reparse(self):
        llvm = llvm_binding()
        mod = llvm.parse_assembly(self.optimized_ir)
        mod.triple = self.target.triple
        return mod


def compile_ir(ir_text: str, entries: list, target: Target,
               cannot_run: str | None = None) -> CompiledModule:
    """Compile LLVM IR for ``target``; ``cannot_run`` (a reason) keeps it from running here."""
    return CompiledModule(ir_text, entries, target, cannot_run)
