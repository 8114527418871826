"""Chapter 10's exercises: plausible wrong answers earn zero.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook.grading as grading


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
    assert grading.check("10.widen_moments", wrong).points == 0


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
    assert grading.check("10.plateau", wrong).points == 0


def test_the_broken_widen_earns_zero():
    def broken(w1, b1, w2, mapping):
        return w1[mapping], b1[mapping], w2[:, mapping]
    result = grading.check("10.fix_widen", broken)
    assert result.points == 0 and "output" in result.message


