import pytest

from mlcbook.errors import InductionError
from mlcbook.train.induction import WidenOnPlateau, fit, growth_policy, propose, rank

from .fake import STARTS, corpus, features


def test_rank_puts_the_rules_best_start_first():
    sm = fit(corpus())
    assert rank(sm, features(0.95), STARTS)[0] == STARTS[0]
    assert rank(sm, features(0.4), STARTS)[0] == STARTS[-1]


def test_propose_gives_every_candidate_with_reasons_and_a_policy():
    runs = corpus()
    out = propose(None, fit(runs), STARTS, corpus=runs, features=features(0.4))
    assert [p.structure for p in out][0] == STARTS[-1] and len(out) == len(STARTS)
    assert out[0].expected >= out[-1].expected
    assert len(out[0].reasons) == 3 and set(out[0].policy) >= {"grow", "max_width"}


def test_growth_policy_follows_what_the_runtime_did_on_similar_problems():
    runs = corpus()
    for r in runs:
        if r["name"] == STARTS[1].name:
            r["final"], r["rewrites"] = {"widths": [64]}, [{"step": 30}, {"step": 50}]
    # on easy problems the one-layer start scores above the median: grow it like there
    policy = growth_policy(runs, features(0.95), STARTS[1])
    assert policy["grow"] and policy["max_width"] == 64 and policy["first_at"] == 30
    assert policy["widenings"] == 2.0 and len(policy["neighbours"]) == 3
    assert not growth_policy(runs, features(0.95), STARTS[2])["grow"]


def test_a_proposal_turns_its_policy_into_runtime_policies():
    runs = corpus()
    for r in runs:
        r["final"] = {"widths": [128] * len(r["final"]["widths"])}
    best = propose(None, fit(runs), STARTS, corpus=runs, features=features(0.4))[0]
    (policy,) = best.policies()
    assert isinstance(policy, WidenOnPlateau) and policy.max_width == 128


def test_propose_needs_a_problem_and_candidates():
    sm = fit(corpus())
    with pytest.raises(InductionError, match="needs a problem or its features"):
        propose(None, sm)
    with pytest.raises(InductionError, match="no candidate"):
        propose(None, sm, candidates=(), corpus=corpus(), features=features(0.5))
