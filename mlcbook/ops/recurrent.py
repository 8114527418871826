"""``rnn``, ``gru`` and ``lstm``: ONNX's recurrent layers (sequence-major layout, every
optional input given), legalized to :func:`mlcbook.te.ops.recurrent.recurrent`, which
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

import numpy as np

from ..errors import OpAttributeError, OpShapeError
from ..te.ops.recurrent import ACTIVATIONS, DEFAULT_ACTIVATIONS, GATES, recurrent
from ._infer import INTS, require_dtype
from .registry import OpKind, register, register_legalization
from .types import TensorType, TupleType

_DIRECTIONS = ("forward", "reverse", "bidirectional")


def _np_act(kind: str, v: np.ndarray) -> np.ndarray:
    if kind == "sigmoid":
        return 1 / (1 + np.exp(-v))
    if kind == "tanh":
        return np.tanh(v)
    if kind == "relu":
        return np.maximum(v, 0)
    if kind == "softsign":
        return v / (1 + np.abs(v))
    return np.logaddexp(v, 0)  # softplus


def _parts(cell: str, types):
    """The named input types of a call (``seq_lens`` None when absent)."""
    names = ["x", "w", "r", "b", "h0"] + (["c0", "p"] if cell == "lstm" else [])
    if len(types) not in (len(names), len(names) + 1):
        raise OpShapeError(f"{cell}: takes the inputs {', '.join(names)} and optionally "
                           f"seq_lens; got {len(types)} input(s)")
    parts = dict(zip(names, types))
    parts["seq_lens"] = types[len(names)] if len(types) > len(names) else None
    return parts


def _infer(cell: str):
    def infer(types, attrs):
        a = _parts(cell, types)
        x, r = a["x"], a["r"]
        require_dtype(cell, x, ("float32", "float64"), "input x")
        if attrs["direction"] not in _DIRECTIONS:
            raise OpAttributeError(f"{cell}: direction={attrs['direction']!r} is not one of "
                                   f"{', '.join(_DIRECTIONS)}")
        dirs = 2 if attrs["direction"] == "bidirectional" else 1
        if x.ndim != 3 or r.ndim != 3:
            raise OpShapeError(f"{cell}: x {x.shape} and r {r.shape} must be 3-D: "
                               "(seq_length, batch, input_size), (directions, gates*hidden, "
                               "hidden)")
        (steps, batch, inputs), hidden, g = x.shape, r.shape[-1], GATES[cell]
        want = {"w": (dirs, g * hidden, inputs), "r": (dirs, g * hidden, hidden),
                "b": (dirs, 2 * g * hidden), "h0": (dirs, batch, hidden)}
        if cell == "lstm":
            want.update(c0=(dirs, batch, hidden), p=(dirs, 3 * hidden))
        for arg, shape in want.items():
            if a[arg].shape != shape or a[arg].dtype != x.dtype:
                raise OpShapeError(f"{cell}: {arg} is {a[arg]}; with x {x.shape} and {dirs} "
                                   f"direction(s) of hidden size {hidden} it must be "
                                   f"Tensor({shape}, {x.dtype!r})")
        if a["seq_lens"] is not None:
            require_dtype(cell, a["seq_lens"], INTS, "input seq_lens")
            if a["seq_lens"].shape != (batch,):
                raise OpShapeError(f"{cell}: seq_lens is {a['seq_lens']}; it must be "
                                   f"({batch},), one length per batch row")
        _activations(cell, attrs, dirs)
        state = TensorType((dirs, batch, hidden), x.dtype)
        outs = (TensorType((steps, dirs, batch, hidden), x.dtype), state)
        return TupleType(outs + ((state,) if cell == "lstm" else ()))
    return infer


def _activations(cell: str, attrs, dirs: int) -> tuple[str, ...]:
    acts = tuple(attrs.get("activations") or DEFAULT_ACTIVATIONS[cell] * dirs)
    want = len(DEFAULT_ACTIVATIONS[cell]) * dirs
    if len(acts) != want:
        raise OpAttributeError(f"{cell}: {len(acts)} activations given; it takes {want} "
                               f"({len(DEFAULT_ACTIVATIONS[cell])} per direction)")
    bad = [a for a in acts if a not in ACTIVATIONS]
    if bad:
        raise OpAttributeError(f"{cell}: activation(s) {', '.join(map(repr, bad))} are not "
                               f"supported; Instead: use {', '.join(ACTIVATIONS)}")
    return acts


def _reference(cell: str):
    def ref(*arrays, direction="forward", activations=(), clip=None, linear_before_reset=0):
        a = _parts(cell, arrays)
        x = a["x"].astype(np.float64)
        steps, batch, _ = x.shape
        dirs = 2 if direction == "bidirectional" else 1
        hidden, g = a["r"].shape[-1], GATES[cell]
        acts = _activations(cell, {"activations": activations}, dirs)
        n_act = len(acts) // dirs
        lens = (np.full(batch, steps) if a["seq_lens"] is None
                else a["seq_lens"].astype(np.int64))
        y = np.zeros((steps, dirs, batch, hidden))
        y_h, y_c = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
        for d in range(dirs):
            w, r = a["w"][d].astype(np.float64), a["r"][d].astype(np.float64)
            wb, rb = np.split(a["b"][d].astype(np.float64), 2)
            f, *rest = acts[d * n_act:(d + 1) * n_act]

            def act(kind, v):
                return _np_act(kind, v if clip is None else np.clip(v, -clip, clip))

            h = a["h0"][d].astype(np.float64)
            c = a["c0"][d].astype(np.float64) if cell == "lstm" else None
            order = range(steps - 1, -1, -1) if direction == "reverse" or d else range(steps)
            for t in order:
                live = (t < lens)[:, None]
                xg = np.split(x[t] @ w.T + wb, g, axis=1)
                if cell == "rnn":
                    h_new = act(f, xg[0] + h @ r.T + rb)
                elif cell == "gru":
                    rw, rbs = np.split(r, 3), np.split(rb, 3)
                    z = act(f, xg[0] + h @ rw[0].T + rbs[0])
                    reset = act(f, xg[1] + h @ rw[1].T + rbs[1])
                    if linear_before_reset:
                        cand = act(rest[0], xg[2] + reset * (h @ rw[2].T + rbs[2]))
                    else:
                        cand = act(rest[0], xg[2] + (reset * h) @ rw[2].T + rbs[2])
                    h_new = (1 - z) * cand + z * h
                else:
                    pi, po, pf = np.split(a["p"][d].astype(np.float64), 3)
                    hg = np.split(h @ r.T + rb, 4, axis=1)
                    i_g = act(f, xg[0] + hg[0] + pi * c)
                    f_g = act(f, xg[2] + hg[2] + pf * c)
                    c_new = f_g * c + i_g * act(rest[0], xg[3] + hg[3])
                    o_g = act(f, xg[1] + hg[1] + po * c_new)
                    h_new = o_g * _np_act(rest[1], c_new)
                    c = np.where(live, c_new, c)
                h = np.where(live, h_new, h)
                y[t, d] = np.where(live, h_new, 0)
            y_h[d] = h
            if cell == "lstm":
                y_c[d] = c
        dt = a["x"].dtype
        outs = (y.astype(dt), y_h.astype(dt))
        return outs + ((y_c.astype(dt),) if cell == "lstm" else ())
    return ref


def _legalize(cell: str):
    def legalize(ins, attrs, out_type):
        a = _parts(cell, ins)
        return recurrent(cell, a["x"], a["w"], a["r"], a["b"], a["h0"], a.get("c0"), a.get("p"),
                         a["seq_lens"], direction=attrs["direction"],
                         activations=attrs.get("activations") or None, clip=attrs.get("clip"),
                         linear_before_reset=bool(attrs.get("linear_before_reset", 0)),
                         name=cell)
    return legalize


_DOCS = {"rnn": "Elman RNN: h' = f(x W.T + h R.T + b), over a static sequence",
         "gru": "GRU layer (gates z, r, h) over a static sequence",
         "lstm": "LSTM layer (gates i, o, f, c; peepholes) over a static sequence"}

for _cell, _n in (("rnn", 5), ("gru", 5), ("lstm", 7)):
    register(_cell, kind=OpKind.OPAQUE, infer=_infer(_cell), reference=_reference(_cell),
             attrs={"direction": "forward", "activations": (), "clip": None,
                    **({"linear_before_reset": 0} if _cell == "gru" else {})},
             num_inputs=(_n, _n + 1), doc=_DOCS[_cell])
    register_legalization(_cell)(_legalize(_cell))
