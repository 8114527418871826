"""A compiled kernel: a native function you call on numpy arrays.

    >>> kernel = mb.build(func)
    >>> kernel(a, b, c)                # writes c in place (destination-passing style)
    >>> c = kernel(a, b)               # or: pass only the inputs and get new outputs back
    >>> print(kernel.llvm_ir())        # what mlcbook generated; .asm() what LLVM made of it

Every call checks its arguments before native code touches them — count, numpy array,
dtype, shape, C-contiguity, alignment, writability of outputs, and that no output overlaps
another argument (the code assumes ``noalias``) — and raises
:class:`~mlcbook.errors.ArgumentError` naming the parameter.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import ArgumentError, ArtifactError, BuildError, ExecutionError
from ..paths import output_file
from . import thread_pool


def allocation_failed(name: str) -> ExecutionError:
    """The error of kernel ``name`` whose temporary buffer could not be allocated."""
    return ExecutionError(
        f"kernel {name!r} could not allocate its temporary buffers: the system refused the "
        "memory (a memory limit, or not enough free memory), and the kernel ran nothing. "
        "Instead: free memory or raise the limit, or compile for a smaller batch or input")


class Kernel:
    """One compiled PrimFunc. Build with :func:`mlcbook.build`; call on numpy arrays."""

    def __init__(self, lib, entry, lowered=None):
        self._lib, self.entry, self.lowered = lib, entry, lowered
        self.name = entry.name
        self.params = entry.params
        self.num_outputs = entry.num_outputs
        self._cfunc = None

    # --- calling -------------------------------------------------------------------------------
    def native_address(self) -> int:
        """The compiled function's address (what :meth:`native_function` calls)."""
        return self._lib.address(self.entry.symbol)

    def native_function(self):
        """The compiled function as a ctypes callable, ``f(*addresses, launcher)``: one data
        address per parameter, then :func:`~mlcbook.runtime.thread_pool.launcher_address`.
        No checks at all (for runtimes that checked the arrays once, e.g. an executable)."""
        if self._cfunc is None:
            addr = self.native_address()
            # an entry that allocates on the heap returns a status (see EntryInfo.may_fail)
            ret = ctypes.c_int32 if self.entry.may_fail else None
            proto = ctypes.CFUNCTYPE(ret, *([ctypes.c_void_p] * (len(self.params) + 1)))
            self._cfunc = proto(addr)
        return self._cfunc

    def __call__(self, *args):
        n_in = len(self.params) - self.num_outputs
        if len(args) == n_in and self.num_outputs:
            outs = [np.empty(p.shape, p.dtype) for p in self.params[n_in:]]
            self(*args, *outs)
            return outs[0] if len(outs) == 1 else tuple(outs)
        ptrs = self.check_args(args)
        self.run_unchecked(ptrs)
        return None

    def run_unchecked(self, ptrs) -> None:
        """Call the native code with raw data pointers (from :meth:`check_args`)."""
        if self.native_function()(*ptrs, thread_pool.launcher_address()):
            raise allocation_failed(self.name)

    def check_args(self, args) -> list[int]:
        """Validate ``args`` against the parameters; return their data pointers."""
        params = self.params
        n_in = len(params) - self.num_outputs
        if len(args) != len(params):
            names = ", ".join(p.name for p in params)
            raise ArgumentError(
                f"kernel {self.name!r} takes {len(params)} arrays ({names}) — or only its "
                f"{n_in} inputs, to get new outputs back — but was given {len(args)}")
        ptrs = []
        for k, (a, p) in enumerate(zip(args, params)):
            what = f"argument {k} ({p.name!r}) of kernel {self.name!r}"
            if not isinstance(a, np.ndarray):
                raise ArgumentError(f"{what} must be a numpy array, got {type(a).__name__}; "
                                    f"use np.asarray(x, dtype={p.dtype!r})")
            if a.dtype != np.dtype(p.dtype):
                raise ArgumentError(f"{what} has dtype {a.dtype} but {p.name} is {p.dtype}; "
                                    f"convert it with x.astype({p.dtype!r})")
            if a.shape != tuple(p.shape):
                raise ArgumentError(f"{what} has shape {a.shape} but {p.name} has shape "
                                    f"{tuple(p.shape)}")
            if not a.flags.c_contiguous:
                raise ArgumentError(f"{what} is not C-contiguous (a transposed or strided "
                                    "view?); pass np.ascontiguousarray(x)")
            if not a.flags.aligned:
                raise ArgumentError(f"{what} is not aligned to its element size; pass a copy")
            if k >= n_in and not a.flags.writeable:
                raise ArgumentError(f"{what} is an output but the array is read-only; pass a "
                                    "writable array")
            ptrs.append(a.__array_interface__["data"][0])
        for k in range(n_in, len(args)):
            for j, other in enumerate(args):
                if j != k and np.may_share_memory(args[k], other):
                    raise ArgumentError(
                        f"output {params[k].name!r} of kernel {self.name!r} overlaps argument "
                        f"{j} ({params[j].name!r}); the compiled code assumes outputs do not "
                        "alias other arguments: pass a separate array")
        return ptrs

    # --- inspection ----------------------------------------------------------------------------
    def llvm_ir(self, optimized: bool = False) -> str:
        """The LLVM IR mlcbook generated (``optimized=True``: after LLVM's -O3 passes)."""
        self._need("llvm_ir")
        return self._lib.optimized_ir if optimized else self._lib.llvm_ir

    def asm(self) -> str:
        """The target assembly of the optimized module."""
        self._need("asm")
        return self._lib.asm()

    def export_object(self, path) -> str:
        """Write a relocatable object file; load it back with :func:`mlcbook.runtime.load_kernel`."""
        path = output_file(path, "the object file", ArtifactError)
        data = self.object_code()
        try:
            path.write_bytes(data)
        except OSError as e:
            raise ArtifactError(f"cannot write the object file to {str(path)!r}: "
                                f"{e.strerror or e}; Instead: choose a path you can write") \
                from None
        return str(path)

    def object_code(self) -> bytes:
        """The relocatable object file of this kernel's library (all kernels built with it)."""
        self._need("object_code")
        return self._lib.object_code()

    @property
    def target(self):
        """The :class:`~mlcbook.Target` the code was compiled for (None if unknown)."""
        return getattr(self._lib, "target", None)

    def _need(self, what: str) -> None:
        if not hasattr(self._lib, what):
            raise BuildError(f"kernel {self.name!r} was loaded from a binary and has no {what}; "
                             "build it from loop IR to inspect it")

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.params)
        where = getattr(getattr(self._lib, "target", None), "triple", "loaded object")
        return f"<Kernel {self.name}({sig}) for {where}>"


