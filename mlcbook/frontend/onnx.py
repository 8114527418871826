"""Import ONNX models into the graph IR: ``mb.from_onnx(path_or_model)``.

    >>> mod = mb.from_onnx("mlp.onnx")                   # static shapes from the model
    >>> mod = mb.from_onnx("mlp.onnx", batch_size=64)    # fixes a symbolic batch dimension
    >>> print(mod["main"])

* Initializers become named weights (``W["fc1.weight"]``) owned by the op that uses them.
* Every shape is static: symbolic dimensions are fixed at import (``batch_size`` for the
  first axis, or ``shapes={"input": (...)}``). Without ``batch_size``, a symbolic first
  axis makes a :class:`~mlcbook.graph.SymbolicBatchModule`, imported again for each batch
  size that ``mb.compile``'s executable meets; another symbolic axis is an error.
* Inputs ONNX passes as tensors but mlcbook needs as attributes (Reshape's shape, Slice's
  starts, ...) must be constants; subgraphs computing them from shapes are folded.
* Anything unsupported is reported all at once: one :class:`UnsupportedModelError` lists
  every offending node with its op type, name and the reason.

The converters speak opset 13 and newer. An older model is converted to opset 13 with
``onnx.version_converter`` first (a log line says so; ops whose meaning changed on the way
but which the converter keeps as they are are rewritten, or refused, by
:mod:`.onnx_old_opsets`); an opset newer than the installed onnx knows, or a model the
converter cannot convert, is an error.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from functools import partial
from typing import Any, Mapping

import numpy as np

from ..errors import (DynamicShapeError, GraphError, InvalidModelError, OpDTypeError,
                      UnsupportedModelError)
from ..ops.types import TensorType, TupleType
from ..tir.function import IRModule
from ..graph.batch import SymbolicBatchModule, check_batch_size
from ..graph.expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, post_order
from ..graph.interpret import evaluate
from ..graph.passes.fold import fold_expr
from ..ops import get as get_op
from . import onnx_old_opsets as old_opsets
from .onnx_context import Context, Unsupported, onnx_dtype, tensor_array
from .onnx_ops import CONVERTERS, converter_of, static_problems
from .onnx_training_mode import declare_imported

#: the opset the converters are written for; older models are converted up to it
MIN_OPSET = 13

logger = logging.getLogger(__name__)

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
    if model.opset_import:
        # only other domains (ai.onnx.preview.training): no node of the default domain, whose
        # opset therefore cannot matter
        import onnx
        return onnx.defs.onnx_opset_version()
    raise UnsupportedModelError("the model imports no version of the default ONNX domain")


def upgrade_opset(model) -> Any:
    """``model`` at an opset the converters read: unchanged from opset 13 up to the newest
    the installed onnx knows, converted with ``onnx.version_converter`` from older opsets
    (the onnx test models exported from PyTorch are opset 6 to 9, the model zoo's 7 to 9).

    Older IR versions need nothing of their own here: initializers listed among the graph
    inputs (IR < 4) are read as weights, not inputs, by :func:`from_onnx`.
    """
    import onnx
    from onnx import version_converter
    opset = model_opset(model)
    newest = onnx.defs.onnx_opset_version()
    if opset > newest:
        raise UnsupportedModelError(
            f"the model uses ONNX opset {opset}, which does not exist yet: the installed onnx "
            f"{onnx.__version__} knows opsets up to {newest}, so the meaning of its ops is "
            f"unknown. Instead: export the model with an opset up to {newest}, or upgrade onnx")
    if opset >= MIN_OPSET:
        return model
    logger.warning("the model uses ONNX opset %d: converting it to opset %d with "
                   "onnx.version_converter", opset, MIN_OPSET)
    light, weights = _weights_apart(model)
    light, fixes = old_opsets.before_conversion(light, opset)
    try:
        converted = version_converter.convert_version(light, MIN_OPSET)
    except Exception as e:  # the converter raises RuntimeError/ConvertError with its reason
        raise UnsupportedModelError(
            f"onnx.version_converter cannot bring the model from opset {opset} to {MIN_OPSET}: "
            f"{e}. Instead: re-export the model at opset {MIN_OPSET} or newer") from None
    return _weights_back(old_opsets.after_conversion(converted, fixes), weights)


#: initializers from this many elements on are weights: no conversion adapter reads them
_BIG = 4096


def _weights_apart(model) -> tuple[Any, list]:
    """A copy of ``model`` without its big initializers (each left as a graph input of its
    type, as IR version 3 lists them anyway), and those initializers: the converter copies
    the whole model through protobuf twice, which for VGG's 550 MB of weights takes most of
    an import."""
    import onnx
    from onnx import helper
    big = [t for t in model.graph.initializer if int(np.prod(t.dims)) >= _BIG]
    if not big:
        return model, []
    names = {t.name for t in big}
    light = onnx.ModelProto()
    light.CopyFrom(model)
    light.graph.ClearField("initializer")
    light.graph.initializer.extend(t for t in model.graph.initializer if t.name not in names)
    listed = {vi.name for vi in light.graph.input}
    light.graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                             for t in big if t.name not in listed)
    return light, [(t, t.name in listed) for t in big]


def _weights_back(model, weights: list) -> Any:
    """``model`` with the initializers :func:`_weights_apart` took out put back."""
    if not weights:
        return model
    added = {t.name for t, listed in weights if not listed}
    keep = [vi for vi in model.graph.input if vi.name not in added]
    model.graph.ClearField("input")
    model.graph.input.extend(keep)
    model.graph.initializer.extend(t for t, _ in weights)
    return model


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


@dataclass(frozen=True)
class SymbolicDim:
    """A dimension of a graph input that is a name (``dim_param``) or unknown, not a number.

    ``name`` is the dim_param (``"?"`` for an unknown one); ``dims`` the input's whole
    shape, numbers and names, which ``shape`` shows as ``(N, 3, 224, 224)``.
    """

    input: str
    axis: int
    name: str
    dims: tuple

    @property
    def shape(self) -> str:
        return f"({', '.join(map(str, self.dims))}{',' if len(self.dims) == 1 else ''})"


def symbolic_dims(model, shapes: Mapping[str, Any] = (), skip=()) -> list[SymbolicDim]:
    """Every symbolic dimension of the inputs of ``model`` (a ModelProto) that are not
    initializers, in ``skip`` or given a shape in ``shapes``.

        >>> [(d.input, d.axis, d.name) for d in symbolic_dims(examples.mlp(batch=None))]
        [('input', 0, 'N')]
    """
    skip = set(skip) | {i.name for i in model.graph.initializer} | set(shapes)
    out = []
    for vi in model.graph.input:
        if vi.name in skip or not vi.type.HasField("tensor_type"):
            continue
        dims = vi.type.tensor_type.shape.dim
        names = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param or "?"
                      for d in dims)
        out.extend(SymbolicDim(vi.name, axis, names[axis], names)
                   for axis, d in enumerate(dims) if not d.HasField("dim_value"))
    return out


def _batch_dim(symbolic: list[SymbolicDim], batch_size: int | None) -> str | None:
    """The name of the symbolic batch dimension left to specialize (None if there is none,
    or ``batch_size`` fixes it); a DynamicShapeError for a symbolic dimension that is not
    a batch, or inputs whose first dimensions have different names."""
    for d in symbolic:
        if d.axis != 0:
            raise DynamicShapeError(
                f"input {d.input!r} has the symbolic dimension {d.name!r} at axis {d.axis} "
                f"(shape {d.shape}); mlcbook compiles static shapes and specializes only a "
                f"symbolic batch, the first axis. Instead: pass shapes={{{d.input!r}: "
                f"{d.shape}}} to from_onnx with numbers in place of the names")
    named = {d.name: d.input for d in symbolic if d.name != "?"}
    if batch_size is not None or not symbolic:
        return None
    if len(named) > 1:
        (a, ia), (b, ib) = list(named.items())[:2]
        raise DynamicShapeError(
            f"inputs {ia!r} and {ib!r} have different symbolic first dimensions {a!r} and "
            f"{b!r}; mlcbook specializes one batch size for all inputs. Instead: pass "
            f"batch_size=N if they are always equal, or shapes={{...}} for each input")
    return next(iter(named), "?")


def _input_types(graph, shapes: Mapping[str, Any], batch_size: int, skip: set[str],
                 problems: list[str]) -> dict[str, TensorType]:
    """The type of every input; ``batch_size`` is the size of a symbolic first dimension
    (symbolic dimensions elsewhere were refused by :func:`_batch_dim`)."""
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
        dims = [d.dim_value if d.HasField("dim_value") else batch_size for d in tt.shape.dim]
        out[vi.name] = TensorType(tuple(dims), dtype)
    return out


def from_onnx(model, shapes: Mapping[str, Any] | None = None, batch_size: int | None = None,
              constants: Mapping[str, np.ndarray] | None = None,
              training: bool = False) -> IRModule:
    """Import an ONNX model (a path or an ``onnx.ModelProto``) as an IRModule whose ``main``
    is a graph function.

    ``shapes`` fixes the shapes of inputs by name; ``batch_size`` fixes a symbolic first
    dimension; ``constants`` gives values to graph inputs that should be constants (for
    example a Reshape's target shape passed as an input).

    A model whose inputs have a symbolic first dimension and no ``batch_size`` imports as a
    :class:`~mlcbook.graph.SymbolicBatchModule`: the model at batch 1, which
    ``mod.specialize(n)`` imports again at batch ``n`` and ``mb.compile`` compiles per batch
    size on first call. Any other symbolic dimension needs ``shapes``
    (:class:`~mlcbook.errors.DynamicShapeError` otherwise).

    ``training=True`` imports the model to train it: BatchNormalization and Dropout in their
    training forms (batch statistics with running-statistics buffers; a seeded mask), and
    each weight declared a parameter, buffer or constant
    (``print(mb.graph.declarations(mod["main"]))`` says which and why).

        >>> mod = mb.from_onnx("mlp.onnx")          # input (N, 784)
        >>> mod.batch_dim, mod["main"].params[0].type.shape
        ('N', (1, 784))
        >>> mod.specialize(8)["main"].params[0].type.shape
        (8, 784)
    """
    model = upgrade_opset(load_model(model))
    shapes, constants = dict(shapes or {}), dict(constants or {})
    input_names = {vi.name for vi in model.graph.input}
    for name in list(shapes) + list(constants):
        if name not in input_names:
            raise GraphError(f"the model has no input {name!r}; its inputs are: "
                             f"{', '.join(vi.name for vi in model.graph.input)}")
    if batch_size is not None:
        batch_size = check_batch_size(batch_size)
    symbolic = symbolic_dims(model, shapes, constants)
    batch_dim = _batch_dim(symbolic, batch_size)
    if batch_dim is None:
        return _import_graph(model, shapes, constants, batch_size, training)
    batch_inputs = tuple(dict.fromkeys(d.input for d in symbolic))
    try:
        shown = _import_graph(model, shapes, constants, 1, training)
    except GraphError as e:
        # a model may fix its batch in a Reshape or Expand and fail at 1 but not at its size
        raise type(e)(f"{e.message}\n(The symbolic batch {batch_dim!r} was set to 1 for this "
                      f"import. If the model needs another size, pass batch_size=N.)") from None
    return SymbolicBatchModule(shown.functions, batch_dim, batch_inputs,
                               partial(_import_graph, model, shapes, constants,
                                       training=training))


def _import_graph(model, shapes: dict, constants: dict, batch_size: int | None,
                  training: bool = False) -> IRModule:
    """The graph of ``model`` (checked, at a supported opset) with its symbolic first
    dimensions set to ``batch_size`` (for training with ``training``)."""
    opset = model_opset(model)
    graph = model.graph
    problems: list[str] = []
    cx = Context(opset)
    cx.training = training
    init_names = set()
    for init in graph.initializer:
        init_names.add(init.name)
        try:
            onnx_dtype(init.data_type, f"initializer {init.name!r}")
        except Unsupported as e:
            problems.append(str(e))
            continue
        cx.values[init.name] = Constant(tensor_array(init, f"initializer {init.name!r}"),
                                        name=init.name)
    for name, value in constants.items():
        try:
            cx.values[name] = Constant(np.asarray(value))
        except OpDTypeError as e:  # bfloat16 and friends: a limitation, reported with the rest
            problems.append(f"input {name!r}: {e.message}")
    types = _input_types(graph, shapes, batch_size, init_names | set(constants), problems)
    params = []
    for name, ty in types.items():
        cx.values[name] = var = Var(name, ty)
        params.append(var)

    # every node is checked statically first, so that an unsupported node that depends on
    # another unsupported node is reported too
    bad: set[int] = set()
    for k, node in enumerate(graph.node):
        reasons = static_problems(node, _attrs(node), training)
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
            outs = converter_of(node.op_type, training).fn(cx, ins, _attrs(node))
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
    # the graph's output names, for exe.outputs, `mlcbook run` and the exported header
    names = {"output_names": tuple(o.name for o in graph.output)}
    main = Function(tuple(params), body, "main", names)
    return IRModule({"main": declare_imported(main, model) if training else main})


def _import_error(problems: list[str], failed: list[tuple[GraphError, str]]) -> GraphError:
    """One error listing every unsupported thing and every node that failed to convert:
    an UnsupportedModelError if anything is unsupported, else the first failure's type."""
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
            cx.values[name] = folded = _fold(cx, value)
            cx.bound.add(id(folded))


def _fold(cx: Context, value: Expr) -> Expr:
    """``value`` folded by the graph's constant folding when it is computed from anonymous
    constants and types alone (ConstantOfShape, Shape, shape arithmetic); weights are never
    folded away, since training needs them as they are."""
    if not isinstance(value, (Call, TupleGetItem)) or not isinstance(value.type, TensorType):
        return value
    return fold_expr(value) if _foldable(value, cx.bound) else value


def _foldable(e: Expr, bound: set[int]) -> bool:
    # a value bound already was folded when it was bound, so it stops the walk (which
    # therefore only looks at the calls the current node made)
    if isinstance(e, Constant):
        return not e.name
    if id(e) in bound:
        return False
    if isinstance(e, Call):
        return get_op(e.op).reads_type_only or all(_foldable(a, bound) for a in e.args)
    if isinstance(e, TupleGetItem):
        return _foldable(e.tuple_value, bound)
    return False


def static_input_names(model) -> set[str]:
    """Names of the graph inputs whose values mlcbook needs at import: those that feed,
    directly or through other nodes, an input read as a constant (Reshape's shape, Slice's
    starts, Clip's bounds, ...). Pass their values as ``constants``."""
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
        # Shape and Size read only the static shape of their input, never its value
        if node is not None and node.op_type not in ("Shape", "Size"):
            todo.extend(i for i in node.input if i)
    return out
