"""A lowered IRModule -> one LLVM module: an entry function per PrimFunc, plus metadata.

The calling convention of an entry (what :mod:`mlcbook.runtime` calls) is C's::

    void mlcb_<name>(void *A, void *B, ..., void *C, void *launcher);

(``int``, 0 or ``ALLOC_FAILED``, for an entry that allocates on the heap: its EntryInfo says
``may_fail``);

one data pointer per buffer parameter, in order, then the runtime's parallel launcher
``void launcher(void (*body)(int64_t, int64_t, void *), int64_t n, void *closure)``.
Buffer pointers are ``noalias`` (the runtime rejects outputs that overlap another
argument), ``dereferenceable`` for the buffer's size and aligned to the element size.

The module also defines ``mlcb_meta``, a JSON string describing each entry (parameter
names, shapes, dtypes, outputs), so that an exported object file describes itself.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

import llvmlite.ir as ir

from ..errors import BuildError
from ..tir.function import IRModule, PrimFunc
from .llvm_func import FunctionEmitter, heap_allocations
from .llvm_types import I32, PTR, VOID, itemsize

META_SYMBOL = "mlcb_meta"


@dataclass(frozen=True)
class ParamInfo:
    name: str
    shape: tuple
    dtype: str


@dataclass(frozen=True)
class EntryInfo:
    """What the runtime needs to call one compiled PrimFunc."""

    name: str
    symbol: str
    params: tuple
    num_outputs: int
    #: the entry returns an int status (0, or ALLOC_FAILED) instead of nothing: it allocates
    #: on the heap (see mlcbook.codegen.llvm_func)
    may_fail: bool = False

    def to_json(self) -> dict:
        d = {"name": self.name, "symbol": self.symbol, "num_outputs": self.num_outputs,
             "params": [[p.name, list(p.shape), p.dtype] for p in self.params]}
        if self.may_fail:
            d["may_fail"] = True
        return d

    @staticmethod
    def from_json(d: dict) -> "EntryInfo":
        return EntryInfo(d["name"], d["symbol"],
                         tuple(ParamInfo(n, tuple(s), t) for n, s, t in d["params"]),
                         d["num_outputs"], d.get("may_fail") is True)


class ModuleContext:
    """The LLVM module being built: declarations shared by all functions, fresh names."""

    def __init__(self, triple: str):
        self.module = ir.Module(name="mlcbook")
        self.module.triple = triple
        self._counts: dict[str, int] = {}

    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, fnty, name=name)

    def fresh(self, base: str) -> str:
        k = self._counts.get(base, 0)
        self._counts[base] = k + 1
        return f"{base}_{k}"


def codegen(mod: IRModule, triple: str, fastmath: bool = False) -> tuple[str, list[EntryInfo]]:
    """Emit LLVM IR (text) for every lowered PrimFunc of ``mod``."""
    cg = ModuleContext(triple)
    entries = []
    for key, func in mod.items():
        if not isinstance(func, PrimFunc):
            raise BuildError(
                f"function {key!r} of the module is not a PrimFunc; mb.build compiles loop-level "
                "functions only (whole models go through mb.compile)")
        entries.append(_entry(cg, key, func, fastmath))
    meta = json.dumps([e.to_json() for e in entries]).encode() + b"\0"
    g = ir.GlobalVariable(cg.module, ir.ArrayType(ir.IntType(8), len(meta)), META_SYMBOL)
    g.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(meta)), bytearray(meta))
    g.global_constant = True
    return str(cg.module), entries


def _symbol(name: str) -> str:
    return "mlcb_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _entry(cg: ModuleContext, key: str, func: PrimFunc, fastmath: bool) -> EntryInfo:
    shapes = dict(func.attrs).get("param_shapes") or tuple(b.shape for b in func.params)
    params = tuple(ParamInfo(b.name, tuple(s), b.dtype) for b, s in zip(func.params, shapes))
    symbol = _symbol(key)
    may_fail = heap_allocations(func.body)
    fnty = ir.FunctionType(I32 if may_fail else VOID, [PTR] * (len(func.params) + 1))
    fn = ir.Function(cg.module, fnty, name=symbol)
    fn.attributes.add("nounwind")
    for arg, buf in zip(fn.args, func.params):
        arg.name = buf.name
        arg.add_attribute("noalias")
        arg.attributes.align = itemsize(buf.dtype)
        arg.attributes.dereferenceable = math.prod(buf.shape) * itemsize(buf.dtype)
    launcher = fn.args[-1]
    launcher.name = "launcher"
    em = FunctionEmitter(cg, fn, symbol, launcher, fastmath)
    for arg, buf in zip(fn.args, func.params):
        em.buffers[buf] = arg
    em.stmt(func.body)
    em.finish()
    return EntryInfo(key, symbol, params, func.num_outputs, may_fail)
