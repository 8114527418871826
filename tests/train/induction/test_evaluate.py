import numpy as np
import pytest

from mlcbook.errors import InductionError
from mlcbook.train.induction import evaluate as ev

from .fake import STARTS, corpus


def test_ranks_are_one_for_the_best_and_share_ties():
    assert ev._ranks({"a": 0.9, "b": 0.5, "c": 0.5}) == {"a": 1.0, "b": 2.5, "c": 2.5}


def test_the_blind_pick_has_the_best_mean_rank():
    runs = [r for r in corpus() if r["features"]["linear_score"] > 0.8]
    assert ev.blind_pick(runs) == STARTS[0].name


def test_induction_beats_the_baselines_when_a_rule_exists():
    cases = ev.leave_one_family_out(corpus(), trials=2, draws=20)
    assert len(cases) == 4 * 3 * 2 and {c["family"] for c in cases} == {"f0", "f1", "f2", "f3"}
    s = ev.summary(cases)
    assert s["induction"]["mean_rank"] < 1.5 < s["random"]["mean_rank"] == 2.5
    for baseline in ("random", "blind"):                     # the intervals exclude 0
        assert s[baseline]["induction_minus"][1][1] < 0
    assert s["induction"]["regret"] < s["random"]["regret"]


def test_the_ceiling_picks_the_best_start_of_the_problems_other_seeds():
    cases = ev.leave_one_family_out(corpus(), trials=2, draws=2)
    # the rule holds on every seed: the other seeds' best start is this seed's best
    assert all(c["rank"]["oracle"] == 1.0 and c["regret"]["oracle"] == 0.0 for c in cases)


def test_random_search_picks_by_early_validation():
    runs = {r["name"]: r for r in corpus(families=1, problems=1, seeds=(0,))}
    ranks = ev._ranks({n: r["score"] for n, r in runs.items()})
    names = sorted(runs)
    early_best = max(names, key=lambda n: runs[n]["val"]["10"])
    assert ev._search(runs, ranks, names, 4) == (ranks[early_best], pytest.approx(
        max(r["score"] for r in runs.values()) - runs[early_best]["score"]))


def test_bootstrap_interval_holds_the_mean():
    cases = [{"problem": f"p{k % 5}", "v": float(k)} for k in range(20)]
    mean, (lo, hi) = ev.bootstrap(cases, lambda c: c["v"])
    assert mean == pytest.approx(9.5) and lo < mean < hi


def test_learning_curve_has_one_point_per_share():
    curve = ev.learning_curve(corpus(), fractions=(0.5, 1.0), repeats=2, trees=10)
    assert [f for f, _ in curve] == [0.5, 1.0] and all(np.isfinite(r) for _, r in curve)


def test_one_family_cannot_be_left_out():
    with pytest.raises(InductionError, match="at least 2"):
        ev.leave_one_family_out(corpus(families=1))


def test_search_needs_a_validation_point_at_its_share():
    runs = {r["name"]: r for r in corpus(families=1, problems=1, seeds=(0,))}
    with pytest.raises(InductionError, match="trials=3"):
        ev._search(runs, ev._ranks({n: r["score"] for n, r in runs.items()}), list(runs), 3)
