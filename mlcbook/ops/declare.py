"""Declaring an operator once: its kind, attributes and compute, and from them everything
else the layers need.

    >>> from mlcbook.ops import declare
    >>> declare.unary("softsign", lambda v: v / (1 + E.abs(v)), onnx="Softsign",
    ...               grad=lambda x, y, g: g / ((1 + E.abs(x)) * (1 + E.abs(x))),
    ...               doc="x / (1 + |x|)")

From that one call:

- the graph IR infers a call's type by running the compute on placeholders of the inputs'
  types (shapes are static, so the compute knows the output's shape and dtype);
- the graph interpreter and constant folding run the same compute with numpy
  (:func:`mlcbook.te.evaluate.evaluate`), so the reference *is* the compute;
- legalization hands the compute to the kernel generator;
- ``onnx`` names the ONNX op (``"Relu"``, or ``"com.microsoft:QuickGelu"`` for an op of
  another domain): the importer and the exporter both map it to this op, with the attributes
  under the same names (:mod:`mlcbook.frontend.onnx_ops`), or as ``onnx_attrs`` maps them
  (:class:`~mlcbook.ops.onnx_attrs.OnnxAttrs`: Gemm's ``transA`` is gemm's ``trans_a``);
- ``grad``, a scalar formula of the input ``x``, the output ``y`` and the incoming gradient
  ``g``, declares the op ``<name>_grad`` that computes ``dL/dx`` elementwise, and
  :mod:`mlcbook.train.autodiff` uses it (an elementwise gradient fuses into one kernel);
  a broadcasting op has one formula per input.

:func:`op` takes any tensor-expression compute; :func:`unary` and :func:`binary` make
the compute from a formula on one element; :func:`view` declares an op whose output is its
input's memory under another shape. ``docs/adding_an_op.md`` walks through adding one.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Callable, Mapping, Sequence

import numpy as np

from ..errors import (ArgumentError, GraphError, OpAttributeError, OpDTypeError, OpShapeError,
                      TEAttributeError, TEDTypeError, TEError, TEShapeError)
from ..te import placeholder
from ..te.evaluate import evaluate
from ..te.ops.transform import reshape as te_reshape
from ..te.ops.util import axis_names, broadcast_indices, compute_named, load, store
from ..tir.expr import PrimExpr
from ._infer import FLOATS, broadcast_shapes, norm_axis, require_dtype, same_dtype
from .onnx_attrs import OnnxAttrs, OnnxInput
from .registry import Op, OpKind, get, register, register_legalization
from .types import LOWBIT_DTYPES, TensorType, TupleType, as_storage, storage_dtype

#: a compute: te tensors and the op's attributes (and ``name=``, the stage's name) -> te
#: tensor(s)
Compute = Callable[..., object]


def _outputs(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


#: the graph error a te error becomes: the first entry whose te class it is
_GRAPH_ERRORS = ((TEShapeError, OpShapeError), (TEAttributeError, OpAttributeError),
                 (TEDTypeError, OpDTypeError), (TEError, GraphError))


@contextmanager
def graph_errors(name: str):
    """Let a compute, or a te check a declaration shares (``te.ops.transform.permutation``),
    reject a call of the op ``name``: its te error reaches the graph user, with the same
    message (after the op's name, if a stage of another name raised it), as the graph error
    of the same meaning (a bad shape an :class:`~mlcbook.errors.OpShapeError`, a bad
    attribute an :class:`~mlcbook.errors.OpAttributeError`, a bad dtype an
    :class:`~mlcbook.errors.OpDTypeError`), so that each check is written once."""
    try:
        yield
    except TEError as e:
        message = e.message if re.match(rf"{re.escape(name)}\b", e.message) else \
            f"{name}: {e.message}"
        raise next(g for t, g in _GRAPH_ERRORS if isinstance(e, t))(message) from None


def op(name: str, compute: Compute, *, kind: OpKind, attrs: Mapping | None = None,
       num_inputs: tuple[int, int | None] = (1, 1),
       check: Callable[[Sequence[TensorType], Mapping], None] | None = None,
       onnx: str | None = None, grad: Sequence | None = None, doc: str = "",
       gradient_of: str | None = None, empty: Callable | None = None,
       indices: Callable[[Sequence[TensorType], Mapping], tuple] | None = None,
       onnx_attrs: OnnxAttrs | None = None, dtype_attr: str | None = None,
       reads_type_only: bool = False) -> Op:
    """Register the op ``name`` whose meaning is ``compute(*te_tensors, **attrs, name=...)``.

    ``check(types, attrs)`` rejects what only the graph judges (ONNX's rules, empty or
    low-bit inputs) with a graph error before the compute runs; the compute checks its own
    arguments once for both layers, its te errors becoming graph ones (:func:`graph_errors`),
    and ``check`` may call the same te checks for the shapes ``empty`` needs. ``onnx`` is the
    ONNX op with the same inputs and attributes (``onnx_attrs``: where they differ, how they
    map). ``grad``, for an
    elementwise or broadcasting op, has one formula per input
    (None: no gradient) of one element of each input, the output ``y`` and its gradient
    ``g``: each becomes the op ``<name>_grad<k>`` (``<name>_grad`` for one input), and
    autodiff sums its result over the axes the input was broadcast along. ``gradient_of``
    marks such an op (``list_ops()`` leaves it out). ``empty(types, attrs, arrays)``, for an
    op that is not elementwise, is its value (an array, or a tuple of them) where it has no
    elements to compute (a sum of nothing is 0; a slice may be empty), else None: te tensors
    have no empty dimensions. ``arrays`` are the inputs' values, None where only the type is
    asked (a concat of an empty tensor and another is the other). Without it such an op
    refuses empty inputs. ``indices(types, attrs)`` lists the inputs whose values index an
    axis, as ``(input, n, axis, coordinate)``: each value (or, for a coordinate ``j >= 0``,
    each value at ``[..., j]``) must lie in ``[-n, n)``, the length of the data's ``axis``,
    which the reference checks, raising an :class:`~mlcbook.errors.ArgumentError`, and a
    compiled model too (the compute clamps, to never read outside). ``dtype_attr`` names
    the attribute that is the output's dtype, for an op that may write a low-bit type, whose
    bytes leave the compute as uint8 (``bitcast``'s ``dtype``, ``lowbit_encode``'s
    ``format``); without it, an op's uint8 output is of its one low-bit input type, if any.
    ``reads_type_only``: the compute reads its input's shape, never its values (``shape``).
    """
    def run(types, attrs, arrays=None):
        """(the outputs' types, their values if ``arrays`` are given, whether they are a
        tuple: a compute returning a tuple of one tensor, e.g. a split in one piece, is)"""
        with graph_errors(name):
            values = None if empty is None else empty(types, attrs, arrays)
        if values is not None:
            many = isinstance(values, tuple)
            values = _outputs(values)
            return tuple(TensorType(v.shape, v.dtype.name) for v in values), values, many
        # a tensor of no elements has no te placeholder: the compute runs on one element
        # per empty dimension, and an elementwise op's output has its inputs' broadcast shape
        no_elements = any(0 in t.shape for t in types)
        if no_elements and kind > OpKind.BROADCAST:
            shapes = ", ".join(str(t.shape) for t in types)
            raise OpShapeError(f"{name}: an input has no elements ({shapes}); {name} needs at "
                               "least one element in every dimension")
        ins = [placeholder(tuple(max(d, 1) for d in t.shape), storage_dtype(t.dtype),
                           name=f"in{k}") for k, t in enumerate(types)]
        with graph_errors(name):
            out = compute(*ins, **attrs, name=name)
        many, outs = isinstance(out, (tuple, list)), _outputs(out)
        # a low-bit tensor moves through the compute as its bytes (uint8): a data-moving op's
        # bytes are of its input's low-bit type again
        lowbit = {t.dtype for t in types} & set(LOWBIT_DTYPES)
        moved = lowbit.pop() if len(lowbit) == 1 else None
        dtypes = [attrs[dtype_attr] if dtype_attr else
                  moved if moved and t.dtype == "uint8" else t.dtype for t in outs]
        if no_elements:
            shape = broadcast_shapes(name, *(t.shape for t in types))
            fields = tuple(TensorType(shape, d) for d in dtypes)
            values = tuple(np.empty(shape, d) for d in dtypes)
        else:
            fields = tuple(TensorType(t.shape, d) for t, d in zip(outs, dtypes))
            values = None if arrays is None else tuple(
                v if v.dtype.name == d else v.view(d) for v, d in zip(_outputs(evaluate(
                    outs, {p: as_storage(a) for p, a in zip(ins, arrays)})), dtypes))
        return fields, values, many

    def infer(types, attrs):
        if check is not None:
            with graph_errors(name):
                check(types, attrs)
        fields, _, many = run(types, attrs)
        return TupleType(fields) if many else fields[0]

    def reference(*arrays, **attrs):
        attrs = declared.normalize_attrs(attrs)     # the defaults, as a call's attributes
        while arrays and arrays[-1] is None:        # an optional input left out (a bias)
            arrays = arrays[:-1]
        types = [TensorType(a.shape, a.dtype.name) for a in arrays]
        for k, n, axis, coordinate in (indices(types, attrs) if indices else ()):
            check_indices(name, arrays[k] if coordinate < 0 else arrays[k][..., coordinate], n,
                          axis)
        _, values, many = run(types, attrs, arrays)
        return values if many else values[0]

    grad_ops = tuple(_declare_gradient(name, k, len(grad), formula, attrs)
                     for k, formula in enumerate(grad or ()))
    declared = register(name, kind=kind, infer=infer, reference=reference, attrs=attrs,
                        num_inputs=num_inputs, doc=doc, onnx=onnx, grad_ops=grad_ops,
                        gradient_of=gradient_of, indices=indices, onnx_attrs=onnx_attrs,
                        reads_type_only=reads_type_only)
    register_legalization(name)(lambda ins, attrs, out_type: compute(*ins, **attrs, name=name))
    return declared


def check_indices(name: str, values: np.ndarray, n: int, axis: int) -> None:
    """Raise an :class:`~mlcbook.errors.ArgumentError` if an index of ``values`` is outside
    ``[-n, n)``, the indices of ``axis``, of length ``n`` (the reference's check, and a
    compiled model's before the kernel that would clamp it)."""
    if values.size and (values.min() < -n or values.max() >= n):
        raise ArgumentError(f"{name}: an index is outside [-{n}, {n - 1}] for axis {axis} of "
                            f"length {n}; Instead: give indices inside the data")


def indices_on_axis(name: str) -> Callable:
    """An ``indices`` rule (:func:`op`): every value of input 1 indexes the axis
    ``attrs["axis"]`` of input 0, as a gather's do."""
    def indices(types, attrs):
        data = types[0]
        axis = norm_axis(name, attrs["axis"], data.ndim)
        return ((1, data.shape[axis], axis, -1),)
    return indices


def empty_output(shape_of: Callable[[Sequence[TensorType], Mapping], tuple]) -> Callable:
    """An ``empty`` rule (:func:`op`) for an op whose output has no elements where an input
    has none (a gather with no indices; a gather from an empty axis has no valid index, which
    ``indices`` refuses): an array of ``shape_of(types, attrs)`` of the first input's dtype."""
    def empty(types, attrs, arrays):
        if not any(0 in t.shape for t in types):
            return None
        return np.empty(shape_of(types, attrs), types[0].dtype)
    return empty


def empty_batch(name: str) -> Callable:
    """An ``empty`` rule (:func:`op`) for an op computed per item of its first input's axis
    0 (a convolution's batch): an empty batch gives no items, of the shape one item has."""
    def empty(types, attrs, arrays):
        x = types[0]
        if x.ndim == 0 or x.shape[0] or 0 in x.shape[1:] or any(0 in t.shape for t in types[1:]):
            return None
        one = get(name).infer_type([TensorType((1,) + x.shape[1:], x.dtype), *types[1:]], attrs)
        return np.empty((0,) + one.shape[1:], one.dtype)
    return empty


def view(name: str, shape_of: Callable[[TensorType, Mapping], tuple], *,
         attrs: Mapping | None = None, onnx: str | None = None,
         onnx_attrs: OnnxAttrs | None = None, doc: str = "") -> Op:
    """Declare the view ``name``: its output is its input's elements in row-major order
    under the shape ``shape_of(x_type, attrs)``, which also checks the attributes. A plan
    gives it no kernel, only its input's memory (``Op.is_view``); its reference and its
    legalization are that reshape, so they need no compute of their own.

        >>> declare.view("ravel", lambda x, attrs: (x.size,), doc="the elements in a row")
    """
    def infer(types, attrs):
        x = types[0]
        with graph_errors(name):
            return TensorType(tuple(shape_of(x, attrs)), x.dtype)

    def reference(x, **attrs):
        return x.reshape(declared.infer_type([TensorType(x.shape, x.dtype.name)], attrs).shape)

    declared = register(name, kind=OpKind.INJECTIVE, infer=infer, reference=reference,
                        attrs=attrs, doc=doc, onnx=onnx, onnx_attrs=onnx_attrs, is_view=True)
    # the output type has resolved the attributes; a 0-d input arrives as a (1,)-tensor
    register_legalization(name)(
        lambda ins, attrs, out_type: te_reshape(ins[0], out_type.shape, name=name))
    return declared


def _elementwise_compute(formula: Callable[..., PrimExpr], out_dtype: str | None,
                         like: int = 0):
    """The compute of ``out[i] = formula(in0[i'], in1[i''], ..., **attrs)``, each input read
    in its compute dtype at its broadcast index, the result stored as ``out_dtype`` (default:
    the dtype of input ``like``)."""
    def compute(*xs, name: str, **attrs):
        shape = broadcast_shapes(name, *(x.shape for x in xs))

        def body(*idx):
            values = [load(x, broadcast_indices(x.shape, idx, shape)) for x in xs]
            return store(formula(*values, **attrs), out_dtype or xs[like].dtype)
        return compute_named(shape, axis_names(len(shape)), body, name)
    return compute


def _declare_gradient(name: str, k: int, inputs: int, formula, attrs) -> str | None:
    """The op computing the gradient of input ``k`` of ``name`` from (*inputs, y, g), stored
    in g's dtype."""
    if formula is None:
        return None
    grad_op = f"{name}_grad" if inputs == 1 else f"{name}_grad{k}"
    kind = OpKind.ELEMWISE if inputs == 1 else OpKind.BROADCAST
    op(grad_op, _elementwise_compute(formula, None, like=-1), kind=kind,
       attrs=attrs, num_inputs=(inputs + 2, inputs + 2), gradient_of=name,
       doc=f"the gradient of {name}'s input {k}, from its inputs, its output and dL/dy")
    return grad_op


def same_dtype_in(name: str, dtypes: Sequence[str], attr_check=None):
    """A check: the inputs share one dtype, one of ``dtypes`` (and ``attr_check(attrs)``
    accepts the attributes)."""
    def check(types, attrs):
        same_dtype(name, types)
        require_dtype(name, types[0], dtypes)
        if attr_check is not None:
            attr_check(attrs)
    return check


def unary(name: str, formula: Callable[..., PrimExpr], *, dtypes: Sequence[str] = FLOATS,
          attrs: Mapping | None = None, out_dtype: str | None = None, onnx: str | None = None,
          grad: Callable[..., PrimExpr] | None = None,
          check_attrs: Callable[[Mapping], None] | None = None,
          onnx_attrs: OnnxAttrs | None = None, doc: str = "") -> Op:
    """Declare the elementwise op ``y = formula(x, **attrs)``, for inputs of ``dtypes``.

    ``formula`` gets one element (a loop-IR expression of the input's compute dtype: int32
    for int8, float32 for bfloat16) and the attributes; ``grad(x, y, g, **attrs)`` is
    ``dL/dx`` from one element of the input, the output and ``dL/dy``.
    """
    return op(name, _elementwise_compute(formula, out_dtype), kind=OpKind.ELEMWISE, attrs=attrs,
              check=same_dtype_in(name, dtypes, check_attrs), onnx=onnx,
              onnx_attrs=onnx_attrs, grad=None if grad is None else (grad,), doc=doc)


def binary(name: str, formula: Callable[..., PrimExpr], *, dtypes: Sequence[str] = FLOATS,
           attrs: Mapping | None = None, out_dtype: str | None = None,
           onnx: str | None = None, grad: Sequence | None = None, doc: str = "") -> Op:
    """Declare the broadcasting op ``z = formula(a, b, **attrs)`` of two tensors of one
    dtype among ``dtypes`` (numpy's broadcasting rule); ``grad`` has the formulas of
    ``dL/da`` and ``dL/db`` from ``(a, b, z, g)``."""
    return op(name, _elementwise_compute(formula, out_dtype), kind=OpKind.BROADCAST,
              attrs=attrs, num_inputs=(2, 2), check=same_dtype_in(name, dtypes), onnx=onnx,
              grad=grad, doc=doc)


def one_of(op_name: str, attr: str, values: Sequence) -> Callable[[Mapping], None]:
    """An attribute check: ``attrs[attr]`` must be one of ``values``."""
    def check(attrs):
        if attrs[attr] not in values:
            raise OpAttributeError(f"{op_name}: {attr}={attrs[attr]!r} is not one of "
                                   f"{', '.join(map(repr, values))}")
    return check


def onnx_name(op: Op) -> tuple[str, str]:
    """``(domain, op type)`` of a declared op's ONNX name: ``"Relu"`` is ONNX's own (domain
    ``""``), ``"com.microsoft:QuickGelu"`` onnxruntime's."""
    domain, _, op_type = op.onnx.rpartition(":")
    return domain, op_type


def declared_onnx_ops() -> dict[str, Op]:
    """ONNX op type -> the declared op it maps to (both directions; of two ops of one ONNX
    op, MaxPool's max_pool and max_pool_indices, whose import is written, the first by name)."""
    from .registry import list_ops
    return {onnx_name(op)[1]: op for op in map(get, reversed(list_ops())) if op.onnx}


__all__ = ["OnnxAttrs", "OnnxInput", "op", "view", "graph_errors", "check_indices",
           "indices_on_axis", "empty_output", "empty_batch", "unary", "binary", "same_dtype_in",
           "one_of", "onnx_name", "declared_onnx_ops"]
