"""Waiting for the native pool's workers to fall asleep, shared by the pool's tests."""
import time

from mlcbook.runtime.native_pool import SPIN_SECONDS


def all_asleep(pool, within: float = 20.0, calm: float = 50 * SPIN_SECONDS) -> bool:
    """Whether every worker of ``pool`` sleeps, and has for ``calm`` seconds, before
    ``within`` seconds pass. A worker whose spin ran out while the main thread published a
    job and ran it alone counts itself a sleeper for a moment, then sees the job and spins
    once more: one look at the count could catch that moment (on a loaded machine spins
    also end late)."""
    deadline, calm_since = time.perf_counter() + within, None
    while time.perf_counter() < deadline:
        now = time.perf_counter()
        if pool.sleeping < pool.workers:
            calm_since = None
        elif calm_since is None:
            calm_since = now
        elif now - calm_since >= calm:
            return True
        time.sleep(SPIN_SECONDS)
    return False
