"""Building graph modules: :class:`Builder` for modules that mix graph functions and
PrimFuncs, and :data:`op`, one constructor per registered op.

    >>> bb = Builder()
    >>> x = bb.input("x", (1, 784), "float32")
    >>> with bb.function("main", [x]):
    ...     h = bb.call("matmul", x, bb.param("fc1.weight", w1), name="fc1")
    ...     h = bb.call_tir(relu_primfunc, [h], TensorType((1, 128), "float32"))
    ...     bb.ret(h)
    >>> mod = bb.get()

The same graph without a builder: ``op.relu(op.matmul(x, W, name="fc1"))``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import GraphError
from ..ops import get as get_op
from ..ops.types import TensorType, Type
from ..tir.function import IRModule, PrimFunc
from .expr import Call, CallTIR, Constant, Expr, Function, Var, call


class _OpNamespace:
    """``op.relu(x)``, ``op.conv(x, w, pads=(1, 1, 1, 1), name="conv1")``: one function per
    registered op, looked up when used so that ops added later appear too."""

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        the_op = get_op(name)

        def make(*args: Any, name: str = "", **attrs: Any) -> Call:
            return call(the_op.name, *args, name=name, **attrs)

        make.__name__ = the_op.name
        make.__doc__ = the_op.doc
        return make

    def __dir__(self):
        from ..ops import list_ops
        return list_ops()


op = _OpNamespace()


class Builder:
    """Collects graph functions and the PrimFuncs they call into one :class:`IRModule`."""

    def __init__(self, mod: IRModule | None = None):
        self._funcs: dict[str, Any] = dict(mod.functions) if mod is not None else {}
        self._current: tuple[str, tuple[Var, ...]] | None = None
        self._ret: Expr | None = None

    def input(self, name: str, shape: Sequence[int], dtype: str = "float32") -> Var:
        """A new input variable of the given shape and dtype."""
        return Var(name, TensorType(tuple(shape), dtype))

    def param(self, name: str, data: np.ndarray) -> Constant:
        """A named weight; its owner is the call that first uses it."""
        if not name:
            raise GraphError("a parameter needs a name; use Constant(data) for an anonymous constant")
        return Constant(np.asarray(data), name)

    def call(self, op_name: str, *args: Any, name: str = "", **attrs: Any) -> Call:
        """An op call (type inferred now, so mistakes show at the line that makes them)."""
        return call(op_name, *args, name=name, **attrs)

    def emit(self, expr: Expr, name: str = "") -> Expr:
        """``expr``, renamed to ``name`` if given (the name shows in the printed graph)."""
        if name and isinstance(expr, Call):
            return Call(expr.op, expr.args, expr.attrs, name)
        if name and isinstance(expr, CallTIR):
            return CallTIR(expr.func, expr.args, expr.out_type, name, expr.attrs)
        return expr

    def add_func(self, func: PrimFunc | Function, name: str | None = None) -> str:
        """Add ``func`` to the module; returns the name it got (``name`` or a fresh one if a
        different function already has it)."""
        base = name or func.name
        key, k = base, 0
        while key in self._funcs and self._funcs[key] is not func:
            k += 1
            key = f"{base}_{k}"
        self._funcs[key] = func
        return key

    def call_tir(self, func: PrimFunc | str, args: Sequence[Expr], out_type: Type,
                 name: str = "") -> CallTIR:
        """Call a PrimFunc (added to the module if given as an object) in destination-passing
        style; ``out_type`` is the type of the output(s) the call allocates."""
        if isinstance(func, PrimFunc):
            key = self.add_func(func)
        elif isinstance(func, str):
            if func not in self._funcs:
                raise GraphError(f"call_tir: no function {func!r} in the module yet; pass the "
                                 "PrimFunc object instead of its name")
            key = func
        else:
            raise GraphError(f"call_tir needs a PrimFunc or its name, got {func!r}")
        return CallTIR(key, tuple(args), out_type, name)

    @contextmanager
    def function(self, name: str, params: Sequence[Var]) -> Iterator["Builder"]:
        """Define the graph function ``name``; call :meth:`ret` inside the block."""
        if self._current is not None:
            raise GraphError(f"already defining {self._current[0]!r}; functions do not nest")
        self._current, self._ret = (name, tuple(params)), None
        try:
            yield self
            if self._ret is None:
                raise GraphError(f"function {name!r} has no result; call bb.ret(value) "
                                 "before the end of the `with` block")
            if isinstance(self._funcs.get(name), PrimFunc):
                # te.create_prim_func names every function "main", so this clash is easy
                # to make and would silently drop the kernel a call_tir refers to
                raise GraphError(
                    f"graph function {name!r} would replace the PrimFunc {name!r} already in "
                    f"the module (te.create_prim_func names functions 'main' by default); "
                    f"name the PrimFunc, e.g. te.create_prim_func([...], name='my_kernel'), "
                    f"or give the graph function another name")
            self._funcs[name] = Function(tuple(params), self._ret, name)
        finally:
            self._current, self._ret = None, None

    def ret(self, value: Expr) -> None:
        """Set the result of the function being defined (a Tuple for several results)."""
        if self._current is None:
            raise GraphError("bb.ret(...) outside of `with bb.function(...)`")
        self._ret = value

    emit_output = ret

    def get(self) -> IRModule:
        """The module built so far."""
        return IRModule(self._funcs)
