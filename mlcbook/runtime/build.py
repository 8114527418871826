"""``mb.build``: loop IR -> a callable native kernel, cached by program structure.

    >>> kernel = mb.build(func)                              # this CPU, IEEE float math
    >>> kernel = mb.build(sch.mod, target="llvm -mcpu=skylake-avx512", fastmath=True)
    >>> mb.build(func) is kernel                             # identical program: cached
    True

The steps are :func:`mlcbook.lower`, :func:`mlcbook.codegen.codegen` (LLVM IR) and
:func:`mlcbook.codegen.compile_ir` (LLVM -O3, then MCJIT). Programs that are structurally
equal (:func:`mlcbook.tir.structural_equal`) with the same target and options share one
compiled kernel, so rebuilding an unchanged program costs a structural hash.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Union

from ..codegen import Target, codegen, compile_ir
from ..codegen.tensor_calls import check_features, host_cannot_run
from ..errors import BuildError
from ..tir.function import IRModule, PrimFunc
from ..tir.structural import structural_equal, structural_hash
from ..tir.transform import lower
from .kernel import Kernel, KernelLibrary

_CACHE: "OrderedDict[tuple, list]" = OrderedDict()
_CACHE_SIZE = 256
_STATS = {"hits": 0, "misses": 0}


def build(mod_or_func: Union[PrimFunc, IRModule], target: Union[str, Target] = "llvm",
          fastmath: bool = False):
    """Compile a PrimFunc (-> :class:`Kernel`) or an IRModule of PrimFuncs (-> a
    :class:`Kernel` if it has one function, else a :class:`KernelLibrary`).

    ``fastmath=True`` lets LLVM reassociate float arithmetic (e.g. vectorize a float sum)
    and assume no NaN/inf; results may then differ from numpy in the last bits.
    """
    target = target if isinstance(target, Target) else Target(target)
    if isinstance(mod_or_func, PrimFunc):
        mod = IRModule({mod_or_func.name: mod_or_func})
    elif isinstance(mod_or_func, IRModule):
        mod = mod_or_func
    else:
        raise BuildError(
            f"mb.build takes a PrimFunc or an IRModule, got {type(mod_or_func).__name__}")
    if not any(isinstance(f, PrimFunc) for f in mod.functions.values()):
        raise BuildError("the module has no PrimFunc to compile")
    key = (structural_hash(mod), target.triple, target.cpu, target.features, bool(fastmath))
    for cached_mod, result in _CACHE.get(key, ()):
        if structural_equal(cached_mod, mod):
            _STATS["hits"] += 1
            _CACHE.move_to_end(key)
            return result
    _STATS["misses"] += 1
    lowered = lower(mod)
    check_features(lowered, target)
    ir_text, entries = codegen(lowered, target.triple, fastmath)
    lib = compile_ir(ir_text, entries, target, host_cannot_run(lowered, target, Target()))
    kernels = {e.name: Kernel(lib, e, lowered[e.name]) for e in entries}
    result = next(iter(kernels.values())) if len(kernels) == 1 else KernelLibrary(kernels, lib)
    _CACHE.setdefault(key, []).append((mod, result))
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


def cache_info() -> dict:
    """``{"hits": ..., "misses": ..., "size": ...}`` of the build cache."""
    return dict(_STATS, size=sum(len(v) for v in _CACHE.values()))


def clear_cache() -> None:
    _CACHE.clear()
