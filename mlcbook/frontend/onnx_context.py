"""What the ONNX importer and its converters share: the state of one import
(:class:`Context`), the exception a converter raises for what mlcbook does not support,
and ONNX's element types.

    >>> onnx_dtype(1, "input 'x'")
    'float32'
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidModelError
from ..graph.expr import Call, Constant, Expr, Function, Var, post_order
from ..graph.interpret import evaluate
from ..ops.types import GRAPH_DTYPES

#: ONNX element types mlcbook supports, by TensorProto number
DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
          9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64", 16: "bfloat16"}
#: ONNX's low-bit types, by ml_dtypes' names (see mlcbook.ops.lowbit)
DTYPES.update({17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
               20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4_e2m1fn",
               24: "float8_e8m0fnu", 25: "uint2", 26: "int2"})
assert set(DTYPES.values()) == set(GRAPH_DTYPES)  # the loop IR's table is the source of truth

class Unsupported(Exception):
    """Raised by a converter: this node uses something mlcbook does not support."""


def onnx_dtype(elem_type: int, what: str) -> str:
    """The mlcbook dtype of an ONNX element type, or :class:`Unsupported` naming it."""
    if elem_type not in DTYPES:
        from onnx import TensorProto
        try:
            name = TensorProto.DataType.Name(elem_type)
        except ValueError:
            name = f"#{elem_type}"
        raise Unsupported(f"{what} has element type {name}, which mlcbook does not support "
                          f"(supported: {', '.join(sorted(set(DTYPES.values())))})")
    return DTYPES[elem_type]



class Context:
    """State of one import: ONNX value names -> graph values; the node being converted."""

    def __init__(self, opset: int):
        self.opset = opset
        self.values: dict[str, Expr] = {}
        #: ids of the values bound to ONNX names (folded already when they were bound)
        self.bound: set[int] = set()
        self.node = None
        #: an import for training (``from_onnx(..., training=True)``)
        self.training = False

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


    def ints(self, index: int, what: str | None = None) -> tuple[int, ...] | None:
        """The integers of input ``index`` (:meth:`static`) as a tuple; None if absent."""
        v = self.static(index, what)
        return None if v is None else tuple(int(a) for a in np.asarray(v).reshape(-1))

    def number(self, index: int, what: str | None = None):
        """The one value of input ``index`` (:meth:`static`: a 0-d or one-element tensor) as
        a Python number; None if absent."""
        v = self.static(index, what)
        if v is None:
            return None
        if np.size(v) != 1:
            raise Unsupported(f"its {what or f'input {index}'} must hold one value, got shape "
                              f"{np.shape(v)}")
        return np.asarray(v).reshape(-1)[0].item()


def tensor_array(tensor, what: str) -> np.ndarray:
    """The value of an ONNX TensorProto; InvalidModelError when its data does not hold
    exactly the elements its shape says (the checker lets longer raw data through)."""
    from onnx import numpy_helper
    try:
        return numpy_helper.to_array(tensor)
    except ValueError as e:
        raise InvalidModelError(f"{what} has shape {list(tensor.dims)} but its data holds a "
                                f"different number of elements ({e}); Instead: re-export the "
                                "model, or fix the tensor's dims or data") from None
