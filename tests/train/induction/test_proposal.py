import pytest

from mlcbook.errors import InductionError
from mlcbook.train.induction import compare, fit, random_search, rank, synthetic

from .test_model import _corpus, _features


@pytest.fixture(scope="module")
def problem():
    return synthetic(2, n=120, d=5, outputs=3)


def test_random_search_keeps_its_best_candidate(problem):
    rec = random_search(problem, budget=8, trials=2, seed=0, candidates=[(4,), (8,), (6, 6)])
    assert len(rec["tried"]) == 2 and rec["initial"] in rec["tried"] and rec["steps"] == 4


def test_compare_reports_both_methods_at_equal_budget(problem):
    out = compare(fit(_corpus()), [problem], budget=8, trials=2, seeds=(0,),
                  candidates=[(4,), (8,)])
    row = out["rows"][0]
    assert out["runs"] == 1 and row["proposal"] == [4]   # few inputs: narrow (the rule)
    assert row["guided_pick"] in ([4], [8])
    assert out["median_induction"] == row["induction"]
    assert out["median_guided"] == row["guided"] and out["median_random"] == row["random"]


def test_rank_orders_every_candidate_best_first():
    sm = fit(_corpus())
    assert rank(sm, None, [(64,), (8,), (16,)], features=_features(5)) == [(8,), (16,), (64,)]


def test_random_search_trials_out_of_range(problem):
    with pytest.raises(InductionError, match="trials=3 must be in 1..2"):
        random_search(problem, 8, 3, 0, candidates=[(4,), (8,)])
