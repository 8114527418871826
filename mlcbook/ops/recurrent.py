"""``rnn``, ``gru`` and ``lstm``: ONNX's recurrent layers (sequence-major layout, every
optional input given), declared once from :func:`mlcbook.te.ops.recurrent.recurrent`, which
unrolls the static sequence.

    >>> get("rnn").infer_type([TensorType((5, 2, 3)), TensorType((1, 4, 3)),
    ...                        TensorType((1, 4, 4)), TensorType((1, 8)),
    ...                        TensorType((1, 2, 4))], {})
    Tuple(Tensor((5, 1, 2, 4), "float32"), Tensor((1, 2, 4), "float32"))

Inputs: ``x`` (T, B, I), ``w`` (D, G*H, I), ``r`` (D, G*H, H), ``b`` (D, 2*G*H), ``h0``
(D, B, H), for ``lstm`` also ``c0`` (D, B, H) and the peepholes ``p`` (D, 3*H), and last,
optionally, the int ``seq_lens`` (B,). Outputs: ``Y`` (T, D, B, H), ``Y_h`` and for ``lstm``
``Y_c`` (D, B, H).
"""

from __future__ import annotations

from ..te.ops.recurrent import recurrent
from . import declare
from ._infer import require_dtype
from .registry import OpKind


def _check(cell: str):
    """The dtype of x (the compute checks the shapes, the direction and the activations)."""
    def check(types, attrs):
        require_dtype(cell, types[0], ("float32", "float64"), "input x")
    return check


def _compute(cell: str):
    states = 2 if cell == "lstm" else 0      # lstm's c0 and peepholes come before seq_lens

    def compute(x, w, r, b, h0, *rest, direction, activations, clip=None,
                linear_before_reset=0, name):
        c0, p = rest[:states] if states else (None, None)
        seq_lens = rest[states] if len(rest) > states else None
        return recurrent(cell, x, w, r, b, h0, c0, p, seq_lens, direction=direction,
                         activations=activations or None, clip=clip,
                         linear_before_reset=bool(linear_before_reset), name=name)
    return compute


_DOCS = {"rnn": "Elman RNN: h' = f(x W.T + h R.T + b), over a static sequence",
         "gru": "GRU layer (gates z, r, h) over a static sequence",
         "lstm": "LSTM layer (gates i, o, f, c; peepholes) over a static sequence"}


def _onnx_attrs(attrs, types, opset):
    # ONNX's activations are capitalized ("Tanh"), and it is told the hidden size (R's)
    return {"hidden_size": types[2].shape[-1],
            "activations": tuple(a.capitalize() for a in attrs["activations"]) or None}


def _onnx_places(cell: str):
    # ONNX takes sequence_lens (input 4) before the states, which the op takes first
    order = (0, 1, 2, 3, 5, 6, 7, 4) if cell == "lstm" else (0, 1, 2, 3, 5, 4)
    return lambda attrs, n: (order[:n], None)


# (the import of RNN, GRU and LSTM fills in the inputs a node leaves out and transposes the
# batch-major layout: mlcbook.frontend.onnx_recurrent_ops)
for _cell, _n in (("rnn", 5), ("gru", 5), ("lstm", 7)):
    declare.op(_cell, _compute(_cell), kind=OpKind.OPAQUE,
               attrs={"direction": "forward", "activations": (), "clip": None,
                      **({"linear_before_reset": 0} if _cell == "gru" else {})},
               num_inputs=(_n, _n + 1), check=_check(_cell), doc=_DOCS[_cell],
               onnx=_cell.upper(), onnx_attrs=declare.OnnxAttrs(export=_onnx_attrs,
                                                                places=_onnx_places(_cell)))
