"""What a PrimFunc expects from the numpy arrays it is run on, and the check of a call.

    >>> sig = Signature.of(func)
    >>> str(sig)                       # "A: float32[16, 16], B: float32[16] (output)"
    >>> sig.check([a, b])              # raises ArgumentError naming the parameter

Shared by the interpreter and the reference evaluator so both refuse the same calls with
the same words.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentError
from .function import IRModule, PrimFunc

__all__ = ["Signature", "as_prim_func"]


def as_prim_func(obj) -> PrimFunc:
    """``obj`` if it is a PrimFunc, the ``main`` (or only) function of an IRModule, else an
    :class:`~mlcbook.errors.ArgumentError`."""
    if isinstance(obj, IRModule):
        func = obj.main()
        if not isinstance(func, PrimFunc):
            raise ArgumentError(
                f"the module's main function is a {type(func).__name__}, not a PrimFunc; the "
                "interpreter runs loop-level functions: pass mod['<name of a PrimFunc>']")
        return func
    if not isinstance(obj, PrimFunc):
        raise ArgumentError(
            f"func_or_module must be a PrimFunc or an IRModule, got {type(obj).__name__}; "
            "build one with mb.te.create_prim_func or @T.prim_func")
    return obj


@dataclass(frozen=True)
class Signature:
    """Name, ``(name, shape, dtype)`` of each parameter, and how many are inputs (the rest
    are outputs). Holds no reference to the function."""

    name: str
    params: tuple
    num_inputs: int

    @staticmethod
    def of(func: PrimFunc) -> "Signature":
        params = tuple((b.name, tuple(b.shape), b.dtype) for b in func.params)
        return Signature(func.name, params, len(func.params) - func.num_outputs)

    def __str__(self) -> str:
        parts = []
        for k, (name, shape, dtype) in enumerate(self.params):
            out = " (output)" if k >= self.num_inputs else ""
            parts.append(f"{name}: {dtype}{list(shape)}{out}")
        return ", ".join(parts)

    def check(self, arrays) -> None:
        """Raise :class:`~mlcbook.errors.ArgumentError` unless ``arrays`` has one numpy array
        per parameter of the right shape and dtype, outputs writable and not aliasing."""
        if len(arrays) != len(self.params):
            raise ArgumentError(
                f"function {self.name!r} takes {len(self.params)} arrays ({self}) "
                f"but got {len(arrays)}; pass one numpy array per parameter, inputs first and "
                "outputs last")
        for k, (arr, (name, shape, dtype)) in enumerate(zip(arrays, self.params)):
            what = f"parameter {name!r} (argument {k + 1} of {self.name!r})"
            if not isinstance(arr, np.ndarray):
                raise ArgumentError(
                    f"{what} must be a numpy array, got {type(arr).__name__}; pass "
                    f"np.asarray(value, dtype={dtype!r})")
            if arr.dtype.name != dtype:
                raise ArgumentError(
                    f"{what} expects dtype {dtype} but got an array of dtype {arr.dtype.name}; "
                    f"convert it with .astype({dtype!r})")
            if tuple(arr.shape) != tuple(shape):
                raise ArgumentError(
                    f"{what} expects shape {tuple(shape)} but got an array of shape "
                    f"{tuple(arr.shape)}")
            if k >= self.num_inputs:
                self._check_output(arrays, k, arr, what)

    def _check_output(self, arrays, k: int, arr: np.ndarray, what: str) -> None:
        name, shape, dtype = self.params[k]
        if not arr.flags.writeable:
            raise ArgumentError(
                f"output {what} is a read-only array; pass a writable array, e.g. "
                f"np.empty({tuple(shape)}, {dtype!r})")
        for j, (other, (oname, _, _)) in enumerate(zip(arrays, self.params)):
            if j != k and isinstance(other, np.ndarray) and np.shares_memory(arr, other):
                raise ArgumentError(
                    f"output {what} shares memory with parameter {oname!r}; the "
                    "interpreter reads all inputs before writing, unlike a compiled "
                    "kernel, so pass a separate array (e.g. a .copy())")
