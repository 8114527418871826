"""How a declared op's attributes map to those of the ONNX op it stands for, where the two
differ (``declare.op(..., onnx_attrs=)``). The importer and the exporter both read the one
mapping (:mod:`mlcbook.frontend.onnx_ops`, :mod:`mlcbook.frontend.onnx_export`), so such an
op needs no converter written by hand.

    >>> gemm = OnnxAttrs(names={"trans_a": "transA", "trans_b": "transB"})
    >>> gemm.onnx_name("trans_a"), gemm.onnx_name("alpha")
    ('transA', 'alpha')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping


@dataclass(frozen=True)
class OnnxAttrs:
    """The ONNX form of an op's attributes; an attribute it does not name keeps its name
    and its value.

    - ``names``: op attribute -> its ONNX name.
    - ``dtypes``: op attributes holding a dtype, which ONNX gives as the number of an
      element type (Cast's ``to``).
    - ``onnx_only``: ONNX attributes the op has not (a conv's ``auto_pad``): the import
      accepts them and hands them to ``derive``, the export leaves them out.
    - ``derive(attrs, types, used)``: the op attributes ONNX leaves implicit, from the node's
      attributes (under the op's names, the ``onnx_only`` ones under their own), the types
      of the inputs given and which of the node's outputs are used (a conv's pads from its
      ``auto_pad``, layer_norm's ``num_outputs`` from the outputs used).
    - ``local``: op attributes ONNX has not -> None where the node's form implies them
      (not exported), else why a value other than the default has no ONNX form (the
      export refuses it with that reason, which ends with what to do instead).
    - ``inputs``: op attributes ONNX gives as inputs -> the input's index (Reshape's
      ``shape``: 1): the import needs them known (constants, or folded from shapes) and
      reads their integers as a tuple; the export writes them as int64 initializers.
    - ``check(attrs)``: the problems of the node's attribute values, as messages (the
      import lists every node's before it converts any).
    - ``outputs``: how many outputs the ONNX op has.
    """

    names: Mapping[str, str] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ()
    onnx_only: tuple[str, ...] = ()
    derive: Callable[[dict, list, tuple], Mapping] | None = None
    local: Mapping[str, str | None] = field(default_factory=dict)
    inputs: Mapping[str, int] = field(default_factory=dict)
    check: Callable[[Mapping], list[str]] | None = None
    outputs: int = 1

    def onnx_name(self, attr: str) -> str:
        """The ONNX name of the op's attribute ``attr``."""
        return self.names.get(attr, attr)


#: the mapping of an op whose attributes are its ONNX op's, under the same names
SAME_NAMES = OnnxAttrs()

__all__ = ["OnnxAttrs", "SAME_NAMES"]
