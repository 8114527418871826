"""The gradient rules of rnn, gru and lstm (backpropagation through the unrolled layer)
against central finite differences in float64, over directions, activations, clip,
linear_before_reset, sequence lengths and which outputs the loss reads."""

from __future__ import annotations

import numpy as np
import pytest

from mlcbook.graph import Constant, op
from mlcbook.te.ops.recurrent import GATES

from .test_grad_rules import check
from .test_grad_rules_nn import compiled_like_interpreted

T, B, I, H = 3, 2, 3, 2


def _inputs(cell, dirs, seed):
    rng = np.random.default_rng(seed)
    g = GATES[cell]
    arrays = {"x": rng.standard_normal((T, B, I)),
              "w": rng.standard_normal((dirs, g * H, I)) * 0.7,
              "r": rng.standard_normal((dirs, g * H, H)) * 0.7,
              "b": rng.standard_normal((dirs, 2 * g * H)) * 0.5,
              "h0": rng.standard_normal((dirs, B, H))}
    if cell == "lstm":
        arrays["c0"] = rng.standard_normal((dirs, B, H))
        arrays["p"] = rng.standard_normal((dirs, 3 * H)) * 0.5
    return arrays


def _every_output(cell, lens=None, **attrs):
    def build(*xs):
        out = getattr(op, cell)(*xs, *(() if lens is None else (Constant(lens),)), **attrs)
        n = 3 if cell == "lstm" else 2
        # every output reaches the loss: Y as is, the final states weighted
        total = op.sum(out[0], axes=(0,))
        for k in range(1, n):
            total = op.add(total, op.mul(out[k], Constant(0.5 + k)))
        return total
    return build


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_layers(cell, direction):
    dirs = 2 if direction == "bidirectional" else 1
    check(_every_output(cell, direction=direction), _inputs(cell, dirs, len(cell) + dirs))


@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_recurrent_layers_with_sequence_lengths(cell):
    lens = np.array([3, 1], np.int32)
    check(_every_output(cell, lens, direction="bidirectional"), _inputs(cell, 2, 7))


def test_gru_with_linear_before_reset():
    check(_every_output("gru", linear_before_reset=1), _inputs("gru", 1, 8))


@pytest.mark.parametrize("cell,acts", [("rnn", ("relu",)), ("gru", ("softsign", "softplus")),
                                       ("lstm", ("sigmoid", "softsign", "tanh"))])
def test_recurrent_layers_with_other_activations_and_clip(cell, acts):
    arrays = _inputs(cell, 1, 9)
    if cell == "rnn":   # relu: keep every pre-activation away from its kink
        arrays["x"] = np.abs(arrays["x"]) + 0.2
        arrays["w"], arrays["r"] = np.abs(arrays["w"]), np.abs(arrays["r"])
    check(_every_output(cell, activations=acts), arrays)
    check(_every_output(cell, activations=acts, clip=0.8), arrays)


def test_a_loss_of_the_last_hidden_state_only():
    check(lambda *xs: op.lstm(*xs)[1], _inputs("lstm", 1, 10))


def test_the_unrolled_backward_graph_compiles_to_what_the_interpreter_computes():
    shapes = {"x": (5, 2, 3), "w": (2, 16, 3), "r": (2, 16, 4), "b": (2, 32), "h0": (2, 2, 4),
              "c0": (2, 2, 4), "p": (2, 12)}
    compiled_like_interpreted(lambda *xs: op.lstm(*xs, direction="bidirectional")[0], shapes)
