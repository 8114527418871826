import pytest

from mlcbook.errors import InductionError
from mlcbook.train.induction import (build_corpus, load_corpus, save_corpus, synthetic,
                                     train_run)
from mlcbook.train.induction.corpus import SHIPPED


@pytest.fixture(scope="module")
def problem():
    return synthetic(1, n=200, d=6, outputs=3, difficulty=0.3)


def test_a_run_learns_and_records_its_structure(problem):
    rec = train_run(problem, (8,), steps=25, seed=0, grow=False)
    assert rec["loss_end"] < rec["loss_start"]
    assert rec["initial"] == [8] and rec["final"]["widths"][0] <= 8 and rec["grown"] == 0
    assert 0.0 <= rec["score"] <= 1.0


def test_a_run_grows_on_a_plateau(problem):
    rec = train_run(problem, (4,), steps=25, seed=0, batch=40)
    # batch 40 on 160 rows: 4 steps per epoch, the plateau trigger sees 5 epoch means
    assert rec["grown"] >= 1 and rec["final"]["widths"][0] > 4 - rec["pruned"]
    assert rec["growth"][0]["layer"] == "fc1" and rec["growth"][0]["to"] == 8


def test_corpus_roundtrips_through_json(problem, tmp_path):
    corpus = build_corpus([problem], [(4,), (4, 4)], steps=6)
    assert [r["initial"] for r in corpus] == [[4], [4, 4]]
    assert load_corpus(save_corpus(corpus, tmp_path / "c.json")) == corpus


def test_the_shipped_corpus_has_the_records_a_run_writes(problem):
    shipped = load_corpus()
    assert len(shipped) >= 40 and len({r["problem"] for r in shipped}) >= 5
    fresh = train_run(problem, (4,), steps=3)
    for rec in shipped:
        assert rec.keys() == fresh.keys() and rec["features"].keys() == fresh["features"].keys()


def test_widths_must_be_positive(problem):
    with pytest.raises(InductionError, match="at least one hidden"):
        train_run(problem, (), steps=1)


def test_batch_larger_than_the_data(problem):
    with pytest.raises(InductionError, match="fewer than batch=500"):
        train_run(problem, (4,), steps=1, batch=500)


def test_load_refuses_other_json(tmp_path):
    (tmp_path / "x.json").write_text('{"runs": []}')
    with pytest.raises(InductionError, match="not a corpus"):
        load_corpus(tmp_path / "x.json")
    with pytest.raises(InductionError, match="no corpus at"):
        load_corpus(tmp_path / "missing.json")
    assert SHIPPED.name == "corpus.json"
