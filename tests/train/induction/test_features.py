import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import InductionError
from mlcbook.train.induction import PROBLEM_FEATURES, problem_features, score, structure_of
from mlcbook.train.induction import synthetic
from mlcbook.train.rewrite import deepen


def test_problem_features_are_all_there():
    f = problem_features(synthetic(1, n=200, d=6, outputs=3))
    assert tuple(f) == PROBLEM_FEATURES
    assert f["inputs"] == 6 and f["outputs"] == 3 and f["classification"] == 1


def test_linear_score_tells_an_easy_problem_from_a_hard_one():
    easy = problem_features(synthetic(2, n=300, d=8, outputs=3, difficulty=0.0))
    hard = problem_features(synthetic(2, n=300, d=8, outputs=3, difficulty=1.0))
    assert easy["linear_score"] > hard["linear_score"] + 0.1


def test_knn_score_tells_separable_classes_from_noise():
    easy = problem_features(synthetic(2, n=300, d=4, outputs=2, difficulty=0.0))
    noise = synthetic(2, n=300, d=4, outputs=2, difficulty=0.0)
    shuffled = type(noise)(noise.name, noise.kind, noise.x_train,
                           np.random.default_rng(0).permutation(noise.y_train), noise.x_val,
                           np.random.default_rng(1).permutation(noise.y_val))
    assert easy["knn_score"] > problem_features(shuffled)["knn_score"] + 0.2


def test_score_is_accuracy_or_r2():
    p = synthetic(1, n=50)
    y = np.array([0, 1, 2, 1])
    assert score(p, np.eye(3)[[0, 1, 0, 1]], y) == 0.75
    r = synthetic(1, "regression", n=50, outputs=1)
    t = np.array([[1.0], [2.0], [3.0]])
    assert score(r, t, t) == 1.0 and score(r, np.full((3, 1), 2.0), t) == 0.0


def test_structure_of_reads_depth_widths_and_motifs():
    s = structure_of(mb.train.mlp((5, 16, 8, 3)))
    assert s["depth"] == 2 and s["widths"] == (16, 8)
    assert s["params"] == 6 * 16 + 17 * 8 + 9 * 3
    assert s["motifs"] == {"gemm>relu": 2, "relu>gemm": 2}


def test_structure_of_sees_a_residual_block():
    s = structure_of(deepen(mb.train.mlp((5, 16, 3)), "relu1").model)
    assert s["motifs"]["relu>add"] == 1 and s["motifs"]["gemm>add"] == 1


def test_problem_features_need_data():
    p = synthetic(1, n=50)
    tiny = type(p)(p.name, p.kind, p.x_train[:1], p.y_train[:1], p.x_val, p.y_val)
    with pytest.raises(InductionError, match="at least 2"):
        problem_features(tiny)


def test_structure_of_needs_a_function():
    with pytest.raises(InductionError, match="graph Function"):
        structure_of("mlp")
