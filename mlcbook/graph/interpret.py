"""The reference evaluator of graph functions: every op runs its numpy reference, every
``call_tir`` runs the loop-IR interpreter. It defines what a compiled model must compute.

    >>> y = interpret(mod, x)               # the module's main graph function
    >>> y = interpret(func, x=x)            # inputs by name
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..errors import ArgumentError, GraphError
from ..ops import get as get_op
from ..ops.types import TensorType, TupleType, Type, as_storage
from ..tir.function import IRModule, PrimFunc
from .expr import Call, CallTIR, Constant, Function, Tuple, TupleGetItem, Var, post_order


def main_function(target) -> tuple[Function, IRModule | None]:
    """The graph function to run: ``target`` itself, or the module's ``main``."""
    if isinstance(target, Function):
        return target, None
    if isinstance(target, IRModule):
        graph = {k: f for k, f in target.items() if isinstance(f, Function)}
        if "main" in graph:
            return graph["main"], target
        if len(graph) == 1:
            return next(iter(graph.values())), target
        raise GraphError(
            f"the module has {len(graph)} graph functions and none is named 'main' "
            f"({', '.join(graph) or 'none'}); pass mod['name'] and the module separately")
    if type(target).__name__ == "ModelProto" or str(target).endswith(".onnx"):
        # the commonest slip: an ONNX model handed straight to mb.compile / mb.interpret
        raise GraphError(f"got an ONNX model ({type(target).__name__}), not a graph: import "
                         "it first. Instead: mb.compile(mb.from_onnx(model))")
    raise GraphError(f"cannot interpret {type(target).__name__} {target!r:.80}: pass a graph "
                     "Function or an IRModule")


def check_value(what: str, value: Any, ty: Type) -> np.ndarray:
    """``value`` as an array of type ``ty``, or an ArgumentError naming ``what`` and the fix."""
    if not isinstance(ty, TensorType):
        raise ArgumentError(f"{what} has type {ty}; tuple inputs are not supported")
    if not isinstance(value, np.ndarray):
        if isinstance(value, (list, tuple, int, float, bool, np.generic)):
            value = np.asarray(value)
        else:
            raise ArgumentError(f"{what} must be a numpy array of {ty}, got {type(value).__name__}")
    if tuple(value.shape) != ty.shape:
        raise ArgumentError(f"{what} expects shape {ty.shape} but got {tuple(value.shape)}; "
                            "reshape the array (shapes are fixed when the model is imported)")
    if value.dtype.name != ty.dtype:
        raise ArgumentError(f"{what} expects dtype {ty.dtype} but got {value.dtype.name}; "
                            f"convert with .astype(np.{ty.dtype})")
    return value


def bind_inputs(func: Function, args: Sequence[Any], kwargs: dict[str, Any]) -> list[np.ndarray]:
    """Match positional and named inputs to ``func.params``, checking names, shapes, dtypes."""
    names = [p.name for p in func.params]
    if len(args) > len(names):
        raise ArgumentError(f"{func.name} takes {len(names)} input(s) ({', '.join(names)}), "
                            f"got {len(args)}")
    given = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise ArgumentError(f"{func.name} has no input named {k!r}; its inputs are: "
                                f"{', '.join(names)}")
        if k in given:
            raise ArgumentError(f"input {k!r} of {func.name} is given twice")
        given[k] = v
    missing = [n for n in names if n not in given]
    if missing:
        raise ArgumentError(f"{func.name} is missing input(s) {', '.join(missing)}")
    return [check_value(f"input {p.name!r}", given[p.name], p.type) for p in func.params]


def _run_call_tir(mod: IRModule | None, call: CallTIR, args: list[np.ndarray]):
    if mod is None or call.func not in mod or not isinstance(mod[call.func], PrimFunc):
        raise GraphError(f"call_tir refers to {call.func!r}, which is not a PrimFunc of the "
                         "module; interpret the whole IRModule, not just the graph function")
    from .. import tir
    func = mod[call.func]
    if len(func.params) != len(args) + len(call.out_types):
        raise GraphError(f"call_tir of {call.func!r} passes {len(args)} inputs and "
                         f"{len(call.out_types)} outputs but the PrimFunc has "
                         f"{len(func.params)} parameters")
    outs = [np.zeros(t.shape, t.dtype) for t in call.out_types]
    bound = [_as_param(a, p) for a, p in zip(list(args) + outs, func.params)]
    tir.interpret(func, *bound)
    return tuple(outs) if isinstance(call.out_type, TupleType) else outs[0]


def _as_param(a: np.ndarray, param) -> np.ndarray:
    # a 0-d tensor binds a (1,) buffer: the same memory (see mlcbook.graph.legalize)
    # a low-bit tensor binds its uint8 storage
    a = as_storage(a)
    if a.ndim == 0 and tuple(param.shape) == (1,):
        return a.reshape(1)
    return a


def _run_call(call: Call, args: list[np.ndarray]):
    out = get_op(call.op).reference(*args, **dict(call.attrs))
    outs = out if isinstance(out, tuple) else (out,)
    types = call.type.fields if isinstance(call.type, TupleType) else (call.type,)
    fixed = []
    for o, t in zip(outs, types):
        o = np.asarray(o)
        if o.shape != t.shape or o.dtype.name != t.dtype:
            raise GraphError(f"the numpy reference of {call.op!r} returned {o.shape} {o.dtype} "
                             f"but its shape inference says {t}; the op definition is wrong")
        fixed.append(o)
    return tuple(fixed) if isinstance(call.type, TupleType) else fixed[0]


def evaluate(func: Function, inputs: list[np.ndarray], mod: IRModule | None = None):
    """Evaluate ``func`` on already-checked ``inputs``; returns an array or a tuple of them."""
    env: dict[int, Any] = {id(p): v for p, v in zip(func.params, inputs)}
    for n in post_order(func.body):
        if id(n) in env:
            continue
        if isinstance(n, Constant):
            env[id(n)] = n.data
        elif isinstance(n, Var):
            raise GraphError(f"variable {n.name!r} has no value")
        elif isinstance(n, Call):
            env[id(n)] = _run_call(n, [env[id(a)] for a in n.args])
        elif isinstance(n, CallTIR):
            env[id(n)] = _run_call_tir(mod, n, [env[id(a)] for a in n.args])
        elif isinstance(n, Tuple):
            env[id(n)] = tuple(env[id(f)] for f in n.fields)
        elif isinstance(n, TupleGetItem):
            env[id(n)] = env[id(n.tuple_value)][n.index]
        else:
            raise GraphError(f"the interpreter does not know the node {n!r}")
    return env[id(func.body)]


def interpret(target, *args, **kwargs):
    """Run a graph function (or a module's main) on numpy inputs with numpy references.

    Returns one array, or a tuple of arrays when the function returns a tuple.
    """
    func, mod = main_function(target)
    return evaluate(func, bind_inputs(func, args, kwargs), mod)
