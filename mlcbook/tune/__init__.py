"""``mb.tune``: find schedules automatically: a space of schedules with decisions, measurements
on this machine, a cost model that ranks candidates, a search that proposes them, and records
that ``mb.compile`` reuses.

    >>> space = mb.tune.Space(func)                 # schedules with decisions (space.py)
    >>> best = mb.tune.tune(func, trials=64, database="records.jsonl")
    >>> exe = mb.compile(mod, tuning_records="records.jsonl")

Modules: :mod:`.space`, :mod:`.measure`, :mod:`.features`, :mod:`.cost_model`,
:mod:`.search`, :mod:`.database`, :mod:`.tasks`, :mod:`.errors`.
"""

from .errors import DatabaseError, SpaceError, TuneArgumentError
from .space import Knobs, Point, Space

__all__ = ["Space", "Point", "Knobs", "SpaceError", "TuneArgumentError", "DatabaseError"]
