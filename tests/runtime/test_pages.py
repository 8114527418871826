"""Huge-page buffers: aligned to the page from HUGE_AT_LEAST bytes on, copies intact."""

import numpy as np
import pytest

from mlcbook.runtime.pages import HUGE_AT_LEAST, HUGE_PAGE, huge_copy, huge_empty


def test_a_large_buffer_starts_on_a_huge_page():
    a = huge_empty(HUGE_AT_LEAST + 3)
    assert a.nbytes == HUGE_AT_LEAST + 3 and a.ctypes.data % HUGE_PAGE == 0


def test_a_small_buffer_is_an_ordinary_array():
    assert huge_empty(100).nbytes == 100


def test_copies_keep_values_shapes_and_cache_line_alignment():
    arrays = [np.arange(300_000, dtype="float32"), np.ones((3, 5), "int8"),
              np.full((512, 512), 2.0, "float32")]
    copies = huge_copy(arrays)
    assert copies[0].ctypes.data % HUGE_PAGE == 0
    for a, c in zip(arrays, copies):
        assert c.shape == a.shape and c.dtype == a.dtype and c.ctypes.data % 64 == 0
        np.testing.assert_array_equal(c, a)


def test_a_mapping_the_os_refuses_is_a_memory_error_as_for_numpy():
    # 2**62 bytes: more address space than any x86-64 or AArch64 process has
    with pytest.raises(MemoryError, match=f"cannot map {1 << 62} bytes"):
        huge_empty(1 << 62)
