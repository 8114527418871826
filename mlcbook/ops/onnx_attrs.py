"""How a declared op's attributes map to those of the ONNX op it stands for, where the two
differ (``declare.op(..., onnx_attrs=)``). The importer and the exporter both read the one
mapping (:mod:`mlcbook.frontend.onnx_ops`, :mod:`mlcbook.frontend.onnx_export`), so such an
op needs no converter written by hand.

    >>> gemm = OnnxAttrs(names={"trans_a": "transA", "trans_b": "transB"})
    >>> gemm.onnx_name("trans_a"), gemm.onnx_name("alpha")
    ('transA', 'alpha')
    >>> trilu = OnnxAttrs(inputs={"k": OnnxInput(1, "scalar")})    # Trilu's k is input 1
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ..errors import ArgumentError, OpAttributeError


#: how an attribute given as an input is held: a 1-D tensor read as a tuple of ints or of
#: floats; a 0-d tensor or a 1-D tensor of one element, read as one number
INPUT_FORMS = ("ints", "floats", "scalar", "one")


@dataclass(frozen=True)
class OnnxInput:
    """An op attribute that the ONNX op gives as its input ``index``: the import needs its
    value known (a constant, or folded from shapes), the export writes it as an initializer.

    - ``form``: one of :data:`INPUT_FORMS` (Reshape's ``shape`` is ``"ints"``, Resize's
      ``scales`` ``"floats"``, Trilu's ``k`` a ``"scalar"``, TopK's ``K`` ``"one"``).
    - ``dtype``: its element type; ``"like"``: that of the op's input 0 (Clip's ``min``;
      an op of no inputs: its output's, Range's ``start``); None: int64, or float32 for
      ``"floats"``.
    - ``since``: the first opset that takes it as an input; before, the ONNX op has an
      attribute of the same name instead (ReduceMax's ``axes``: 18), which the import
      accepts and the export writes when the model's opset is older.
    """

    index: int
    form: str = "ints"
    dtype: str | None = None
    since: int = 1

    def __post_init__(self):
        if self.form not in INPUT_FORMS:
            raise ArgumentError(f"OnnxInput({self.index}, form={self.form!r}): the form is "
                                f"not one of {INPUT_FORMS}")

    def read(self, value: np.ndarray, name: str):
        """The attribute's value from the array of the input ``name``: a tuple, or one
        number (None stays None: an input left out)."""
        if value is None:
            return None
        flat = np.asarray(value).reshape(-1)
        if self.form in ("ints", "floats"):
            return tuple(int(v) if self.form == "ints" else float(v) for v in flat)
        if flat.size != 1:
            raise OpAttributeError(f"the input {name!r} (input {self.index}) must hold one "
                                   f"value, got shape {np.shape(value)}")
        return flat[0].item()

    def array(self, value, like_dtype: str) -> np.ndarray:
        """The input's array of the attribute's ``value`` (``like_dtype``: input 0's)."""
        dtype = like_dtype if self.dtype == "like" else \
            self.dtype or ("float32" if self.form == "floats" else "int64")
        data = np.asarray(value, dtype)
        return data.reshape(1) if self.form == "one" else data


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
      ``shape``: 1), for a 1-D int64 input read as a tuple of ints, or an
      :class:`OnnxInput` that says how it is held. An ``onnx_only`` name here is an input
      the op has not, handed to ``derive`` (Pad's ``axes``).
    - ``check(attrs)``: the problems of the node's attribute values, as messages (the
      import lists every node's before it converts any).
    - ``outputs``: how many outputs the ONNX op has.
    - ``export(attrs, types, opset)``: the export's counterpart of ``derive``: the ONNX
      attribute and input values implied by the call's attributes (all, defaults filled
      in), its inputs' types and the model's opset (None: the newest), replacing the
      call's (under the op's names, ``onnx_only`` ones under their own; None leaves one
      out): RNN's ``hidden_size`` from R's shape, Resize's ``sizes`` or its ``scales``.
    - ``places(attrs, n)``: where the call's ``n`` inputs and its outputs sit among the
      ONNX node's, two tuples of indices (None: in order), where ONNX has others between
      (LSTM's ``initial_h`` is its input 5; ``max_pool_indices`` is MaxPool's output 1, the
      other left unused). Export only: such ops import by a converter written by hand.
    - ``since``: the first opset whose ONNX op takes the op's attributes as they are, where
      their names do not tell (GridSample's modes: 20), or ``since(attrs, types)`` giving
      it; the export writes that opset or a newer one.
    """

    names: Mapping[str, str] = field(default_factory=dict)
    dtypes: tuple[str, ...] = ()
    onnx_only: tuple[str, ...] = ()
    derive: Callable[[dict, list, tuple], Mapping] | None = None
    local: Mapping[str, str | None] = field(default_factory=dict)
    inputs: Mapping[str, int | OnnxInput] = field(default_factory=dict)
    check: Callable[[Mapping], list[str]] | None = None
    outputs: int = 1
    export: Callable[[Mapping, list, int | None], Mapping] | None = None
    places: Callable[[Mapping, int], tuple] | None = None
    since: int | Callable[[Mapping, list], int] = 1

    def first_opset(self, attrs: Mapping, types: list) -> int:
        """``since`` for a call of these attributes (all of them) and input types."""
        return self.since(attrs, types) if callable(self.since) else self.since

    def onnx_name(self, attr: str) -> str:
        """The ONNX name of the op's attribute ``attr``."""
        return self.names.get(attr, attr)

    def input_forms(self) -> dict[str, OnnxInput]:
        """``inputs`` with every entry an :class:`OnnxInput`."""
        return {a: k if isinstance(k, OnnxInput) else OnnxInput(k)
                for a, k in self.inputs.items()}


#: the mapping of an op whose attributes are its ONNX op's, under the same names
SAME_NAMES = OnnxAttrs()

__all__ = ["OnnxAttrs", "OnnxInput", "INPUT_FORMS", "SAME_NAMES"]
