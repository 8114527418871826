"""AdamW after a rewrite: the moments follow the gradient as under Adam; the weight step is
the decoupled decay of the *new* weights plus the old Adam step copied (Adam's step does
not see the gradient's scale)."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.train.rewrite import prune, split, weight_arrays, widen

from . import _models as M
from .test_prune import _silence
from .test_widen import _close

LR, WD = 0.1, 0.05
REWRITES = {"widen-mlp": (M.mlp, lambda f, s: widen(f, "fc1", 13, state=s, seed=3)),
            "widen-cnn": (M.cnn, lambda f, s: widen(f, "conv2", 7, state=s, seed=3)),
            "split-mlp": (M.mlp, lambda f, s: split(f, "fc2", 2, ratio=0.3, state=s)),
            "prune-mlp": (M.mlp, lambda f, s: prune(f, "fc1", remove=[1, 4], state=s))}


def _adam_part(before: dict, after: dict) -> dict:
    """The step minus AdamW's decoupled decay ``-lr * wd * p``."""
    return {k: after[k] - before[k] * (1 - LR * WD) for k in after}


@pytest.mark.parametrize("case", list(REWRITES))
def test_adamw_step_after_rewrite_equals_the_transported_step(case):
    make, rewrite = REWRITES[case]
    opt = mb.train.AdamW(lr=LR, weight_decay=WD, eps=1e-30)
    f0 = make()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, opt, x)
    if case.startswith("prune"):      # silent units: the pruned model computes the same
        f = _silence(f, "fc1", "fc2.weight", [1, 4])
    r = rewrite(f, state)
    assert r.tag == "exact"
    w_new, s_new = M.step(r.model, opt, r.state, x, lr=LR)
    w_old, s_old = M.step(f, opt, state, x, lr=LR)
    _close(s_new, rewrite(f, s_old).state)
    _close(_adam_part(weight_arrays(r.model), w_new),
           r.like_gradient(_adam_part(weight_arrays(f), w_old), 0))


def test_the_decay_part_is_really_there():
    """Without subtracting the decay the transported step does not match (the sink slices
    of a widened layer decay from weights divided by the replica count)."""
    opt = mb.train.AdamW(lr=LR, weight_decay=WD, eps=1e-30)
    f0 = M.mlp()
    x = M.inputs(f0)
    f, state = M.trained_state(f0, opt, x)
    r = widen(f, "fc1", 13, state=state, seed=3)
    w_new, _ = M.step(r.model, opt, r.state, x, lr=LR)
    w_old, _ = M.step(f, opt, state, x, lr=LR)
    before_new, before_old = weight_arrays(r.model), weight_arrays(f)
    raw_new = {k: w_new[k] - before_new[k] for k in w_new}
    raw_old = r.like_gradient({k: w_old[k] - before_old[k] for k in w_old}, 0)
    assert np.abs(raw_new["fc2.weight"] - raw_old["fc2.weight"]).max() > 1e-4
