"""Tuning records: every measurement as one JSON line, keyed by the workload it tuned
(written by :mod:`mlcbook.tune`, read by ``mb.compile(..., tuning_records=...)``, so they
live in the graph layer, below both).

    >>> db = Database("records.jsonl")            # read if it exists, appended to as we tune
    >>> db.best(workload_key(func, target))       # the fastest record of that kernel
    >>> apply_best(func, db, target)              # func scheduled by it (None: no record)

A workload key is the structural hash of the untuned PrimFunc (equal programs, equal
keys, whatever their variable names) and the target it ran on. A record stores the
decisions of the point, its whole trace (so replaying needs no space), the median
seconds or the error. A tuning run reads the database first and does not measure a point
twice, so an interrupted run resumes where it stopped.

A record whose trace is :data:`DEFAULT_TRACE` measured the *default schedule* (a tuning
run's baseline): when it is the best of its workload, ``apply_best`` returns None and
``mb.compile`` keeps the default schedule, so records never make a kernel slower than
untuned.
"""

from __future__ import annotations

import json
import os
import statistics
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Optional

from ...codegen.target import Target
from ...errors import DatabaseError, MLCError
from ...schedule import Trace
from ...tir.function import PrimFunc
from ...tir.structural import structural_hash


#: the trace of a record that measured the default schedule (no decisions, nothing to replay)
DEFAULT_TRACE = {"default_schedule": True}


def workload_key(func: PrimFunc, target=None) -> str:
    """``"<structural hash>:<target>"`` of an untuned PrimFunc."""
    t = target if isinstance(target, Target) else Target(target or "llvm")
    return f"{structural_hash(func) & (2**64 - 1):016x}:{t}"


@dataclass(frozen=True)
class Record:
    """One measurement: ``seconds`` (median) or ``error``."""

    workload: str
    decisions: dict
    trace: dict
    seconds: Optional[float]
    error: Optional[str] = None
    name: str = ""

    @property
    def key(self) -> str:
        return repr(sorted(self.decisions.items()))


class Database:
    """The records of one JSON-lines file (created on the first :meth:`add`); ``path=None``
    keeps them in memory only."""

    def __init__(self, path: Optional[str] = None):
        self.path = None if path is None else os.fspath(path)
        if self.path is not None and os.path.isdir(self.path):
            raise DatabaseError(f"the tuning records {self.path!r} are a folder, not a file; "
                                "Instead: name a .jsonl file, e.g. records.jsonl")
        self._records: list[Record] = []
        if self.path is not None and os.path.exists(self.path):
            with open(self.path) as f:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        self._records.append(Record(**json.loads(line)))
                    except (json.JSONDecodeError, TypeError) as err:
                        raise DatabaseError(
                            f"{self.path}, line {n}, is not a tuning record ({err}); Instead: "
                            "pass a file written by mb.tune (one JSON object per line)") from None

    def add(self, record: Record) -> None:
        self._records.append(record)
        if self.path is not None:
            try:
                with open(self.path, "a") as f:
                    f.write(json.dumps(asdict(record)) + "\n")
            except OSError as err:
                raise DatabaseError(f"cannot write {self.path!r}: {err.strerror or err}; "
                                    "Instead: choose a writable path") from None

    def __len__(self) -> int:
        return len(self._records)

    def records(self, workload: Optional[str] = None) -> list[Record]:
        """All records, or those of one workload, in the order they were measured."""
        return [r for r in self._records if workload is None or r.workload == workload]

    def workloads(self) -> list[str]:
        return sorted({r.workload for r in self._records})

    def best(self, workload: str) -> Optional[Record]:
        """The fastest successful record of ``workload`` (None if it has none). A point
        measured several times (a search confirms its best few) counts with the median
        of its times, so one lucky measurement does not make it the best."""
        by_point: dict = {}
        for r in self.records(workload):
            if r.seconds is not None:
                by_point.setdefault(r.key, []).append(r)
        if not by_point:
            return None
        medians = {k: statistics.median(r.seconds for r in rs) for k, rs in by_point.items()}
        key = min(medians, key=medians.get)
        return replace(by_point[key][0], seconds=medians[key])


def apply_best(func: PrimFunc, db: Database, target=None) -> Optional[PrimFunc]:
    """``func`` scheduled by the best record of its workload, or None if there is no
    record or the best is the default schedule's; a record whose trace no longer applies is
    skipped with a warning."""
    best = db.best(workload_key(func, target))
    if best is None or best.trace == DEFAULT_TRACE:
        return None
    try:
        return Trace.from_json(best.trace).apply(func).func
    except MLCError as err:
        warnings.warn(f"the tuning record of {best.name or func.name!r} ({best.workload}) no "
                      f"longer applies and was skipped; the default schedule is used instead. "
                      f"Why: {err}", stacklevel=2)
        return None


__all__ = ["Database", "Record", "workload_key", "apply_best", "DEFAULT_TRACE"]
