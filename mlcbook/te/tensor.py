"""Tensors of tensor expressions: placeholders (inputs) and computed stages.

    >>> A = placeholder((4, 8), "float32", name="A")
    >>> B = compute((4, 8), lambda i, j: A[i, j] * 2.0, name="B")
    >>> B.shape, B.dtype, B.op.axis
    ((4, 8), 'float32', (Var(i), Var(j)))

A :class:`Tensor` wraps the :class:`~mlcbook.tir.Buffer` it will live in and the operation
that produces it. Reading ``A[i, j]`` builds a ``tir.BufferLoad`` of that buffer, so a
compute body is ordinary loop-IR expression; :func:`~mlcbook.te.create_prim_func` puts
each stage into a block.
"""

from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass
from typing import Callable, Union

from ..errors import TEError
from ..tir.expr import Buffer, BufferLoad, PrimExpr, Var, as_expr, check_dtype
from ..tir.functor import post_order_visit
from .reduction import Reduce, ReduceAxis


@dataclass(frozen=True, eq=False)
class PlaceholderOp:
    """An input of the tensor program: nothing computes it."""


@dataclass(frozen=True, eq=False)
class ComputeOp:
    """``out[axis] = body``; ``body`` may be a :class:`Reduce` (then only at its top).

    ``inputs`` are the tensors the body reads, in order of first use; ``attrs`` (sorted
    ``(key, value)`` pairs) become the annotations of the stage's block.
    """

    axis: tuple[Var, ...]
    body: PrimExpr
    inputs: tuple["Tensor", ...]
    attrs: tuple = ()

    @property
    def reduce_axis(self) -> tuple[ReduceAxis, ...]:
        return self.body.axis if isinstance(self.body, Reduce) else ()


@dataclass(frozen=True, eq=False)
class Tensor:
    """A tensor of a TE program: ``A[i, j]`` reads it inside another ``te.compute``."""

    buffer: Buffer
    op: Union[PlaceholderOp, ComputeOp]

    __hash__ = object.__hash__

    @property
    def shape(self) -> tuple[int, ...]:
        return self.buffer.shape

    @property
    def dtype(self) -> str:
        return self.buffer.dtype

    @property
    def name(self) -> str:
        return self.buffer.name

    @property
    def ndim(self) -> int:
        return self.buffer.ndim

    @property
    def is_placeholder(self) -> bool:
        return isinstance(self.op, PlaceholderOp)

    def __getitem__(self, idx) -> BufferLoad:
        if not isinstance(idx, tuple):
            idx = (idx,)
        for i in idx:
            if isinstance(i, slice):
                raise TEError(
                    f"tensor {self.name!r} is indexed with a slice; a compute body reads one "
                    "element at a time, e.g. A[i, j]")
        return self.buffer[idx]

    def __iter__(self):
        # without this, __getitem__ would make Python iterate A[0], A[1], ... forever
        raise TEError(f"tensor {self.name!r} is not iterable; read elements as "
                      f"{self.name}[i, ...] inside te.compute")

    def __repr__(self) -> str:
        kind = "placeholder" if self.is_placeholder else "compute"
        return f"Tensor({self.name!r}, shape={self.shape}, dtype={self.dtype!r}, {kind})"


# Buffer -> the Tensor that owns it, so that a compute can find the tensors its body reads.
# Values are weak: a tensor nobody holds disappears; a compute keeps its inputs alive itself.
_owner: "weakref.WeakValueDictionary[int, Tensor]" = weakref.WeakValueDictionary()


def _new_tensor(buffer: Buffer, op) -> Tensor:
    t = Tensor(buffer, op)
    _owner[id(buffer)] = t
    return t


def _check_shape(shape, what: str) -> tuple[int, ...]:
    if isinstance(shape, int) or hasattr(shape, "__index__"):
        shape = (shape,)
    try:
        dims = tuple(shape)
    except TypeError:
        raise TEError(f"{what}: shape {shape!r} is not a tuple of ints") from None
    out = []
    for d in dims:
        if isinstance(d, bool) or not hasattr(d, "__index__"):
            raise TEError(f"{what}: shape {dims!r} has the non-integer dimension {d!r}; "
                          "mlcbook compiles static shapes, give ints")
        if d.__index__() <= 0:
            raise TEError(f"{what}: shape {dims!r} has the non-positive dimension {d}; "
                          "every dimension must be at least 1")
        out.append(d.__index__())
    return tuple(out)


