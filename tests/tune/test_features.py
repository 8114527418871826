"""Features: documented, deterministic, and they see what a schedule changes."""

import numpy as np

from mlcbook.graph.kernels.default_schedule import default_schedule
from mlcbook.tune.features import (ACCESS_FEATURES, FEATURE_NAMES, PROGRAM_FEATURES, describe,
                                   features, flop_count)

from ._util import matmul


def test_every_feature_is_documented():
    assert len(FEATURE_NAMES) == 3 * len(ACCESS_FEATURES) + len(PROGRAM_FEATURES)
    for name, doc in ACCESS_FEATURES + PROGRAM_FEATURES:
        assert len(doc) > 20 and name in describe()


def test_features_are_deterministic():
    f = default_schedule(matmul(32))
    assert np.array_equal(features(f), features(f))
    assert features(f).shape == (len(FEATURE_NAMES),)


def test_features_see_vectorization_and_flops():
    naive, tuned = matmul(32), default_schedule(matmul(32))
    lanes = FEATURE_NAMES.index("store.vector_lanes")
    assert features(naive)[lanes] == 0 and features(tuned)[lanes] > 0
    assert flop_count(naive) == 2 * 32 ** 3
