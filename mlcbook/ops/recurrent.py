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

from ..errors import OpAttributeError
from ..te.ops.recurrent import ACTIVATIONS, DEFAULT_ACTIVATIONS, recurrent
from . import declare
from ._infer import require_dtype
from .registry import OpKind

_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _check(cell: str):
    """The dtype of x, the direction and the activations, in the graph's words (the compute
    checks the shapes)."""
    def check(types, attrs):
        require_dtype(cell, types[0], ("float32", "float64"), "input x")
        if attrs["direction"] not in _DIRECTIONS:
            raise OpAttributeError(f"{cell}: direction={attrs['direction']!r} is not one of "
                                   f"{', '.join(_DIRECTIONS)}")
        per_dir = len(DEFAULT_ACTIVATIONS[cell])
        want = per_dir * (2 if attrs["direction"] == "bidirectional" else 1)
        acts = attrs["activations"]
        if acts and len(acts) != want:
            raise OpAttributeError(f"{cell}: {len(acts)} activations given; it takes {want} "
                                   f"({per_dir} per direction)")
        bad = [a for a in acts if a not in ACTIVATIONS]
        if bad:
            raise OpAttributeError(f"{cell}: activation(s) {', '.join(map(repr, bad))} are not "
                                   f"supported; Instead: use {', '.join(ACTIVATIONS)}")
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

for _cell, _n in (("rnn", 5), ("gru", 5), ("lstm", 7)):
    declare.op(_cell, _compute(_cell), kind=OpKind.OPAQUE,
               attrs={"direction": "forward", "activations": (), "clip": None,
                      **({"linear_before_reset": 0} if _cell == "gru" else {})},
               num_inputs=(_n, _n + 1), check=_check(_cell), doc=_DOCS[_cell])
