"""Legalize: replace every op call of a graph by a ``call_tir`` of the PrimFunc that
computes it, added to the module. Identical PrimFuncs (same op, shapes and attributes) are
added once and shared.

    >>> mod = legalize(mb.from_onnx("mlp.onnx"))
    >>> print(mod)        # main now calls gemm, relu, ... PrimFuncs with call_tir

A 0-d (scalar) tensor is passed to a PrimFunc parameter of shape ``(1,)``: the same memory.
A PrimFunc whose inputs hold indices records their bounds in its ``index_bounds``
attribute (see :func:`index_bounds`).
Tensors without elements need no code: a call producing only such tensors becomes a
constant, and so does one whose result cannot depend on data (a sum over an empty axis).
"""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np

from ..errors import LegalizeError
from ..ops.legalize import legalize_call
from ..ops.registry import get as get_op
from ..ops.types import Attrs, TensorType, TupleType
from ..tir.function import IRModule, PrimFunc
from ..tir.structural import structural_equal, structural_hash
from .expr import Call, CallTIR, Constant, Function, Tuple
from .functor import ExprMutator
from .interpret import evaluate, main_function


def index_bounds(call: Call) -> tuple:
    """``((position, n, axis, coordinate), ...)``: inputs of ``call`` whose values index an
    axis of length ``n``. Out of ``[-n, n)`` is an error at graph level (the reference
    raises, and a compiled model checks these inputs before the kernel runs); the kernel
    itself clamps, so it never reads outside its buffers. The gathers and scatters are the
    ops whose indices are data: their ``indices`` rule (``Op.indices``) says which inputs.
    ``coordinate`` is -1 when every element indexes ``axis``; the last axis of gather_nd's
    and scatter_nd's indices holds coordinates into axes 0, 1, ... (after gather_nd's batch
    axes), so each coordinate ``j`` gets a bound of its own."""
    rule = get_op(call.op).indices
    return () if rule is None else tuple(rule([a.type for a in call.args], call.attrs))


def func_name(call: Call) -> str:
    return re.sub(r"\W", "_", call.op)


class Legalizer(ExprMutator):
    def __init__(self, funcs: dict, keep=()):
        super().__init__()
        self.funcs, self.keep = funcs, tuple(keep)
        self.by_hash: dict[int, list[str]] = {}
        for name, f in funcs.items():
            if isinstance(f, PrimFunc):
                self.by_hash.setdefault(structural_hash(f), []).append(name)

    def add(self, func: PrimFunc) -> str:
        h = structural_hash(func)
        for name in self.by_hash.get(h, ()):
            if structural_equal(self.funcs[name], func):
                return name
        base = func.name
        name, k = base, 0
        while name in self.funcs:
            k += 1
            name = f"{base}_{k}"
        func = func if func.name == name else replace(func, name=name)
        self.funcs[name] = func
        self.by_hash.setdefault(h, []).append(name)
        return name

    def lower(self, call: Call) -> CallTIR:
        func = legalize_call(call.op, [a.type for a in call.args], call.attrs,
                             name=func_name(call))
        bounds = index_bounds(call)
        if bounds:
            func = replace(func, attrs=dict(func.attrs, index_bounds=bounds))
        return CallTIR(self.add(func), call.args, call.type, call.name)

    def visit_Call(self, call: Call):
        args = tuple(self.new(a) for a in call.args)
        call = call if all(a is b for a, b in zip(args, call.args)) else \
            Call(call.op, args, call.attrs, call.name)
        if call.op in self.keep:
            return call
        if not any(_size(t) == 0 for t in [a.type for a in args] + _types(call.type)):
            return self.lower(call)
        return self.empty(call)

    def empty(self, call: Call):
        """Calls involving tensors without elements: nothing to compute, or less."""
        if all(_size(t) == 0 for t in _types(call.type)):
            return _zeros(call.type)
        if call.op == "split":
            # one slice per non-empty piece
            axis, off, items = call.attrs["axis"], 0, []
            for k, t in enumerate(call.type.fields):
                n = t.shape[axis]
                items.append(_zeros(t) if n == 0 else self.lower(Call(
                    "slice", call.args, Attrs(starts=(off,), ends=(off + n,), axes=(axis,)),
                    f"{call.name}_{k}")))
                off += n
            return Tuple(items)
        if call.op == "concat":
            kept = tuple(a for a in call.args if _size(a.type) > 0)
            return self.lower(Call("concat", kept, call.attrs, call.name))
        if all(isinstance(a, Constant) or _size(a.type) == 0 for a in call.args):
            # the result cannot depend on data: compute it now (e.g. a sum of nothing is 0)
            args = tuple(_zeros(a.type) if _size(a.type) == 0 else a for a in call.args)
            return Constant(evaluate(Function((), Call(call.op, args, call.attrs), "empty"), []))
        raise LegalizeError(f"{call.op} {call.name!r}: an input has no elements "
                            f"({', '.join(str(a.type) for a in call.args)}); mlcbook cannot "
                            "compile it")


def _size(t) -> int:
    return t.size if isinstance(t, TensorType) else 1


def _types(t) -> list:
    return list(t.fields) if isinstance(t, TupleType) else [t]


def _zeros(t):
    if isinstance(t, TupleType):
        return Tuple([_zeros(f) for f in t.fields])
    return Constant(np.zeros(t.shape, t.dtype))


def legalize(mod_or_func, keep=()) -> IRModule:
    """The module with every op call of its graph functions lowered to ``call_tir``, except
    calls of the ops named in ``keep``."""
    if isinstance(mod_or_func, Function):
        mod_or_func = IRModule({mod_or_func.name: mod_or_func})
    main_function(mod_or_func)  # checks that there is a graph function
    funcs = dict(mod_or_func.functions)
    for name, f in list(funcs.items()):
        if isinstance(f, Function):
            funcs[name] = Legalizer(funcs, keep).visit_function(f)
    return IRModule(funcs)
