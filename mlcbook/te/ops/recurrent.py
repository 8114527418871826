"""Recurrent layers (ONNX's ``RNN``, ``GRU`` and ``LSTM``) unrolled over their sequence,
whose length is static.

    >>> y, y_h = recurrent("rnn", x, w, r, b, h0)            # x (T, B, I), w (D, H, I)
    >>> y, y_h, y_c = recurrent("lstm", x, w, r, b, h0, c0, p)

The layout and the gate order are ONNX's: ``x`` is (T, B, I); ``w`` (D, G*H, I) and ``r``
(D, G*H, H) hold the G gates of each of the D directions (GRU: z, r, h; LSTM: i, o, f, c);
``b`` (D, 2*G*H) is W's bias then R's; ``h0``/``c0`` are (D, B, H); LSTM's peepholes ``p``
are (D, 3*H) (i, o, f). The outputs are ``Y`` (T, D, B, H), ``Y_h`` (D, B, H) and, for
LSTM, ``Y_c`` (D, B, H).

How it is computed, per direction ``d``: one reduction multiplies every step's input by W
(``<name>_xw``, all T steps at once); then the steps run in order (backwards for the
reverse direction), each a product of the previous state with R (``<name>_hr_<d>_<t>``)
followed by an elementwise stage that applies the gates (``<name>_h_<d>_<t>``; LSTM's cell
state first, ``<name>_c_<d>_<t>``; GRU without ``linear_before_reset`` multiplies the reset
gate into the state before its product with R). ``Y`` gathers the steps' states. With
``seq_lens``, batch row ``b`` keeps its state from step ``seq_lens[b]`` on (in either
direction) and its ``Y`` there is 0.
"""

from __future__ import annotations

from ...errors import TEAttributeError, TEError, TEShapeError
from ...tir import expr as _e
from ...tir.stmt import KEEP_MATERIALIZED
from .. import reduction as _r
from ..tensor import Tensor
from .util import check_tensor, compute_named, const_like, load, store

#: gates per cell
GATES = {"rnn": 1, "gru": 3, "lstm": 4}
#: activations per direction and their defaults (f for the gates, g for the candidate, h for
#: LSTM's output)
DEFAULT_ACTIVATIONS = {"rnn": ("tanh",), "gru": ("sigmoid", "tanh"),
                       "lstm": ("sigmoid", "tanh", "tanh")}
DIRECTIONS = ("forward", "reverse", "bidirectional")
#: the activations without parameters (ONNX's names, lower case)
ACTIVATIONS = ("sigmoid", "tanh", "relu", "softsign", "softplus")


def activate(kind: str, v: _e.PrimExpr) -> _e.PrimExpr:
    """One of :data:`ACTIVATIONS` applied to the expression ``v``."""
    zero, one = const_like(0.0, v), const_like(1.0, v)
    if kind == "sigmoid":
        return _e.sigmoid(v)
    if kind == "tanh":
        return _e.tanh(v)
    if kind == "relu":
        return _e.max(v, zero)
    if kind == "softsign":
        return v / (one + _e.abs(v))
    if kind == "softplus":
        return _e.max(v, zero) + _e.log(one + _e.exp(-_e.abs(v)))
    raise TEError(f"recurrent: activation {kind!r} is not one of {', '.join(ACTIVATIONS)}")


def _check(cell, x, w, r, b, h0, c0, p, seq_lens, direction, activations):
    if cell not in GATES:
        raise TEError(f"recurrent: cell {cell!r} is not one of {', '.join(GATES)}")
    if direction not in DIRECTIONS:
        raise TEAttributeError(f"{cell}: direction={direction!r} is not one of "
                               f"{', '.join(DIRECTIONS)}")
    if x.ndim != 3 or not _e.is_float(x.dtype):
        raise TEShapeError(f"{cell}: x is {x.shape} {x.dtype}; it must be a float "
                           "(seq_length, batch, input_size) tensor")
    (t, batch, inputs), g = x.shape, GATES[cell]
    dirs, hidden = 2 if direction == "bidirectional" else 1, r.shape[-1]
    want = {"w": (w, (dirs, g * hidden, inputs)), "r": (r, (dirs, g * hidden, hidden)),
            "b": (b, (dirs, 2 * g * hidden)), "h0": (h0, (dirs, batch, hidden))}
    if cell == "lstm":
        want.update(c0=(c0, (dirs, batch, hidden)), p=(p, (dirs, 3 * hidden)))
    for arg, (tensor, shape) in want.items():
        check_tensor(tensor, cell, arg)
        if tensor.shape != shape or tensor.dtype != x.dtype:
            raise TEShapeError(f"{cell}: {arg} is {tensor.shape} "
                               f"{tensor.dtype}; with x {x.shape} and {dirs} direction(s) of "
                               f"hidden size {hidden} it must be {shape} {x.dtype}")
    if seq_lens is not None and (seq_lens.shape != (batch,) or not _e.is_int(seq_lens.dtype)):
        raise TEShapeError(f"{cell}: seq_lens is {seq_lens.shape} "
                           f"{seq_lens.dtype}; it must be ({batch},) of an int dtype")
    acts = tuple(activations or DEFAULT_ACTIVATIONS[cell] * dirs)
    per_dir = len(DEFAULT_ACTIVATIONS[cell])
    if len(acts) != per_dir * dirs:
        raise TEAttributeError(f"{cell}: {len(acts)} activations given; it takes "
                               f"{per_dir * dirs} ({per_dir} per direction)")
    bad = [a for a in acts if a not in ACTIVATIONS]
    if bad:
        raise TEAttributeError(f"{cell}: activation(s) {', '.join(map(repr, bad))} are not "
                               f"supported; Instead: use {', '.join(ACTIVATIONS)}")
    return t, batch, inputs, dirs, hidden, acts


