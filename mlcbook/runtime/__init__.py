"""Running compiled code: kernels, the build cache, the thread pool, timing, loading.

    >>> kernel = mb.build(func)
    >>> kernel(a, b, c)
    >>> mb.time_kernel(kernel, a, b, c)
    >>> mb.runtime.set_num_threads(1)
    >>> mb.runtime.time_interleaved({"numpy": lambda: a @ b, "ours": (kernel, a, b, c)})
"""

from .build import build, cache_info, clear_cache
from .kernel import Kernel, KernelLibrary
from .loader import load_kernel
from .thread_pool import get_num_threads, num_threads, set_num_threads
from .timer import MachineLoad, TimingResult, machine_load, time_interleaved, time_kernel

__all__ = ["build", "Kernel", "KernelLibrary", "load_kernel", "time_kernel", "TimingResult",
           "time_interleaved", "machine_load", "MachineLoad",
           "set_num_threads", "get_num_threads", "num_threads", "cache_info", "clear_cache"]
