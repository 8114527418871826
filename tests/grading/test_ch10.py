"""Chapter 10's exercises: plausible wrong answers earn zero.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import zero


def _swapped_rule(state, mapping):
    """The rule with incoming and outgoing swapped: divide the outgoing moments."""
    c = np.bincount(mapping)[mapping].astype(np.float64)
    out = {}
    for name in ("w1", "b1"):
        out[f"{name}.m"], out[f"{name}.v"] = state[f"{name}.m"][mapping], \
            state[f"{name}.v"][mapping]
    out["w2.m"] = state["w2.m"][:, mapping] / c
    out["w2.v"] = state["w2.v"][:, mapping] / c ** 2
    return out


def _copy_everything(state, mapping):
    return {k: (v[:, mapping] if k.startswith("w2") else v[mapping]) for k, v in state.items()}


@pytest.mark.parametrize("wrong", [_swapped_rule, _copy_everything])
def test_wrong_moment_transports_earn_zero(wrong):
    zero("10.widen_moments", wrong)


def _plateau_without_cooldown(values, patience, threshold, cooldown):
    best, bad, fired = float("inf"), 0, []
    for i, a in enumerate(values):
        if a < best * (1 - threshold):
            best, bad = a, 0
        else:
            bad += 1
        if bad > patience:
            fired.append(i)
            bad = 0
    return fired


def _plateau_at_patience(values, patience, threshold, cooldown):
    best, bad, cool, fired = float("inf"), 0, 0, []
    for i, a in enumerate(values):
        if a < best * (1 - threshold):
            best, bad = a, 0
        else:
            bad += 1
        if cool > 0:
            cool, bad = cool - 1, 0
        if bad >= patience:
            fired.append(i)
            cool, bad = cooldown, 0
    return fired


@pytest.mark.parametrize("wrong", [_plateau_without_cooldown, _plateau_at_patience])
def test_wrong_plateaus_earn_zero(wrong):
    zero("10.plateau", wrong)


def test_the_broken_widen_earns_zero():
    def broken(w1, b1, w2, mapping):
        return w1[mapping], b1[mapping], w2[:, mapping]
    assert "output" in zero("10.fix_widen", broken)




# --- issue 31: holes a second student pass found ------------------------------------------------
def _zeroed_new_units(w1, b1, w2, mapping):
    """Right output, but the new units' outgoing weights are zero: dead weight."""
    new_w2 = w2[:, mapping].copy()
    new_w2[:, len(w1):] = 0
    return w1[mapping], b1[mapping], new_w2


def _divided_incoming(w1, b1, w2, mapping):
    """Divides the incoming weights instead of the outgoing ones."""
    c = np.bincount(mapping)[mapping]
    return w1[mapping] / c[:, None], b1[mapping] / c, w2[:, mapping]


@pytest.mark.parametrize("wrong, message", [
    (_zeroed_new_units, "outgoing weights are zero"),
    (_divided_incoming, "the new w1"),  # relu(z / c) = relu(z) / c: the output alone agrees
])
def test_wrong_widenings_earn_zero(wrong, message):
    assert message in zero("10.fix_widen", wrong)
