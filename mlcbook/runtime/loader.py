"""Load kernels back from files written by :meth:`Kernel.export_object`.

An object file is native code: load only files you trust. Saved models (``mb.load``)
check their object file's structure and hashes before it gets here.

    >>> kernel.export_object("mm.o")
    >>> k = load_kernel("mm.o")          # through llvmlite's loader: no linker needed
    >>> k(a, b, c)

An object file can also be linked into a shared library by a C toolchain and loaded the
same way::

    $ cc -shared -o mm.so mm.o -lm
    >>> k = load_kernel("mm.so")         # through ctypes

Each object carries ``mlcb_meta``, the JSON description of its entry points (names,
parameter shapes and dtypes), so a kernel checks its arguments after loading exactly as
it did when built.
"""

from __future__ import annotations

import ctypes
import json
import os

from ..codegen.llvm_module import META_SYMBOL, EntryInfo
from ..codegen.target import Target, llvm_binding
from ..codegen.jit import load_libm
from ..errors import BuildError, KernelLoadError
from .elf import check_object
from .kernel import Kernel, KernelLibrary


class _ObjectLib:
    """An object file loaded into an MCJIT engine (llvmlite's runtime linker)."""

    def __init__(self, data: bytes, target=None):
        llvm = llvm_binding()
        load_libm()
        tm = llvm.Target.from_default_triple().create_target_machine(jit=True)
        empty = llvm.parse_assembly("")
        empty.triple = tm.triple
        self.target, self._data = target, bytes(data)
        self._engine = llvm.create_mcjit_compiler(empty, tm)
        self._object = llvm.ObjectFileRef.from_data(self._data)
        self._engine.add_object_file(self._object)
        self._engine.finalize_object()

    def object_code(self) -> bytes:
        """The object file this library was loaded from (to save it again)."""
        return self._data

    def address(self, symbol: str) -> int:
        addr = self._engine.get_function_address(symbol)
        if not addr:
            raise BuildError(f"symbol {symbol!r} is missing from the loaded object")
        return addr

    def meta(self) -> str:
        addr = self._engine.get_global_value_address(META_SYMBOL)
        return ctypes.string_at(addr).decode() if addr else ""


class _SharedLib:
    """A shared library loaded with ctypes."""

    def __init__(self, path: str):
        self._dll = ctypes.CDLL(os.path.abspath(path))

    def address(self, symbol: str) -> int:
        return ctypes.cast(getattr(self._dll, symbol), ctypes.c_void_p).value

    def meta(self) -> str:
        try:
            c = ctypes.c_char.in_dll(self._dll, META_SYMBOL)
        except ValueError:
            return ""
        return ctypes.string_at(ctypes.addressof(c)).decode()


def load_kernel(path):
    """Load a kernel (or a :class:`KernelLibrary`) from an object file or a shared library."""
    path = str(path)
    if not os.path.exists(path):
        raise KernelLoadError(f"no such file: {path!r}; give the path Kernel.export_object wrote")
    if path.endswith((".so", ".dylib", ".dll")):
        lib = _SharedLib(path)
    else:
        with open(path, "rb") as f:
            data = f.read()
        # LLVM's loader crashes on a malformed object: check its structure first
        info = check_object(data, Target().triple.split("-")[0], repr(path))
        if META_SYMBOL not in info.defined:
            raise KernelLoadError(f"{path!r} has no {META_SYMBOL} description: it was not "
                                  "written by mlcbook's Kernel.export_object")
        lib = _ObjectLib(data)
    meta = lib.meta()
    if not meta:
        raise KernelLoadError(f"{path!r} has no {META_SYMBOL} description: it was not written by "
                         "mlcbook's Kernel.export_object")
    entries = [EntryInfo.from_json(d) for d in json.loads(meta)]
    kernels = {e.name: Kernel(lib, e) for e in entries}
    return next(iter(kernels.values())) if len(kernels) == 1 else KernelLibrary(kernels, lib)


def load_object_code(data: bytes, entries, target=None) -> dict[str, Kernel]:
    """Kernels (name -> :class:`Kernel`) of the entry points ``entries`` (EntryInfo) of an
    object file's bytes. The caller has checked the object (:mod:`mlcbook.runtime.elf`): LLVM's
    loader trusts it, and a malformed object crashes the process."""
    lib = _ObjectLib(data, target)
    return {e.name: Kernel(lib, e) for e in entries}
