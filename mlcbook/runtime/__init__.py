"""Running compiled code: kernels, the build cache, the thread pool, timing, loading.

    >>> kernel = mb.build(func)
    >>> kernel(a, b, c)
    >>> mb.time_kernel(kernel, a, b, c)
    >>> mb.runtime.set_num_threads(1)
"""

from .build import build, cache_info, clear_cache
from .kernel import Kernel, KernelLibrary
from .loader import load_kernel
from .thread_pool import get_num_threads, num_threads, set_num_threads
from .timer import TimingResult, time_kernel

__all__ = ["build", "Kernel", "KernelLibrary", "load_kernel", "time_kernel", "TimingResult",
           "set_num_threads", "get_num_threads", "num_threads", "cache_info", "clear_cache"]
