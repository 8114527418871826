"""The fast interpreter: a loop-IR program run on numpy arrays at Python speed.

    >>> C = np.empty((16, 16), "float32")
    >>> interpret(func, A, B, C)       # writes C in place, returns None

It means exactly what the reference evaluator (:func:`mlcbook.tir.evaluate`, whose module
:mod:`mlcbook.tir.reference` is the specification of the IR's semantics) means, and is fast
enough for a 128x128x128 matmul: a function is translated once into Python source
(:mod:`.interpreter_source`), compiled, and cached per function object. ``interpret``
copies the arguments into flat arrays, runs the code, and copies the outputs back.

Unlike the reference evaluator, it leaves out the bounds checks that the loop ranges prove
unnecessary (with :func:`~mlcbook.tir.analysis.int_bounds`, as the code generator does) and
hoists index arithmetic out of inner loops; an access or binding it cannot prove in range
is checked, and a violation raises :class:`~mlcbook.errors.IndexOutOfBoundsError` (or
``BindingMismatchError``) naming the access and the value.
"""

from __future__ import annotations

import weakref

from ..errors import ExecutionError, TIRError
from .arguments import Signature, as_prim_func
from .function import PrimFunc
from .interpreter_source import from_flat, to_flat, translate
from .scalar import GLOBALS, Fault
from .verify import verify

__all__ = ["interpret"]


def interpret(func_or_module, *arrays) -> None:
    """Run a PrimFunc (or the ``main`` / only PrimFunc of an IRModule) on numpy arrays.

    Pass one array per parameter, inputs first and outputs last; the outputs are written in
    place. Raises :class:`~mlcbook.errors.ArgumentError` naming the parameter when an array
    has the wrong type, shape or dtype, or an output is read-only.

        >>> interpret(matmul, a, b, c)    # c[...] = a @ b
    """
    func = as_prim_func(func_or_module)
    kernel = _CACHE.get(func)
    if kernel is None:
        kernel = _CACHE[func] = _compile(func)
    kernel.run(arrays)


_CACHE: "weakref.WeakKeyDictionary[PrimFunc, _Kernel]" = weakref.WeakKeyDictionary()


class _Kernel:
    """A PrimFunc translated to a Python function over flat arrays (holds no reference to it)."""

    def __init__(self, func: PrimFunc, fn, source: str, line_where: list[str]):
        self.signature = Signature.of(func)
        self.fn, self.source, self.line_where = fn, source, line_where
        self.filename = fn.__code__.co_filename

    def run(self, arrays) -> None:
        sig = self.signature
        sig.check(arrays)
        flats = [to_flat(a, dtype) for a, (_, _, dtype) in zip(arrays, sig.params)]
        try:
            self.fn(*flats)
        except Fault as err:
            raise ExecutionError(f"{err} in {self._where(err)}; guard the operation "
                                 "(e.g. with T.select) or fix the data") from None
        for k in range(sig.num_inputs, len(sig.params)):
            _, shape, dtype = sig.params[k]
            arrays[k][...] = from_flat(flats[k], dtype, shape)

    def _where(self, err: BaseException) -> str:
        tb, line = err.__traceback__, None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        if line is None or not 0 < line <= len(self.line_where):
            return f"function {self.signature.name!r}"
        return self.line_where[line - 1]


def _compile(func: PrimFunc) -> _Kernel:
    filename = f"<mlcbook.interpret:{func.name}>"
    try:
        verify(func)
        py = translate(func)
        code = compile(py.source, filename, "exec")
    except (SyntaxError, RecursionError, MemoryError) as err:
        raise TIRError(
            f"function {func.name!r} is too deeply nested for the interpreter ({err}); "
            "split the long expression into several blocks") from None
    namespace = dict(GLOBALS, _S=py.messages, _T=py.templates)
    exec(code, namespace)
    return _Kernel(func, namespace["_kernel"], py.source, py.line_where)
