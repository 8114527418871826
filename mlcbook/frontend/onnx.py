"""Import ONNX models into the graph IR: ``mb.from_onnx(path_or_model)``.

    >>> mod = mb.from_onnx("mlp.onnx")                   # static shapes from the model
    >>> mod = mb.from_onnx("mlp.onnx", batch_size=64)    # fixes a symbolic batch dimension
    >>> print(mod["main"])

* Initializers become named weights (``W["fc1.weight"]``) owned by the op that uses them.
* Every shape is static: symbolic dimensions are fixed at import (``batch_size`` for the
  first axis, or ``shapes={"input": (...)}``).
* Inputs ONNX passes as tensors but mlcbook needs as attributes (Reshape's shape, Slice's
  starts, ...) must be constants; subgraphs computing them from shapes are folded.
* Anything unsupported is reported all at once: one :class:`UnsupportedModelError` lists
  every offending node with its op type, name and the reason.

Opsets 13-21 are the target; newer opsets are accepted too, since their changes to the
supported ops only add dtypes and attributes, and unknown ones are reported.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import numpy as np

from ..errors import GraphError, InvalidModelError, UnsupportedModelError
from ..ops.types import TensorType, TupleType
from ..tir.function import IRModule
from ..graph.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, post_order
from ..graph.interpret import evaluate

MIN_OPSET = 13

#: ONNX element types mlcbook supports, by TensorProto number
_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
           11: "float64"}

class Unsupported(Exception):
    """Raised by a converter: this node uses something mlcbook does not support."""


def onnx_dtype(elem_type: int, what: str) -> str:
    """The mlcbook dtype of an ONNX element type, or :class:`Unsupported` naming it."""
    if elem_type not in _DTYPES:
        from onnx import TensorProto
        try:
            name = TensorProto.DataType.Name(elem_type)
        except ValueError:
            name = f"#{elem_type}"
        raise Unsupported(f"{what} has element type {name}, which mlcbook does not support "
                          f"(supported: {', '.join(sorted(set(_DTYPES.values())))})")
    return _DTYPES[elem_type]


def _node_label(node, index: int) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else \
        f"node #{index} ({node.op_type}, output {node.output[0]!r})"


def load_model(model) -> Any:
    """A checked ``onnx.ModelProto`` from a path or a ModelProto."""
    import onnx
    if isinstance(model, (str, os.PathLike)):
        if not os.path.exists(model):
            raise InvalidModelError(f"no ONNX file at {os.fspath(model)!r}")
        try:
            model = onnx.load(os.fspath(model))
        except Exception as e:  # onnx raises DecodeError and friends for a bad file
            raise InvalidModelError(f"cannot read {os.fspath(model)!r} as an ONNX model: {e}") from None
    if not isinstance(model, onnx.ModelProto):
        raise InvalidModelError(f"from_onnx needs a file path or an onnx.ModelProto, got "
                                f"{type(model).__name__}")
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        raise InvalidModelError(f"the ONNX checker rejects the model: {e}") from None
    return model


def model_opset(model) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    raise UnsupportedModelError("the model imports no version of the default ONNX domain")


class Context:
    """State of one import: ONNX value names -> graph values; the node being converted."""

    def __init__(self, opset: int):
        self.opset = opset
        self.values: dict[str, Expr] = {}
        self.node = None

    def call(self, op: str, *args: Expr, suffix: str = "", **attrs: Any) -> Call:
        """A call named after the current node (several calls of one node get suffixes)."""
        name = self.node.name or self.node.output[0]
        return Call(op, tuple(args), attrs, name + suffix)

    def static(self, index: int, what: str | None = None) -> np.ndarray | None:
        """The value of input ``index`` of the current node, which must be computable at import
        (a constant, an initializer, or folded from shapes); None if the input is absent."""
        names = self.node.input
        if index >= len(names) or not names[index]:
            return None
        value = self.values[names[index]]
        if isinstance(value, Constant):
            return value.data
        if not any(isinstance(n, Var) for n in post_order(value)):
            return np.asarray(evaluate(Function((), value, "static"), []))
        schema_name = what or f"input {index}"
        raise Unsupported(
            f"its {schema_name} ({names[index]!r}) must be known at import, but it is computed "
            f"from the model's inputs; make it a constant or pass its value with "
            f"from_onnx(..., constants={{{names[index]!r}: value}})")


def _attrs(node) -> dict[str, Any]:
    from onnx import helper
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [x.decode() for x in v]
        out[a.name] = v
    return out


def _input_types(graph, shapes: Mapping[str, Any], batch_size: int | None, skip: set[str],
                 problems: list[str]) -> dict[str, TensorType]:
    out = {}
    for vi in graph.input:
        if vi.name in skip:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            problems.append(f"input {vi.name!r} is not a tensor (sequences, maps and optionals "
                            "are not supported)")
            continue
        try:
            dtype = onnx_dtype(tt.elem_type, f"input {vi.name!r}")
        except Unsupported as e:
            problems.append(str(e))
            continue
        if vi.name in shapes:
            out[vi.name] = TensorType(tuple(shapes[vi.name]), dtype)
            continue
        dims = []
        for axis, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                dims.append(d.dim_value)
            elif axis == 0 and batch_size is not None:
                dims.append(batch_size)
            else:
                sym = d.dim_param or "?"
                raise GraphError(
                    f"input {vi.name!r} has the symbolic dimension {sym!r} at axis {axis}; "
                    f"mlcbook compiles static shapes: pass batch_size=N (for axis 0) or "
                    f"shapes={{{vi.name!r}: (...)}} to from_onnx")
        out[vi.name] = TensorType(tuple(dims), dtype)
    return out


def from_onnx(model, shapes: Mapping[str, Any] | None = None, batch_size: int | None = None,
              constants: Mapping[str, np.ndarray] | None = None) -> IRModule:
    """Import an ONNX model (a path or an ``onnx.ModelProto``) as an IRModule whose ``main``
    is a graph function.

    ``shapes`` fixes the shapes of inputs by name; ``batch_size`` fixes a symbolic first
    dimension; ``constants`` gives values to graph inputs that should be constants (for
    example a Reshape's target shape passed as an input).
    """
    from onnx import numpy_helper

    from .onnx_ops import CONVERTERS, static_problems
    model = load_model(model)
    opset = model_opset(model)
    if opset < MIN_OPSET:
        raise UnsupportedModelError(
            f"the model uses ONNX opset {opset}; mlcbook imports opset {MIN_OPSET} and newer. "
            f"Convert it: onnx.version_converter.convert_version(model, {MIN_OPSET})")
    graph = model.graph
    shapes, constants = dict(shapes or {}), dict(constants or {})
    input_names = {vi.name for vi in graph.input}
    for name in list(shapes) + list(constants):
        if name not in input_names:
            raise GraphError(f"the model has no input {name!r}; its inputs are: "
                             f"{', '.join(vi.name for vi in graph.input)}")
    problems: list[str] = []
    cx = Context(opset)
    init_names = set()
    for init in graph.initializer:
        init_names.add(init.name)
        try:
            onnx_dtype(init.data_type, f"initializer {init.name!r}")
        except Unsupported as e:
            problems.append(str(e))
            continue
        cx.values[init.name] = Constant(numpy_helper.to_array(init), name=init.name)
    for name, value in constants.items():
        value = np.asarray(value)
        if value.dtype.name not in _DTYPES.values():
            problems.append(f"the constant given for {name!r} has dtype {value.dtype.name}, "
                            "which mlcbook does not support")
            continue
        cx.values[name] = Constant(value)
    types = _input_types(graph, shapes, batch_size, init_names | set(constants), problems)
    params = []
    for name, ty in types.items():
        cx.values[name] = var = Var(name, ty)
        params.append(var)

    # every node is checked statically first, so that an unsupported node that depends on
    # another unsupported node is reported too
    bad: set[int] = set()
    for k, node in enumerate(graph.node):
        reasons = static_problems(node, _attrs(node))
        if reasons:
            bad.add(k)
            problems.extend(f"{_node_label(node, k)}: {r}" for r in reasons)
    # values whose import failed already: nodes using them are skipped, not reported again
    poisoned = {vi.name for vi in graph.input if vi.name not in cx.values}
    poisoned |= {i.name for i in graph.initializer if i.name not in cx.values}
    failed: list[tuple[GraphError, str]] = []
    for k, node in enumerate(graph.node):
        if k in bad or any(i in poisoned for i in node.input if i):
            poisoned.update(node.output)
            continue
        cx.node = node
        ins = [cx.values[i] if i else None for i in node.input]
        try:
            outs = CONVERTERS[node.op_type].fn(cx, ins, _attrs(node))
        except Unsupported as e:
            problems.append(f"{_node_label(node, k)}: {e}")
            poisoned.update(node.output)
            continue
        except GraphError as e:
            # keep going: the nodes after it may be unsupported or fail too, and the user
            # should see every one of them at once
            failed.append((e, f"{_node_label(node, k)}: {e.message}"))
            poisoned.update(node.output)
            continue
        _bind_outputs(cx, node, outs)
    if problems or failed:
        raise _import_error(problems, failed)
    outs = [cx.values[o.name] for o in graph.output]
    body = outs[0] if len(outs) == 1 else Tuple(outs)
    return IRModule({"main": Function(tuple(params), body, "main")})


def _import_error(problems: list[str], failed: list[tuple[GraphError, str]]) -> GraphError:
    """One error listing every unsupported thing and every node that failed to convert:
    an UnsupportedModelError if anything is unsupported, else the first failure's type."""
    from .onnx_ops import CONVERTERS
    parts = []
    if problems:
        listing = "\n".join(f"  - {p}" for p in problems)
        parts.append(f"the model uses {len(problems)} thing(s) mlcbook does not support:\n"
                     f"{listing}\nSupported ops: {', '.join(sorted(CONVERTERS))}.")
    if failed:
        listing = "\n".join(f"  - {m}" for _, m in failed)
        parts.append(f"{len(failed)} node(s) failed to convert:\n{listing}")
    if len(failed) == 1 and not problems:
        return type(failed[0][0])(failed[0][1])
    cls = UnsupportedModelError if problems else type(failed[0][0])
    return cls("\n".join(parts) + "\nReplace or fix these nodes (re-export the model, or edit "
               "it with onnx.helper) and import again.")


def _bind_outputs(cx: Context, node, outs) -> None:
    if isinstance(outs, Expr):
        if isinstance(outs.type, TupleType) and len(node.output) > 1:
            outs = [TupleGetItem(outs, i) for i in range(len(outs.type.fields))]
        else:
            outs = [outs]
    for name, value in zip(node.output, outs):
        if name and value is not None:
            cx.values[name] = _fold(value)


def _fold(value: Expr) -> Expr:
    """Evaluate a call whose inputs are all anonymous constants (shape arithmetic, mostly);
    weights are never folded away, since training needs them as they are."""
    if not isinstance(value, (Call, TupleGetItem)) or not isinstance(value.type, TensorType):
        return value
    nodes = post_order(value)
    leaves = [n for n in nodes if not isinstance(n, (Call, TupleGetItem, Tuple))]
    if not all(isinstance(n, Constant) and not n.name for n in leaves):
        return value
    return Constant(np.asarray(evaluate(Function((), value, "fold"), [])))


def static_input_names(model) -> set[str]:
    """Names of the graph inputs whose values mlcbook needs at import: those that feed,
    directly or through other nodes, an input read as a constant (Reshape's shape, Slice's
    starts, Clip's bounds, ...). Pass their values as ``constants``."""
    from .onnx_ops import CONVERTERS
    graph = model.graph
    inputs = {vi.name for vi in graph.input} - {i.name for i in graph.initializer}
    producer = {o: node for node in graph.node for o in node.output}
    todo = []
    for node in graph.node:
        conv = CONVERTERS.get(node.op_type)
        for k in conv.static_inputs if conv else ():
            if k < len(node.input) and node.input[k]:
                todo.append(node.input[k])
    out, seen = set(), set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in inputs:
            out.add(name)
        node = producer.get(name)
        # Shape reads only the static shape of its input, never its value
        if node is not None and node.op_type != "Shape":
            todo.extend(i for i in node.input if i)
    return out
