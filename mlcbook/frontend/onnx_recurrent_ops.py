"""Converters of ONNX's ``RNN``, ``GRU`` and ``LSTM`` onto the graph ops ``rnn``, ``gru``
and ``lstm`` (:mod:`mlcbook.ops.recurrent`): absent optional inputs become zero constants,
``layout=1`` (batch-major) becomes transposes around the call, and a constant
``sequence_lens`` that covers the whole sequence is dropped.

    >>> CONVERTERS["LSTM"].outputs
    3

Supported: every direction, ``clip``, GRU's ``linear_before_reset``, LSTM's peepholes,
``sequence_lens`` (constant or an input), and the activations without parameters
(Sigmoid, Tanh, Relu, Softsign, Softplus); activations that take ``activation_alpha`` /
``activation_beta`` and LSTM's ``input_forget=1`` are reported as unsupported.
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Constant, TupleGetItem
from ..te.ops.recurrent import ACTIVATIONS
from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype

_CELLS = {"RNN": "rnn", "GRU": "gru", "LSTM": "lstm"}
_COMMON = ("activations", "clip", "direction", "hidden_size", "layout")


def _check(attrs):
    bad = [a for a in attrs.get("activations", ()) if a.lower() not in ACTIVATIONS]
    out = [f"activations {', '.join(bad)} (mlcbook supports the activations without "
           f"parameters: {', '.join(ACTIVATIONS)})"] if bad else []
    if attrs.get("input_forget", 0):
        out.append("input_forget=1 (coupled input and forget gates)")
    return out


@converter("RNN", attrs=_COMMON, outputs=2, check=_check)
@converter("GRU", attrs=_COMMON + ("linear_before_reset",), outputs=2, check=_check)
@converter("LSTM", attrs=_COMMON + ("input_forget",), outputs=3, check=_check)
@guard_dtype
def _recurrent(cx, ins, attrs):
    cell = _CELLS[cx.node.op_type]
    x, w, r, b, seq_lens, h0, c0, p = list(ins) + [None] * (8 - len(ins))
    batch_major = attrs.get("layout", 0) == 1
    if batch_major:
        x = cx.call("transpose", x, perm=(1, 0, 2), suffix="_x")
        h0, c0 = (None if s is None else cx.call("transpose", s, perm=(1, 0, 2),
                                                 suffix=f"_{n}")
                  for s, n in ((h0, "h0"), (c0, "c0")))
    dirs, hidden, dtype = w.shape[0], r.shape[-1], x.type.dtype
    if attrs.get("hidden_size", hidden) != hidden:
        raise Unsupported(f"hidden_size={attrs['hidden_size']} but R {r.shape} has hidden "
                          f"size {hidden}")

    def zeros(shape):
        return Constant(np.zeros(shape, dtype))

    state = (dirs, x.shape[1], hidden)
    args = [x, w, r, zeros((dirs, 2 * w.shape[1])) if b is None else b,
            zeros(state) if h0 is None else h0]
    if cell == "lstm":
        args += [zeros(state) if c0 is None else c0,
                 zeros((dirs, 3 * hidden)) if p is None else p]
    if seq_lens is not None and not (isinstance(seq_lens, Constant)
                                     and np.all(seq_lens.data == x.shape[0])):
        args.append(seq_lens)
    kw = {"direction": attrs.get("direction", "forward"),
          "activations": tuple(a.lower() for a in attrs.get("activations", ())),
          "clip": attrs.get("clip")}
    if cell == "gru":
        kw["linear_before_reset"] = attrs.get("linear_before_reset", 0)
    call = cx.call(cell, *args, **kw)
    outs = [TupleGetItem(call, i) for i in range(3 if cell == "lstm" else 2)]
    if batch_major:
        outs = [cx.call("transpose", outs[0], perm=(2, 0, 1, 3), suffix="_y")] + [
            cx.call("transpose", o, perm=(1, 0, 2), suffix=f"_{n}")
            for o, n in zip(outs[1:], ("y_h", "y_c"))]
    return outs


__all__ = ["CONVERTERS"]
