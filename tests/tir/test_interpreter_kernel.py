"""What the fast interpreter adds to the reference evaluator's meaning: speed and a cache."""

from __future__ import annotations

import gc
import weakref

import numpy as np

import mlcbook as mb
from mlcbook.tir.interpreter import _CACHE

from ._programs import matmul

RNG = np.random.default_rng(0)


def test_matmul_128_cubed_matches_numpy():
    f = matmul(128, 128, 128)
    a = RNG.standard_normal((128, 128)).astype("float32")
    b = RNG.standard_normal((128, 128)).astype("float32")
    c = np.empty((128, 128), "float32")
    mb.tir.interpret(f, a, b, c)
    np.testing.assert_allclose(c, a.astype("float64") @ b, rtol=1e-5, atol=1e-4)


def test_translation_is_cached_per_function_and_released_with_it():
    f = matmul(2, 2, 2)
    args = [np.ones((2, 2), "float32") for _ in range(3)]
    mb.tir.interpret(f, *args)
    kernel = _CACHE[f]
    mb.tir.interpret(f, *args)
    assert _CACHE[f] is kernel
    kernel_ref = weakref.ref(kernel)
    del f, kernel
    gc.collect()
    assert kernel_ref() is None
