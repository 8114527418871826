"""``mb.tune``: find schedules automatically: a space of schedules with decisions, measurements
on this machine, a cost model that ranks candidates, a search that proposes them, and records
that ``mb.compile`` reuses.

    >>> space = mb.tune.Space(func)                 # schedules with decisions (space.py)
    >>> best = mb.tune.tune(func, trials=64, database="records.jsonl")
    >>> exe = mb.compile(mod, tuning_records="records.jsonl")
    >>> mb.tune.tune_model(mod, trials=200, database="records.jsonl")   # whole models

Modules: :mod:`.space` (the rules of :mod:`mlcbook.rules` with open knobs), :mod:`.measure`, :mod:`.features`, :mod:`.cost_model`,
:mod:`.search`, :mod:`.database`, :mod:`.tasks`, :mod:`.report`, :mod:`.display`,
:mod:`.plot`, :mod:`.errors`.
"""

from .cost_model import AnalyticModel, RandomModel, XGBModel
from .database import Database, Record, apply_best, workload_key
from .errors import DatabaseError, SpaceError, TuneArgumentError
from .features import FEATURE_NAMES, features
from .measure import Job, LocalExecutor, Measurer, MeasureResult
from .search import TaskSearch, TuneResult, tune
from ..rules.knobs import Knobs, Point
from .space import Space
from .tasks import Task, extract_tasks, tune_model
from .cluster import DaskExecutor, SharedHostWarning

__all__ = ["Space", "Point", "Knobs", "tune", "TaskSearch", "TuneResult", "Database", "Record",
           "apply_best", "workload_key", "features", "FEATURE_NAMES", "XGBModel", "RandomModel",
           "AnalyticModel", "Measurer", "Job", "MeasureResult", "LocalExecutor",
           "SpaceError", "TuneArgumentError", "DatabaseError", "tune_model", "extract_tasks",
           "Task", "DaskExecutor", "SharedHostWarning"]
