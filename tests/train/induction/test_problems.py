import numpy as np
import pytest

from mlcbook.errors import InductionError, MissingDependencyError
from mlcbook.train.induction import (BUNDLED, FAMILIES, SYNTHETIC, digits, make, suite,
                                     synthetic)

sklearn = pytest.importorskip("sklearn.datasets")


def test_synthetic_classification_has_its_shapes_and_classes():
    p = synthetic(3, "classification", n=200, d=5, outputs=4, difficulty=0.5)
    assert p.x_train.shape == (160, 5) and p.x_val.shape == (40, 5)
    assert p.y_train.dtype == np.int64 and p.outputs == 4 and p.loss == "cross_entropy"


def test_synthetic_regression_is_a_standardized_column():
    p = synthetic(3, "regression", n=200, d=5, outputs=1)
    y = np.concatenate([p.y_train, p.y_val])
    assert y.shape == (200, 1) and p.outputs == 1 and p.loss == "mse"
    assert abs(y.mean()) < 1e-5 and abs(y.std() - 1) < 1e-4


def test_synthetic_is_seeded():
    a, b = synthetic(5, n=100), synthetic(5, n=100)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_val, b.y_val)
    assert not np.array_equal(a.x_train, synthetic(6, n=100).x_train)


def test_digits_subset():
    p = digits(sklearn.load_digits(), n=100)
    assert len(p.x_train) + len(p.x_val) == 100 and p.outputs == 10


@pytest.mark.parametrize("kw,message", [({"kind": "ranking"}, "kind='ranking'"),
                                        ({"difficulty": 2.0}, "difficulty=2.0"),
                                        ({"outputs": 1}, "outputs >= 2")])
def test_bad_synthetic_arguments(kw, message):
    with pytest.raises(InductionError, match=message):
        synthetic(0, **kw)


def test_every_family_makes_a_seeded_problem_of_its_own_kind():
    for family in SYNTHETIC:
        p = make(family, seed=2)
        assert p.family == family and p.name == f"{family}-s2"
        assert len(p.x_train) >= 200 and np.isfinite(p.x_train).all()
        np.testing.assert_array_equal(p.y_val, make(family, seed=2).y_val)
    assert make("regression", 0).kind == "regression" and make("moons", 0).outputs == 2


def test_two_seeds_of_a_family_differ_in_size_or_dimension():
    a, b = make("classification", 0), make("classification", 1)
    assert a.x_train.shape != b.x_train.shape


def test_inputs_are_standardized_by_the_training_rows():
    p = make("friedman", 0)
    np.testing.assert_allclose(p.x_train.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(p.x_train.std(axis=0), 1, atol=1e-3)


def test_patterns_are_8x8_images_of_bars():
    p = make("patterns", 0)
    assert p.x_train.shape[1] == 64 and 2 <= p.outputs <= 4


def test_the_bundled_datasets_are_one_family():
    for name, (_, kind) in BUNDLED.items():
        p = make(name)
        assert p.family == "bundled" and p.kind == kind and p.name == name
    assert len(make("digits").x_train) + len(make("digits").x_val) == 800


def test_suite_holds_every_family():
    names = [p.name for p in suite(seeds=(0,), bundled=False)]
    assert names == [f"{f}-s0" for f in SYNTHETIC] and set(FAMILIES) == {*SYNTHETIC, "bundled"}


def test_an_unknown_family():
    with pytest.raises(InductionError, match="no problem family 'spirals'"):
        make("spirals")


def test_without_scikit_learn_its_families_say_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "sklearn.datasets", None)
    with pytest.raises(MissingDependencyError, match=r"mlcbook\[course\]"):
        make("moons")
    assert make("teacher-cls", 0).family == "teacher-cls"      # needs numpy only
