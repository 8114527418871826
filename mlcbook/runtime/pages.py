"""Memory on huge pages, for buffers whose speed should not depend on the process.

A kernel's cache behaviour depends on where its buffers sit in *physical* memory: the L2
cache is indexed by physical address, and 4 KiB pages land wherever the OS puts them, so a
strided access pattern meets a different set of cache conflicts in every allocation. On
this project's Zen 3 machine the same batched-matmul kernel ran at 50 to 93 GFLOP/s in
four processes on 4 KiB pages, and at 108 to 113 on 2 MiB pages: one transparent huge page
is physically contiguous, so the mapping is the same every time. The tuner's workers put
a candidate's arguments here, so that every candidate (and the program it is compared
with) meets the same layout.

    >>> a = huge_empty(3 << 20)
    >>> a.nbytes, a.ctypes.data % HUGE_PAGE
    (3145728, 0)
    >>> x, y = huge_copy([np.ones(300_000, "float32"), np.zeros((512, 512), "float32")])
    >>> x.ctypes.data % HUGE_PAGE, y.ctypes.data % 64
    (0, 0)
"""

from __future__ import annotations

import mmap

import numpy as np

#: the size of a transparent huge page on x86-64 (and its alignment)
HUGE_PAGE = 2 << 20
#: blocks smaller than this stay on ordinary pages: they fit the caches whatever their
#: pages, and a huge page would cost 2 MiB of memory for a small buffer
HUGE_AT_LEAST = 1 << 20


def huge_empty(nbytes: int) -> np.ndarray:
    """An uninitialized ``uint8`` array of ``nbytes``; from ``HUGE_AT_LEAST`` bytes on, it
    starts on a 2 MiB boundary of an anonymous mapping advised to use transparent huge
    pages (where the OS allows it: ``/sys/kernel/mm/transparent_hugepage/enabled`` set to
    ``madvise`` or ``always``). Smaller ones are ``np.empty``."""
    if nbytes < HUGE_AT_LEAST:
        return np.empty(nbytes, np.uint8)
    # over-allocate by a page to start on its boundary; the slack is never touched, so it
    # costs address space, not memory
    try:
        m = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError as e:
        # the OS refused the address space (ENOMEM): the same failure as np.empty's
        raise MemoryError(f"cannot map {nbytes} bytes: {e.strerror or e}") from None
    if hasattr(mmap, "MADV_HUGEPAGE"):
        m.madvise(mmap.MADV_HUGEPAGE)
    whole = np.frombuffer(m, np.uint8)     # keeps the mapping alive as long as a view lives
    start = -whole.ctypes.data % HUGE_PAGE
    return whole[start:start + nbytes]


def huge_copy(arrays: list) -> list:
    """Copies of ``arrays`` in one :func:`huge_empty` block, one after another, each on a
    64-byte boundary (a cache line)."""
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += -(-a.nbytes // 64) * 64
    block = huge_empty(max(total, 1))
    out = []
    for a, off in zip(arrays, offsets):
        view = block[off:off + a.nbytes].view(a.dtype).reshape(a.shape)
        view[...] = a
        out.append(view)
    return out


__all__ = ["huge_empty", "huge_copy", "HUGE_PAGE", "HUGE_AT_LEAST"]
