"""rnn, gru and lstm, declared from their te compute, against a numpy oracle written from
ONNX's equations (float64, one step after the other)."""
import numpy as np
import pytest

from mlcbook.errors import OpAttributeError, OpDTypeError
from mlcbook.ops import TensorType as T, get

_ACT = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh,
        "relu": lambda v: np.maximum(v, 0), "softsign": lambda v: v / (1 + np.abs(v)),
        "softplus": lambda v: np.logaddexp(v, 0)}
_DEFAULTS = {"rnn": ("tanh",), "gru": ("sigmoid", "tanh"), "lstm": ("sigmoid", "tanh", "tanh")}


def recurrent_oracle(cell, x, w, r, b, h0, c0=None, p=None, seq_lens=None,
                     direction="forward", activations=(), clip=None, linear_before_reset=0):
    steps, batch, _ = x.shape
    dirs, hidden = w.shape[0], r.shape[-1]
    acts = activations or _DEFAULTS[cell] * dirs
    n_act = len(acts) // dirs
    lens = np.full(batch, steps) if seq_lens is None else seq_lens.astype(np.int64)
    y, y_h, y_c = (np.zeros((steps, dirs, batch, hidden)), np.zeros((dirs, batch, hidden)),
                   np.zeros((dirs, batch, hidden)))

    def act(kind, v):
        return _ACT[kind](v if clip is None else np.clip(v, -clip, clip))

    for d in range(dirs):
        wd, rd = w[d].astype(np.float64), r[d].astype(np.float64)
        wb, rb = np.split(b[d].astype(np.float64), 2)
        f, *rest = acts[d * n_act:(d + 1) * n_act]
        h = h0[d].astype(np.float64)
        c = c0[d].astype(np.float64) if cell == "lstm" else None
        for t in (range(steps - 1, -1, -1) if direction == "reverse" or d else range(steps)):
            live = (t < lens)[:, None]
            xg = np.split(x[t] @ wd.T + wb, len(wd) // hidden, axis=1)
            if cell == "rnn":
                h_new = act(f, xg[0] + h @ rd.T + rb)
            elif cell == "gru":
                rw, rbs = np.split(rd, 3), np.split(rb, 3)
                z = act(f, xg[0] + h @ rw[0].T + rbs[0])
                reset = act(f, xg[1] + h @ rw[1].T + rbs[1])
                inner = (reset * (h @ rw[2].T + rbs[2]) if linear_before_reset
                         else (reset * h) @ rw[2].T + rbs[2])
                h_new = (1 - z) * act(rest[0], xg[2] + inner) + z * h
            else:
                pi, po, pf = np.split(p[d].astype(np.float64), 3)
                hg = np.split(h @ rd.T + rb, 4, axis=1)
                c_new = (act(f, xg[2] + hg[2] + pf * c) * c
                         + act(f, xg[0] + hg[0] + pi * c) * act(rest[0], xg[3] + hg[3]))
                h_new = act(f, xg[1] + hg[1] + po * c_new) * _ACT[rest[1]](c_new)
                c = np.where(live, c_new, c)
            h = np.where(live, h_new, h)
            y[t, d] = np.where(live, h_new, 0)
        y_h[d] = h
        y_c[d] = c if cell == "lstm" else 0
    return (y, y_h) + ((y_c,) if cell == "lstm" else ())


def _args(shapes, seed=0, dtype="float32"):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


CASES = [
    ("rnn", [(3, 2, 2), (2, 3, 2), (2, 3, 3), (2, 6), (2, 2, 3)],
     {"direction": "bidirectional", "activations": ("relu", "softplus")}),
    ("gru", [(2, 2, 3), (1, 9, 3), (1, 9, 3), (1, 18), (1, 2, 3)], {"clip": 0.5}),
    ("gru", [(3, 3, 2), (2, 12, 2), (2, 12, 4), (2, 24), (2, 3, 4)],
     {"direction": "bidirectional", "linear_before_reset": 1,
      "activations": ("sigmoid", "softsign", "sigmoid", "tanh")}),
    ("lstm", [(2, 2, 3), (1, 8, 3), (1, 8, 2), (1, 16), (1, 2, 2), (1, 2, 2), (1, 6)],
     {"direction": "reverse"}),
]


@pytest.mark.parametrize("cell,shapes,attrs", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("lengths", [False, True], ids=["whole", "seq_lens"])
def test_recurrent_layer_matches_its_oracle(cell, shapes, attrs, lengths):
    args = _args(shapes)
    if lengths:
        args.append(np.array([shapes[0][0] - 1, 1, shapes[0][0]][:shapes[0][1]], "int64"))
    got = get(cell).reference(*args, **attrs)
    named = dict(zip(("c0", "p"), args[5:7])) if cell == "lstm" else {}
    want = recurrent_oracle(cell, *args[:5], **named,
                            seq_lens=args[-1] if lengths else None, **attrs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_float64_layer_is_computed_in_float64():
    args = _args(CASES[1][1], dtype="float64")
    y, y_h = get("gru").reference(*args, clip=0.5)
    want = recurrent_oracle("gru", *args, clip=0.5)
    np.testing.assert_allclose(y, want[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y_h, want[1], rtol=1e-12, atol=1e-12)


def test_recurrent_refuses_float16_naming_x():
    types = [T((5, 2, 3), "float16"), T((1, 4, 3), "float16"), T((1, 4, 4), "float16"),
             T((1, 8), "float16"), T((1, 2, 4), "float16")]
    with pytest.raises(OpDTypeError, match="rnn: the input x has dtype float16"):
        get("rnn").infer_type(types, {})


def test_recurrent_refuses_an_unknown_direction_and_a_wrong_activation_count():
    types = [T((5, 2, 3)), T((1, 4, 3)), T((1, 4, 4)), T((1, 8)), T((1, 2, 4))]
    with pytest.raises(OpAttributeError, match="direction='up' is not one of forward"):
        get("rnn").infer_type(types, {"direction": "up"})
    with pytest.raises(OpAttributeError, match=r"2 activations given; it takes 1 \(1 per"):
        get("rnn").infer_type(types, {"activations": ("tanh", "relu")})


def test_recurrent_refuses_an_activation_it_does_not_compute():
    types = [T((5, 2, 3)), T((1, 4, 3)), T((1, 4, 4)), T((1, 8)), T((1, 2, 4))]
    with pytest.raises(OpAttributeError, match=r"rnn: activation\(s\) 'elu' are not supported; "
                                               "Instead: use sigmoid, tanh"):
        get("rnn").infer_type(types, {"activations": ("elu",)})
