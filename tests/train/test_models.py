"""The course's small models refuse sizes that make no layer, before building anything."""

from __future__ import annotations

import pytest

import mlcbook as mb
from mlcbook.errors import TrainingError


@pytest.mark.parametrize("sizes,bad", [((64, 0, 10), r"mlp sizes\[1\] is 0"),
                                       ((64, -3, 10), r"mlp sizes\[1\] is -3"),
                                       ((64, 2.5, 10), r"mlp sizes\[1\] is 2.5"),
                                       ("64,10", "mlp sizes must be a sequence of integers")])
def test_mlp_refuses_sizes_that_are_not_positive_integers(sizes, bad):
    with pytest.raises(TrainingError, match=rf"\[MLC-D001\] {bad}.*Instead: e.g. mlp\("):
        mb.train.mlp(sizes)


@pytest.mark.parametrize("sizes", [(64,), ()])
def test_mlp_needs_at_least_one_layer(sizes):
    with pytest.raises(TrainingError, match="name no layer.*Instead: e.g. mlp"):
        mb.train.mlp(sizes)


@pytest.mark.parametrize("kwargs,bad", [(dict(batch=0), r"mlp batch\[0\] is 0"),
                                        (dict(batch=None), r"mlp batch\[0\] is None")])
def test_mlp_refuses_a_bad_batch(kwargs, bad):
    with pytest.raises(TrainingError, match=bad):
        mb.train.mlp((4, 2), **kwargs)


@pytest.mark.parametrize("kwargs,bad", [(dict(channels=(16, 0)), r"cnn channels\[1\] is 0"),
                                        (dict(classes=0), r"cnn \(batch, classes\)\[1\] is 0"),
                                        (dict(image=1), r"cnn image\[0\] is 1")])
def test_cnn_refuses_sizes_that_make_no_layer(kwargs, bad):
    with pytest.raises(TrainingError, match=bad):
        mb.train.cnn(**kwargs)


def test_valid_sizes_build_the_layers():
    model = mb.train.mlp((6, 5, 3), batch=2)
    assert model.weights["fc1.weight"].shape == (5, 6)
    assert model.weights["fc2.weight"].shape == (3, 5)


@pytest.mark.parametrize("make", [lambda: mb.train.mlp((64, 10 ** 12, 10)),
                                  lambda: mb.train.cnn(batch=2, channels=(10 ** 9,))])
def test_a_layer_too_big_to_allocate_is_refused_not_a_memory_error(make):
    with pytest.raises(TrainingError, match=r"a layer's weight of shape .* would hold more than "
                                            r"268435456 elements \(1 GiB\); Instead"):
        make()