class KernelLibrary:
    """The kernels of a module with several PrimFuncs: ``lib["name"](...)``; calling the
    library calls its ``main`` (or only) kernel."""

    def __init__(self, kernels: dict[str, Kernel], lib=None):
        self.kernels, self._lib = dict(kernels), lib

    def __getitem__(self, name: str) -> Kernel:
        if name not in self.kernels:
            raise ArgumentError(
                f"no kernel named {name!r}; this library has: {', '.join(self.kernels)}")
        return self.kernels[name]

    def __contains__(self, name: str) -> bool:
        return name in self.kernels

    def __iter__(self):
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def main(self) -> Kernel:
        if "main" in self.kernels:
            return self.kernels["main"]
        if len(self.kernels) == 1:
            return next(iter(self.kernels.values()))
        raise ArgumentError(f"this library has kernels {', '.join(self.kernels)} and none is "
                            "named 'main'; pick one with lib['name']")

    def __call__(self, *args):
        return self.main()(*args)

    def llvm_ir(self, optimized: bool = False) -> str:
        return next(iter(self.kernels.values())).llvm_ir(optimized)

    def asm(self) -> str:
        return next(iter(self.kernels.values())).asm()

    def export_object(self, path) -> str:
        return next(iter(self.kernels.values())).export_object(path)

    def __repr__(self) -> str:
        return f"<KernelLibrary {', '.join(self.kernels)}>"
