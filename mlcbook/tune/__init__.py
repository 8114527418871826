"""``mb.tune``: find schedules automatically: a space of schedules with decisions, measurements
on this machine, a cost model that ranks candidates, a search that proposes them, and records
that ``mb.compile`` reuses.

    >>> space = mb.tune.Space(func)                 # schedules with decisions (space.py)
    >>> best = mb.tune.tune(func, trials=64, database="records.jsonl")
    >>> exe = mb.compile(mod, tuning_records="records.jsonl")
    >>> mb.tune.tasks.tune_model(mod, trials=200, database="records.jsonl")   # whole models

Modules: :mod:`.space`, :mod:`.knobs`, :mod:`.measure`, :mod:`.features`, :mod:`.cost_model`,
:mod:`.search`, :mod:`.database`, :mod:`.tasks`, :mod:`.plot`, :mod:`.errors`.
"""

from .cost_model import AnalyticModel, RandomModel, XGBModel
from .database import Database, Record, apply_best, workload_key
from .errors import DatabaseError, SpaceError, TuneArgumentError
from .features import FEATURE_NAMES, features
from .measure import Job, LocalExecutor, Measurer, MeasureResult
from .search import TaskSearch, TuneResult, tune
from .knobs import Knobs, Point
from .space import Space

__all__ = ["Space", "Point", "Knobs", "tune", "TaskSearch", "TuneResult", "Database", "Record",
           "apply_best", "workload_key", "features", "FEATURE_NAMES", "XGBModel", "RandomModel",
           "AnalyticModel", "Measurer", "Job", "MeasureResult", "LocalExecutor",
           "SpaceError", "TuneArgumentError", "DatabaseError"]
