import numpy as np
import pytest

from mlcbook.errors import InductionError
from mlcbook.train.induction import digits, synthetic

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
