"""Gradient rules of the recurrent layers ``rnn``, ``gru`` and ``lstm``: the layer unrolled
over its static sequence into graph ops (the same steps as the op's compute in
:mod:`mlcbook.te.ops.recurrent`), differentiated by :func:`~mlcbook.train.autodiff.backward`
like any graph: backpropagation through time.

    >>> dx, dw, dr, db, dh0, *_ = gradient_rule("gru")(gru_call, (g_y, g_h))

The unrolled layer is built on stand-in variables and then bound to the call's inputs, so
the gradients never flow into the output gradients or the graph above the call.

Importing this module registers the rules.
"""

from __future__ import annotations

import numpy as np

from ..graph.expr import Call, Constant, Expr, Var
from ..te.ops.recurrent import DEFAULT_ACTIVATIONS, GATES
from .autodiff import backward, register_gradient
from .graph_math import Bind, call, concat, reshape, scalar

_INPUTS = {"rnn": ("x", "w", "r", "b", "h0"), "gru": ("x", "w", "r", "b", "h0"),
           "lstm": ("x", "w", "r", "b", "h0", "c0", "p")}


def _part(v: Expr, axis: int, k: int, size: int) -> Expr:
    """Part ``k`` of ``v`` cut along ``axis`` into pieces of ``size``."""
    return call("slice", v, starts=(k * size,), ends=((k + 1) * size,), axes=(axis,))


def _row(v: Expr, i: int) -> Expr:
    """``v[i]``: the first axis indexed away."""
    return reshape(_part(v, 0, i, 1), v.shape[1:])


class _Layer:
    """One call's layer unrolled in graph ops, on the inputs ``ins`` (name -> Expr)."""

    def __init__(self, cell: str, attrs, ins: dict):
        self.cell, self.ins, self.attrs = cell, ins, attrs
        self.steps, self.batch, _ = ins["x"].shape
        self.hidden = ins["r"].shape[-1]
        self.dirs = 2 if attrs["direction"] == "bidirectional" else 1
        acts = tuple(attrs.get("activations") or DEFAULT_ACTIVATIONS[cell] * self.dirs)
        n = len(acts) // self.dirs
        self.acts = [acts[d * n:(d + 1) * n] for d in range(self.dirs)]

    def act(self, kind: str, v: Expr) -> Expr:
        clip = self.attrs.get("clip")
        if clip is not None:
            v = call("clip", v, min=-float(clip), max=float(clip))
        return call(kind, v)

    def live(self, t: int) -> Expr | None:
        """Which batch rows step ``t`` updates, (B, 1) bool; None: all of them."""
        lens = self.ins.get("seq_lens")
        if lens is None:
            return None
        step = Constant(np.asarray(t, lens.dtype))
        return reshape(call("less", step, lens), (self.batch, 1))

    def outputs(self) -> tuple[Expr, ...]:
        ys, hs, cs = [], [], []
        for d in range(self.dirs):
            y, h, c = self.direction(d)
            ys.append(y)
            hs.append(reshape(h, (1, self.batch, self.hidden)))
            if c is not None:
                cs.append(reshape(c, (1, self.batch, self.hidden)))
        out = (concat(ys, axis=1), concat(hs, axis=0))
        return out + ((concat(cs, axis=0),) if cs else ())

    def direction(self, d: int):
        ins, hsz, gates = self.ins, self.hidden, GATES[self.cell]
        w, r, b = _row(ins["w"], d), _row(ins["r"], d), _row(ins["b"], d)
        wb, rb = _part(b, 0, 0, gates * hsz), _part(b, 0, 1, gates * hsz)
        xw = call("add", call("matmul", ins["x"], call("transpose", w, perm=(1, 0))), wb)
        rt = call("transpose", r, perm=(1, 0))
        h = _row(ins["h0"], d)
        c = _row(ins["c0"], d) if self.cell == "lstm" else None
        order = range(self.steps - 1, -1, -1) if self.attrs["direction"] == "reverse" or d \
            else range(self.steps)
        ys = [None] * self.steps
        for t in order:
            xg = _row(xw, t)
            hr = call("add", call("matmul", h, rt), rb)
            h_new, c_new = self.step(d, [_part(xg, 1, k, hsz) for k in range(gates)],
                                     [_part(hr, 1, k, hsz) for k in range(gates)], h, c, rt)
            live = self.live(t)
            if live is None:
                h, c, ys[t] = h_new, c_new, h_new
            else:
                h = call("where", live, h_new, h)
                c = call("where", live, c_new, c) if c is not None else None
                ys[t] = call("where", live, h_new, scalar(0, h_new.dtype))
        y = concat([reshape(v, (1, 1, self.batch, hsz)) for v in ys], axis=0)
        return y, h, c

    def step(self, d: int, xg: list, hr: list, h: Expr, c: Expr | None, rt: Expr):
        """The new hidden (and cell) state from the gates' input parts ``xg`` and recurrent
        parts ``hr`` (bias included)."""
        f, *rest = self.acts[d]
        if self.cell == "rnn":
            return self.act(f, call("add", xg[0], hr[0])), None
        if self.cell == "gru":
            z = self.act(f, call("add", xg[0], hr[0]))
            reset = self.act(f, call("add", xg[1], hr[1]))
            if self.attrs.get("linear_before_reset"):
                inner = call("mul", reset, hr[2])
            else:
                rb2 = _part(_part(_row(self.ins["b"], d), 0, 1, 3 * self.hidden), 0, 2,
                            self.hidden)
                inner = call("add", call("matmul", call("mul", reset, h),
                                         _part(rt, 1, 2, self.hidden)), rb2)
            cand = self.act(rest[0], call("add", xg[2], inner))
            return call("add", cand, call("mul", z, call("sub", h, cand))), None
        p = _row(self.ins["p"], d)
        pi, po, pf = (_part(p, 0, k, self.hidden) for k in range(3))
        i_g = self.act(f, call("add", call("add", xg[0], hr[0]), call("mul", pi, c)))
        f_g = self.act(f, call("add", call("add", xg[2], hr[2]), call("mul", pf, c)))
        c_new = call("add", call("mul", f_g, c),
                     call("mul", i_g, self.act(rest[0], call("add", xg[3], hr[3]))))
        o_g = self.act(f, call("add", call("add", xg[1], hr[1]), call("mul", po, c_new)))
        return call("mul", o_g, self.act(rest[1], c_new)), c_new


def _recurrent(c: Call, g) -> tuple:
    names = _INPUTS[c.op] + ("seq_lens",)
    stand = [Var(f"{c.op}.{n}", a.type) for n, a in zip(names, c.args)]
    outs = _Layer(c.op, c.attrs, dict(zip(names, stand))).outputs()
    grads = g if isinstance(g, tuple) else (g,)
    loss, values = None, {id(v): a for v, a in zip(stand, c.args)}
    for k, (out, gk) in enumerate(zip(outs, grads)):
        if gk is None:
            continue
        gv = Var(f"{c.op}.grad{k}", gk.type)
        values[id(gv)] = gk
        term = call("sum", call("mul", out, gv), keepdims=0)
        loss = term if loss is None else call("add", loss, term)
    floats = stand[:len(_INPUTS[c.op])]
    bind = Bind(values)
    out = [bind.visit(e) for e in backward(loss, floats)]
    return tuple(out) + (None,) * (len(c.args) - len(floats))


for _cell in ("rnn", "gru", "lstm"):
    register_gradient(_cell)(_recurrent)

__all__: list[str] = []