def recurrent(cell: str, x: Tensor, w: Tensor, r: Tensor, b: Tensor, h0: Tensor,
              c0: Tensor | None = None, p: Tensor | None = None, seq_lens: Tensor | None = None,
              direction: str = "forward", activations=None, clip: float | None = None,
              linear_before_reset: bool = False, name: str | None = None) -> tuple:
    """``(Y, Y_h)`` of an RNN or GRU, ``(Y, Y_h, Y_c)`` of an LSTM (see the module)."""
    name = name or cell
    steps, batch, inputs, dirs, hidden, acts = _check(cell, x, w, r, b, h0, c0, p, seq_lens,
                                                      direction, activations)
    g = GATES[cell]
    k = _r.reduce_axis(inputs, name="k")
    xw = compute_named((dirs, steps, batch, g * hidden), ["d", "t", "b", "j"],
                       lambda d, t, i, j: _r.sum(load(x, (t, i, k)) * load(w, (d, j, k)), axis=k),
                       f"{name}_xw")
    per_dir = [_direction(cell, d, xw, r, b, h0, c0, p, seq_lens, direction == "reverse" or d,
                          acts[d * len(acts) // dirs:(d + 1) * len(acts) // dirs], clip,
                          linear_before_reset, name) for d in range(dirs)]
    bh = ["b", "j"]
    y = compute_named((steps, dirs, batch, hidden), ["t", "d"] + bh, lambda t, d, i, j: store(
        _pick(d, [_pick(t, ys, (i, j)) for ys, _, _ in per_dir]), x.dtype), name)
    y_h = compute_named((dirs, batch, hidden), ["d"] + bh, lambda d, i, j: store(
        _pick(d, [h[i, j] for _, h, _ in per_dir]), x.dtype), f"{name}_h")
    if cell != "lstm":
        return y, y_h
    y_c = compute_named((dirs, batch, hidden), ["d"] + bh, lambda d, i, j: store(
        _pick(d, [c[i, j] for _, _, c in per_dir]), x.dtype), f"{name}_c")
    return y, y_h, y_c


def _pick(index, values, idx=None):
    """``values[index]`` for a loop variable ``index`` (a chain of selects); ``values`` are
    expressions, or tensors read at ``idx``."""
    values = [v[idx] if idx is not None else v for v in values]
    out = values[-1]
    for n in range(len(values) - 2, -1, -1):
        out = _e.select(index == n, values[n], out)
    return out


def _direction(cell, d, xw, r, b, h0, c0, p, seq_lens, reverse, acts, clip, lbr, name):
    """The per-step outputs (in time order), the last state and the last cell state of
    direction ``d``."""
    steps, batch, _ = xw.shape[1:]
    g, hidden = GATES[cell], r.shape[-1]
    bh, shape = ["b", "j"], (batch, hidden)
    h = compute_named(shape, bh, lambda i, j: load(h0, (d, i, j)), f"{name}_h0_{d}")
    c = (compute_named(shape, bh, lambda i, j: load(c0, (d, i, j)), f"{name}_c0_{d}")
         if cell == "lstm" else None)
    # GRU without linear_before_reset multiplies R's candidate rows by r * h, not by h
    late = cell == "gru" and not lbr
    ys = {}
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        hr = _times_r(h, r, d, (g - 1 if late else g) * hidden, 0, f"{name}_hr_{d}_{t}")
        step = _Step(xw, hr, b, d, t, g, hidden, clip, seq_lens)
        stage = f"{name}_{{}}_{d}_{t}"
        if cell == "rnn":
            h = _state(shape, lambda i, j, s=step, h=h: s.keep(
                i, s.act(acts[0], s.pre(0, i, j)), h[i, j]), stage.format("h"))
        elif cell == "gru":
            h = _gru_step(step, h, acts, r if late else None, stage)
        else:
            c, h = _lstm_step(step, h, c, acts, p, stage)
        ys[t] = h if seq_lens is None else compute_named(
            shape, bh, lambda i, j, s=step, h=h: s.keep(i, h[i, j], const_like(0.0, h[i, j])),
            stage.format("y"))
    return [ys[t] for t in range(steps)], h, c


def _state(shape, body, name):
    """A step's new state ``body(b, j)``, stored once: the next step reads it several times
    (the forget gate, a peephole, the masked copy), so its block is marked
    :data:`~mlcbook.tir.KEEP_MATERIALIZED`; inlined, the chain of steps would grow the code
    exponentially."""
    return compute_named(shape, ["b", "j"], body, name, attrs={KEEP_MATERIALIZED: True})


def _times_r(h, r, d, rows, first, name):
    """``h @ r[d, first:first + rows].T``: a state times R's rows of some gates."""
    k = _r.reduce_axis(h.shape[1], name="k")
    return compute_named((h.shape[0], rows), ["b", "j"], lambda i, j: _r.sum(
        h[i, k] * load(r, (d, first + j, k)), axis=k), name)


class _Step:
    """The expressions one step of one direction builds its gates from."""

    def __init__(self, xw, hr, b, d, t, g, hidden, clip, seq_lens):
        self.xw, self.hr, self.b, self.d, self.t = xw, hr, b, d, t
        self.g, self.hidden, self.clip, self.seq_lens = g, hidden, clip, seq_lens

    def x_part(self, gate, i, j):
        """Gate ``gate``'s input times W, plus W's bias."""
        col = gate * self.hidden + j
        return self.xw[self.d, self.t, i, col] + load(self.b, (self.d, col))

    def r_bias(self, gate, j):
        return load(self.b, (self.d, (self.g + gate) * self.hidden + j))

    def r_part(self, gate, i, j):
        """Gate ``gate``'s previous state times R, plus R's bias."""
        return self.hr[i, gate * self.hidden + j] + self.r_bias(gate, j)

    def pre(self, gate, i, j):
        return self.x_part(gate, i, j) + self.r_part(gate, i, j)

    def act(self, kind, v):
        """Activation ``kind`` of ``v``, clipped first when the layer clips."""
        if self.clip is not None:
            v = _e.max(_e.min(v, const_like(self.clip, v)), const_like(-self.clip, v))
        return activate(kind, v)

    def keep(self, i, new, old):
        """``new``, or ``old`` for a batch row whose sequence has ended."""
        if self.seq_lens is None:
            return new
        t = _e.const(self.t, "int64")
        return _e.select(t < _e.cast("int64", self.seq_lens[i]), new, old)


def _gru_step(s: _Step, h, acts, late_r, stage):
    """GRU: ``h' = (1 - z) * g(candidate) + z * h`` with the update gate z and the reset
    gate r; ``late_r`` (R, when not ``linear_before_reset``) multiplies r * h by R."""
    f, g = acts
    bh = ["b", "j"]
    if late_r is not None:
        # read by the product with R once per term: stored, never folded or inlined
        rh = compute_named(h.shape, bh, lambda i, j: s.act(f, s.pre(1, i, j)) * h[i, j],
                           stage.format("rh"), attrs={KEEP_MATERIALIZED: True})
        rh_r = _times_r(rh, late_r, s.d, s.hidden, 2 * s.hidden, stage.format("rhr"))

    def candidate(i, j):
        if late_r is not None:
            return s.act(g, s.x_part(2, i, j) + rh_r[i, j] + s.r_bias(2, j))
        return s.act(g, s.x_part(2, i, j) + s.act(f, s.pre(1, i, j)) * s.r_part(2, i, j))

    def body(i, j):
        z = s.act(f, s.pre(0, i, j))
        return s.keep(i, (const_like(1.0, z) - z) * candidate(i, j) + z * h[i, j], h[i, j])

    return _state(h.shape, body, stage.format("h"))


def _lstm_step(s: _Step, h, c, acts, p, stage):
    """LSTM (gates i, o, f, c; peepholes i, o, f): ``c' = f * c + i * g(c~)``, then
    ``h' = o * h(c')``."""
    f, g, hh = acts
    n = s.hidden

    def peep(gate, j):
        return load(p, (s.d, gate * n + j))

    def cell(i, j):
        inp = s.act(f, s.pre(0, i, j) + peep(0, j) * c[i, j])
        forget = s.act(f, s.pre(2, i, j) + peep(2, j) * c[i, j])
        return s.keep(i, forget * c[i, j] + inp * s.act(g, s.pre(3, i, j)), c[i, j])

    c_new = _state(c.shape, cell, stage.format("c"))

    def out(i, j):
        o = s.act(f, s.pre(1, i, j) + peep(1, j) * c_new[i, j])
        return s.keep(i, o * activate(hh, c_new[i, j]), h[i, j])

    return c_new, _state(h.shape, out, stage.format("h"))
