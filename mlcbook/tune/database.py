"""Tuning records, as ``mb.tune`` writes them: the database lives in
:mod:`mlcbook.graph.kernels.records` (``mb.compile`` reads it, and the graph layer may not import
this package); this module is its home in ``mb.tune``.

    >>> db = mb.tune.Database("records.jsonl")
"""

from ..graph.kernels.records import DEFAULT_TRACE, Database, Record, apply_best, workload_key

__all__ = ["Database", "Record", "workload_key", "apply_best", "DEFAULT_TRACE"]
