"""The operator registry: for every op its fusion kind, attributes, shape/dtype inference,
numpy reference and (once registered) legalization to loop IR.

    >>> op = get("add")
    >>> op.kind
    <OpKind.BROADCAST: 1>
    >>> op.infer_type([TensorType((2, 3)), TensorType((3,))], {})
    Tensor((2, 3), "float32")

An op is written once and every layer uses it: the graph IR infers types with it when a
call is built, the graph interpreter runs its reference, the compiler lowers it with its
legalization, and fusion groups ops by their kind.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..errors import GraphError, OpAttributeError, UnknownOpError
from .types import Attrs, TensorType, Type


class OpKind(enum.IntEnum):
    """How an op's outputs depend on its inputs: the fusion categories of the TVM paper.

    The order matters: fusion combines kinds by taking the larger one.
    """

    ELEMWISE = 0        #: out[i] = f(in[i]) for same-shaped tensors
    BROADCAST = 1       #: out[i] = f(in0[bcast(i)], in1[bcast(i)])
    INJECTIVE = 2       #: each output element reads one input element (reshape, transpose, slice)
    REDUCTION = 3       #: reduces some axes (sum, max, softmax's pieces)
    OUT_ELEMWISE_FUSABLE = 4  #: a complex op whose output can take elementwise ops (matmul, conv)
    OPAQUE = 8          #: cannot be fused


#: marks an attribute that has no default and must be given
REQUIRED = object()


@dataclass(frozen=True, eq=False)
class Op:
    """One operator. Build with :func:`register`; look up with :func:`get`."""

    name: str
    kind: OpKind
    infer: Callable[[tuple[TensorType, ...], Attrs], Type]
    reference: Callable[..., Any]
    attrs: Mapping[str, Any] = field(default_factory=dict)
    num_inputs: tuple[int, int | None] = (1, 1)
    doc: str = ""
    legalize: Callable | None = None
    #: the output is the input's memory reinterpreted (reshape, flatten, ...): an executable
    #: gives it no kernel, only a view of its input
    is_view: bool = False
    #: the output depends on the input's type (shape, dtype) only, never on its values
    #: (shape, size): constant folding evaluates it even when the input is not a constant
    reads_type_only: bool = False
    #: the ONNX op with the same inputs and attributes, imported and exported as this op
    onnx: str | None = None
    #: per input, the elementwise op computing its gradient from (*inputs, y, dL/dy), or None
    #: (an input with no gradient); empty for an op whose rule is written in graph ops
    grad_ops: tuple[str | None, ...] = ()
    #: the op whose input gradient this op computes (``relu`` for ``relu_grad``)
    gradient_of: str | None = None
    #: ``indices(types, attrs)``: the inputs whose values index an axis, as ``(input, n,
    #: axis, coordinate)`` (a gather's; :func:`mlcbook.ops.declare.op`), or None
    indices: Callable | None = None
    #: how the attributes map to the ONNX op's where they differ
    #: (:class:`mlcbook.ops.onnx_attrs.OnnxAttrs`; None: the same names and values)
    onnx_attrs: Any = None

    def normalize_attrs(self, attrs: Mapping[str, Any] | None) -> Attrs:
        """``attrs`` with defaults filled in; unknown or missing attributes raise."""
        attrs = dict(attrs or {})
        unknown = sorted(set(attrs) - set(self.attrs))
        if unknown:
            known = ", ".join(self.attrs) or "none"
            raise OpAttributeError(
                f"op {self.name!r} has no attribute {', '.join(map(repr, unknown))}; "
                f"its attributes are: {known}")
        out = {}
        for k, default in self.attrs.items():
            if k in attrs and attrs[k] is not None:
                out[k] = attrs[k]
            elif default is REQUIRED:
                raise OpAttributeError(f"op {self.name!r} needs the attribute {k!r}")
            elif default is not None:
                out[k] = default
        return Attrs(out)

    def check_arity(self, n: int) -> None:
        lo, hi = self.num_inputs
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            raise GraphError(f"op {self.name!r} takes {want} input(s), got {n}")

    def infer_type(self, arg_types: Sequence[Type], attrs: Mapping[str, Any] | None) -> Type:
        """The output type of this op applied to ``arg_types`` (raises on bad inputs)."""
        self.check_arity(len(arg_types))
        for k, t in enumerate(arg_types):
            if not isinstance(t, TensorType):
                raise GraphError(
                    f"input {k} of op {self.name!r} is a {t}, not a tensor; pick one item of "
                    "the tuple with TupleGetItem")
        return self.infer(tuple(arg_types), self.normalize_attrs(attrs))

    def __repr__(self) -> str:
        return f"<Op {self.name} ({self.kind.name.lower()})>"


_REGISTRY: dict[str, Op] = {}


def register(name: str, *, kind: OpKind, infer, reference, attrs=None, num_inputs=(1, 1),
             doc: str = "", is_view: bool = False, reads_type_only: bool = False,
             onnx: str | None = None, grad_ops: tuple = (),
             gradient_of: str | None = None, indices: Callable | None = None,
             onnx_attrs: Any = None) -> Op:
    """Add an op to the registry (re-registering a name is an error: names are global).

    Most ops are declared with :mod:`mlcbook.ops.declare`, which derives ``infer`` and
    ``reference`` from the op's compute; ``register`` takes them written by hand.
    """
    if name in _REGISTRY:
        raise GraphError(f"op {name!r} is already registered; pick another name")
    op = Op(name, OpKind(kind), infer, reference, dict(attrs or {}), tuple(num_inputs), doc,
            is_view=is_view, reads_type_only=reads_type_only, onnx=onnx, grad_ops=tuple(grad_ops),
            gradient_of=gradient_of, indices=indices, onnx_attrs=onnx_attrs)
    _REGISTRY[name] = op
    return op


def register_legalization(name: str):
    """Decorator attaching a legalization (TE tensors, attrs, output type -> TE tensor(s))."""
    def deco(fn):
        object.__setattr__(get(name), "legalize", fn)
        return fn
    return deco


def unregister(name: str) -> None:
    """Remove an op (for exercises that add their own op and clean up after)."""
    _REGISTRY.pop(name, None)


def get(name: str) -> Op:
    """The op called ``name``."""
    op = _REGISTRY.get(name)
    if op is None:
        import difflib
        close = difflib.get_close_matches(name, _REGISTRY, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        raise UnknownOpError(f"no op named {name!r} is registered{hint} "
                             "(mb.ops.list_ops() lists them)")
    return op


def view_ops() -> tuple[str, ...]:
    """The names of the ops whose output is a view of their input (``Op.is_view``), sorted.

        >>> view_ops()
        ('flatten', 'reshape', 'squeeze', 'unsqueeze')
    """
    return tuple(sorted(n for n, op in _REGISTRY.items() if op.is_view))


def list_ops(gradients: bool = False) -> list[str]:
    """The names of the registered ops, sorted; with ``gradients``, also the ops that only
    autodiff makes, each computing an op's input gradient (``relu_grad``)."""
    return sorted(n for n, op in _REGISTRY.items() if gradients or op.gradient_of is None)
