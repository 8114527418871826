"""Code generation: lowered loop IR -> LLVM IR -> machine code, via llvmlite.

    >>> ir_text, entries = codegen(mb.lower(func), Target().triple)
    >>> lib = compile_ir(ir_text, entries, Target())

Users call :func:`mlcbook.build`, which lowers, generates, compiles and wraps the result
in a callable kernel (:mod:`mlcbook.runtime`).
"""

from .jit import CompiledModule, compile_ir
from .llvm_module import EntryInfo, ParamInfo, codegen
from .machine import DotProduct, Machine
from .target import Target

__all__ = ["Target", "Machine", "DotProduct", "codegen", "compile_ir", "CompiledModule", "EntryInfo", "ParamInfo"]
