"""Checkers for chapter 10, *Rewriting models while they train*: moving Adam's moments
across a widening, a plateau trigger, and a broken widening to repair.

Each answer is compared with the library on freshly drawn inputs: the moments with
:class:`mlcbook.train.rewrite.UnitMap`, the trigger with
:class:`mlcbook.train.rewrite.Plateau`, the repaired widening by running the old and the
new two-layer network in float64 and requiring every replica to share its unit's outgoing
weights evenly (Net2Net's split, which exercise 1 assumes).
"""

from __future__ import annotations

import numpy as np

from .compare import Fail, NotImplementedAnswer, expect_array, trial
from .registry import exercise


def _call(answer, name: str, *args):
    if answer is None:
        raise NotImplementedAnswer(f"got None instead of your function {name}")
    if not callable(answer):
        raise Fail(f"expected your function {name}, got {type(answer).__name__}",
                   about_inputs=False)
    try:
        return answer(*args)
    except NotImplementedError:
        raise NotImplementedAnswer(f"{name} raised NotImplementedError; replace the "
                                   "`raise NotImplementedError` line with your code") from None
    except Exception as err:  # noqa: BLE001 - the student's code
        raise Fail(f"{name} raised {type(err).__name__}: {err}") from None


def _group(n: int):
    from ..train.rewrite import Group, Slice
    return Group("fc1", n, (Slice("w1", 0, "source"), Slice("b1", 0, "source"),
                            Slice("w2", 1, "sink")))


def _mapping(rng, n):
    extra = rng.integers(0, n, int(rng.integers(1, 2 * n)))
    return np.concatenate([np.arange(n), extra])


# --- 10.widen_moments ----------------------------------------------------------------------
@exercise("10.widen_moments", points=3, answer="widen_moments",
          title="Carry Adam's moments across a widening")
def _check_moments(answer, rng):
    from ..train.rewrite import UnitMap
    for trial_no in range(3):
        n, d, k = (int(v) for v in rng.integers(2, 6, size=3))
        mapping = _mapping(rng, n)
        state = {"w1.m": rng.standard_normal((n, d)), "w1.v": rng.random((n, d)),
                 "b1.m": rng.standard_normal(n), "b1.v": rng.random(n),
                 "w2.m": rng.standard_normal((k, n)), "w2.v": rng.random((k, n))}
        want = UnitMap(_group(n), mapping).state(state, ["w1", "b1", "w2"])
        with trial(f"a layer of {n} units widened by mapping {mapping.tolist()}"):
            got = _call(answer, "widen_moments", {k_: v.copy() for k_, v in state.items()},
                        mapping.copy())
            if not isinstance(got, dict) or set(got) != set(want):
                raise Fail(f"return a dict with the keys {sorted(want)}", about_inputs=False)
            for name in want:
                expect_array(name, np.asarray(got[name]), want[name], rtol=1e-12, atol=1e-12)
    return "moments move the way the gradients do, for three random widenings"


# --- 10.plateau ----------------------------------------------------------------------------
def _fires(values, patience: int, threshold: float, cooldown: int) -> list[int]:
    from ..train.rewrite import Plateau
    t = Plateau(patience=patience, threshold=threshold, cooldown=cooldown)
    return [i for i, v in enumerate(values) if t.update(v)]


@exercise("10.plateau", points=2, answer="plateau_steps", title="A plateau trigger")
def _check_plateau(answer, rng):
    # every cooldown is tried, and a nonzero one always on values where it changes when the
    # trigger fires: on other values an answer that ignores the cooldown passes by luck
    for cooldown in rng.permutation([0, 1, 2, int(rng.integers(1, 3))]).tolist():
        patience, threshold = int(rng.integers(0, 4)), float(rng.choice([0.0, 0.01, 0.05]))
        while True:
            values = np.round(np.cumsum(rng.normal(-0.02, 0.05, 40)) + 3, 3).tolist()
            want = _fires(values, patience, threshold, cooldown)
            if cooldown == 0 or want != _fires(values, patience, threshold, 0):
                break
        with trial(f"patience={patience}, threshold={threshold}, cooldown={cooldown} on "
                   f"{values}"):
            got = _call(answer, "plateau_steps", list(values), patience, threshold, cooldown)
            if list(got) != want:
                raise Fail(f"it fires at steps {list(got)}; ReduceLROnPlateau would at {want}")
    return "fires exactly where ReduceLROnPlateau (mode min, threshold_mode rel) would"


# --- 10.fix_widen --------------------------------------------------------------------------
@exercise("10.fix_widen", points=3, answer="fixed_widen", title="Why did the widening break training?")
def _check_widen(answer, rng):
    for _ in range(3):
        n, d, k, rows = 4, 5, 3, 6
        w1, b1 = rng.standard_normal((n, d)), rng.standard_normal(n)
        w2 = rng.standard_normal((k, n))
        mapping = _mapping(rng, n)
        x = rng.standard_normal((rows, d))
        want = np.maximum(x @ w1.T + b1, 0) @ w2.T
        with trial(f"mapping {mapping.tolist()}"):
            got = _call(answer, "fixed_widen", w1.copy(), b1.copy(), w2.copy(), mapping.copy())
            if not (isinstance(got, tuple) and len(got) == 3):
                raise Fail("return the triple (new w1, new b1, new w2)", about_inputs=False)
            nw1, nb1, nw2 = (np.asarray(a) for a in got)
            if nw1.shape != (len(mapping), d) or nw2.shape != (k, len(mapping)):
                raise Fail(f"the new layer must have {len(mapping)} units: w1 of shape "
                           f"{(len(mapping), d)}, w2 of shape {(k, len(mapping))}")
            out = np.maximum(x @ nw1.T + nb1, 0) @ nw2.T
            expect_array("the widened network's output", out, want, rtol=0, atol=1e-10)
            c = np.bincount(mapping)[mapping]
            expect_array("the new w1 (unit j a replica of unit mapping[j])", nw1, w1[mapping],
                         rtol=0, atol=1e-12)
            expect_array("the new b1", nb1, b1[mapping], rtol=0, atol=1e-12)
            expect_array("the new w2", nw2, w2[:, mapping] / c, rtol=0, atol=1e-12, mistakes=[
                (lambda: np.where(np.arange(len(mapping)) < n, w2[:, mapping], 0),
                 "the new units' outgoing weights are zero: the output is right, but the new "
                 "units are dead weight that learns nothing until others move; split each "
                 "unit's outgoing column evenly among its replicas (divide by their count)")])
    return "the widened network computes what the old one did"


__all__: list[str] = []