def placeholder(shape, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor: ``placeholder((128, 128), "float32", name="A")``."""
    shape = _check_shape(shape, f"placeholder {name!r}")
    return _new_tensor(Buffer(name, shape, check_dtype(dtype)), PlaceholderOp())


def compute(shape, fcompute: Callable[..., object], name: str = "compute",
            attrs: dict | None = None) -> Tensor:
    """A computed tensor: ``out[i, j, ...] = fcompute(i, j, ...)``.

    ``fcompute`` gets one int32 variable per dimension (named after its parameters) and
    returns an expression, or a reduction ``te.sum/max/min(..., axis=...)`` as the whole body::

        k = reduce_axis(64, name="k")
        C = compute((32, 32), lambda i, j: sum(A[i, k] * B[k, j], axis=k), name="C")

    ``attrs`` annotate the stage's block for the schedules, e.g.
    ``attrs={tir.KEEP_MATERIALIZED: True}`` for a value read many times.
    """
    shape = _check_shape(shape, f"compute {name!r}")
    return compute_named(shape, _axis_names(fcompute, len(shape), f"compute {name!r}"),
                         fcompute, name, attrs)


def compute_named(shape, axis_names, fcompute: Callable[..., object], name: str,
                  attrs: dict | None = None) -> Tensor:
    """:func:`compute` with the index variables named ``axis_names`` (for the operator
    library, whose ``fcompute`` takes ``*idx``)."""
    what = f"compute {name!r}"
    if attrs is not None and (not isinstance(attrs, dict)
                              or not all(isinstance(k, str) and k for k in attrs)):
        raise TEError(f"{what}: attrs must be a dict with non-empty str keys, got {attrs!r}")
    shape = _check_shape(shape, what)
    if len(axis_names) != len(shape):
        raise TEError(f"{what}: {len(axis_names)} axis names for {len(shape)} dimensions")
    axis = tuple(Var(n) for n in axis_names)
    try:
        body = fcompute(*axis)
    except TypeError as e:
        if "truth value" in str(e):
            raise TEError(f"{what}: {e}") from None
        raise
    if isinstance(body, Tensor):
        raise TEError(f"{what}: fcompute returned the tensor {body.name!r} itself; return an "
                      f"element of it, e.g. {body.name}[i, j]")
    body = as_expr(body)
    _check_reductions(body, what)
    _check_vars(body, axis, what)
    inputs = _input_tensors(body, what)
    return _new_tensor(Buffer(name, shape, body.dtype),
                       ComputeOp(axis, body, inputs, tuple(sorted((attrs or {}).items()))))


def _axis_names(fcompute, ndim: int, what: str) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return [f"i{d}" for d in range(ndim)]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return [f"i{d}" for d in range(ndim)]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                  and p.default is p.empty]
    if len(positional) != ndim:
        raise TEError(
            f"{what}: fcompute takes {len(positional)} index argument(s) but the shape has "
            f"{ndim} dimension(s); give it one parameter per dimension, e.g. lambda i, j: ...")
    return [p.name for p in positional]


def _check_reductions(body: PrimExpr, what: str) -> None:
    top = body if isinstance(body, Reduce) else None

    def visit(n):
        if isinstance(n, Reduce) and n is not top:
            raise TEError(
                f"{what}: a te.{n.combiner}(...) reduction is used inside a larger expression; "
                "a reduction must be the whole body of te.compute. Compute it as its own stage "
                "and read that tensor in the next one")

    post_order_visit(body, visit)


def _check_vars(body: PrimExpr, axis: tuple[Var, ...], what: str) -> None:
    allowed = {id(v) for v in axis}
    if isinstance(body, Reduce):
        allowed |= {id(v) for v in body.axis}

    def visit(n):
        if not isinstance(n, Var) or id(n) in allowed:
            return
        if isinstance(n, ReduceAxis):
            raise TEError(
                f"{what}: the body uses reduce axis {n.name!r} but no reduction lists it; wrap "
                f"the body in te.sum/max/min(..., axis={n.name})")
        raise TEError(
            f"{what}: the body uses variable {n.name!r}, which is not one of this compute's "
            "index arguments; use only the lambda's own parameters and reduce axes")

    post_order_visit(body, visit)


def _input_tensors(body: PrimExpr, what: str) -> tuple[Tensor, ...]:
    found: dict[int, Tensor] = {}

    def visit(n):
        if isinstance(n, BufferLoad) and id(n.buffer) not in found:
            t = _owner.get(id(n.buffer))
            if t is None or t.buffer is not n.buffer:
                raise TEError(
                    f"{what}: the body reads buffer {n.buffer.name!r}, which is not a te tensor; "
                    "make inputs with te.placeholder and read them as A[i, j]")
            found[id(n.buffer)] = t

    # post-order visits a load's indices before the load; order of first use is kept by
    # the dict, which is what gives blocks their reads in source order
    post_order_visit(body, visit)
    return tuple(found.values())
