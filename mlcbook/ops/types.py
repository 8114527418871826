"""The types of graph values: :class:`TensorType` (static shape + dtype) and :class:`TupleType`,
and :class:`Attrs`, the immutable attribute mapping of an op call.

They live beside the operators because every op's shape inference speaks them; the graph IR
re-exports them as ``mb.graph.TensorType``.

    >>> TensorType((64, 784), "float32")
    Tensor((64, 784), "float32")
    >>> TensorType((64, 784), "float32").size
    50176
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Iterator

import ml_dtypes  # noqa: F401 - gives numpy the low-bit dtypes by name (np.dtype("int4"))
import numpy as np

from ..errors import OpDTypeError, OpShapeError
from ..te.ops.lowbit import FORMATS
from ..tir.expr import DTYPES, FLOAT_DTYPES

#: ONNX's low-bit element types (float8, float4, int4, int2; ml_dtypes' numpy names): the
#: loop IR stores them one per byte, as uint8 (see :mod:`mlcbook.te.ops.lowbit`)
LOWBIT_DTYPES = tuple(FORMATS)
#: dtypes a graph value may have: the loop IR's, and the low-bit storage types
GRAPH_DTYPES = DTYPES + LOWBIT_DTYPES


def storage_dtype(dtype: str) -> str:
    """The loop-IR dtype that stores graph values of ``dtype``: ``uint8`` for the low-bit
    types, the dtype itself for the others.

        >>> storage_dtype("float8_e4m3fn"), storage_dtype("float32")
        ('uint8', 'float32')
    """
    return "uint8" if dtype in LOWBIT_DTYPES else dtype


def as_storage(a: np.ndarray) -> np.ndarray:
    """``a`` viewed in its :func:`storage_dtype` (the same memory)."""
    return a.view(np.uint8) if a.dtype.name in LOWBIT_DTYPES else a


def is_float_dtype(dtype: Any) -> bool:
    """Whether a numpy dtype (or name) is a float type, bfloat16 included (numpy files
    ml_dtypes' bfloat16 under kind ``'V'``, not ``'f'``): ``is_float_dtype("bfloat16")``."""
    return np.dtype(dtype).name in FLOAT_DTYPES


def check_graph_dtype(dtype: Any) -> str:
    """The dtype's name if graph values may have it, else raise :class:`OpDTypeError`."""
    name = getattr(dtype, "name", dtype)
    if isinstance(name, type):
        name = np.dtype(name).name
    if name not in GRAPH_DTYPES:
        raise OpDTypeError(
            f"dtype {dtype!r} is not supported by mlcbook graphs; use one of {', '.join(GRAPH_DTYPES)}")
    return name


class Type:
    """Base of value types."""

    __slots__ = ()


@dataclass(frozen=True)
class TensorType(Type):
    """A tensor of static ``shape`` (non-negative ints; ``()`` is a scalar) and ``dtype``."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self):
        shape = tuple(self.shape)
        for s in shape:
            if isinstance(s, (np.integer,)):
                continue
            if not isinstance(s, int) or isinstance(s, bool) or s < 0:
                raise OpShapeError(
                    f"tensor shape {shape} has the dimension {s!r}; every dimension must be a "
                    "non-negative int (mlcbook compiles static shapes)")
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        object.__setattr__(self, "dtype", check_graph_dtype(self.dtype))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        return f"Tensor({self.shape}, \"{self.dtype}\")"

    __repr__ = __str__


@dataclass(frozen=True)
class TupleType(Type):
    """The type of a tuple of values, e.g. the outputs of ``split``."""

    fields: tuple[Type, ...]

    def __post_init__(self):
        object.__setattr__(self, "fields", tuple(self.fields))

    def __str__(self) -> str:
        return "Tuple(" + ", ".join(str(f) for f in self.fields) + ")"

    __repr__ = __str__


def type_of_array(a: np.ndarray) -> TensorType:
    """The TensorType of a numpy array."""
    return TensorType(tuple(a.shape), check_graph_dtype(a.dtype))


def _freeze(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, np.ndarray):
        return tuple(_freeze(x) for x in v.tolist()) if v.ndim else v.item()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (int, float, str, bool)) or v is None:
        return v
    raise TypeError(f"op attribute values must be numbers, strings or tuples of them, got {v!r}")


class Attrs(Mapping):
    """An immutable, hashable mapping of op attributes (values: numbers, strings, tuples).

    >>> Attrs(axis=1)["axis"]
    1
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping | None = None, **kwargs):
        d = dict(items or {}, **kwargs)
        object.__setattr__(self, "_items", tuple(sorted((k, _freeze(v)) for k, v in d.items())))

    def __setattr__(self, name, value):
        raise AttributeError("Attrs is immutable")

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other) -> bool:
        if isinstance(other, Attrs):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self == Attrs(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._items)

    def __repr__(self) -> str:
        return "Attrs(" + ", ".join(f"{k}={v!r}" for k, v in self._items) + ")"
