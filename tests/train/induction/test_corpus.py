from concurrent.futures import ThreadPoolExecutor

import pytest

from mlcbook.errors import InductionError
from mlcbook.train.induction import (Structure, build_corpus, load_corpus, make,
                                     problem_features, save_corpus, synthetic, train_run)
from mlcbook.train.induction.corpus import SHIPPED


@pytest.fixture(scope="module")
def problem():
    return synthetic(1, n=200, d=6, outputs=3, difficulty=0.3)


def test_a_run_records_its_start_curve_and_scores(problem):
    rec = train_run(problem, Structure(2, 8), steps=24, seed=0, grow=False)
    assert rec["initial"]["motifs"] == {"gemm>relu": 2, "relu>gemm": 2}
    assert rec["final"]["widths"] == [8, 8] and rec["rewrites"] == []
    assert list(rec["val"]) == ["6", "12", "24"] and rec["score"] == rec["val"]["24"]
    assert len(rec["curve"]) == 2 and rec["curve"][-1] < rec["curve"][0]
    assert 0.0 <= rec["score"] <= 1.0


def test_the_runtime_widens_on_plateaus_and_the_record_says_when(problem):
    rec = train_run(problem, Structure(1, 2), steps=40, seed=0, batch=40)
    # batch 40 on 160 rows: 4 steps per epoch, the plateau trigger sees 10 epoch means
    assert rec["rewrites"] and rec["rewrites"][0]["layer"] == "fc1"
    # an epoch's mean is known at the first step of the next epoch: steps 4k + 1
    assert rec["rewrites"][0]["to"] == 4 and rec["rewrites"][0]["step"] % 4 == 1
    assert rec["final"]["widths"][0] == rec["rewrites"][-1]["to"]


def test_a_run_cut_short_is_the_shorter_run(problem):
    # what random search at equal compute relies on: the policy only looks back
    long, short = (train_run(problem, Structure(1, 4), steps=s, seed=1, batch=40)
                   for s in (48, 24))
    assert long["val"]["24"] == short["val"]["24"]


def test_an_executor_builds_the_same_corpus(problem):
    starts = [Structure(0), Structure(1, 4)]
    serial = build_corpus([problem], starts, steps=8, show_progress=False)
    with ThreadPoolExecutor(2) as ex:
        parallel = build_corpus([problem], starts, steps=8, executor=ex, show_progress=False)
    assert parallel == serial and [r["name"] for r in serial] == ["linear", "mlp-1x4-relu"]


def test_corpus_roundtrips_through_json(problem, tmp_path):
    corpus = build_corpus([problem], [Structure(1, 4)], steps=4, seeds=(0, 1),
                          show_progress=False)
    assert load_corpus(save_corpus(corpus, tmp_path / "c.json")) == corpus


def test_the_shipped_corpus_has_the_records_a_run_writes(problem):
    shipped = load_corpus()
    assert len(shipped) >= 200 and len({r["family"] for r in shipped}) >= 8
    fresh = train_run(problem, Structure(1, 4), steps=4)
    for rec in shipped:
        assert rec.keys() == fresh.keys() and rec["features"].keys() == fresh["features"].keys()


def test_a_run_needs_a_structure_and_enough_rows(problem):
    with pytest.raises(InductionError, match="must be a Structure"):
        train_run(problem, (16,), steps=1)
    with pytest.raises(InductionError, match="fewer than batch=500"):
        train_run(problem, Structure(1), steps=1, batch=500)
    with pytest.raises(InductionError, match="at least one problem"):
        build_corpus([], [Structure(1)])


def test_load_refuses_other_json(tmp_path):
    (tmp_path / "x.json").write_text('{"runs": []}')
    with pytest.raises(InductionError, match="not a corpus"):
        load_corpus(tmp_path / "x.json")
    with pytest.raises(InductionError, match="no corpus at"):
        load_corpus(tmp_path / "missing.json")
    assert SHIPPED.name == "corpus.json"


def test_the_shipped_corpus_is_reproducible_from_its_problems():
    pytest.importorskip("sklearn.datasets")
    shipped = [r for r in load_corpus() if r["problem"] == "moons-s0"]
    p = make("moons", 0)
    assert problem_features(p) == pytest.approx(shipped[0]["features"], abs=1e-3)
    rec = next(r for r in shipped if r["name"] == "linear" and r["seed"] == 0)
    # float32 sums may round differently on another CPU: the same scores, not bit for bit
    fresh = train_run(p, Structure(0), steps=rec["steps"], seed=0)
    assert fresh["val"] == pytest.approx(rec["val"], abs=0.02)
