"""The errors of ``mb.tune``: a point of a space that is rejected before it is measured, a
bad tuning request, a database that cannot be read.

    >>> raise SpaceError("register tile of 12 x 3 accumulators needs 36 registers ...")
"""

from __future__ import annotations

from ..errors import DatabaseError, SpaceError, TuneError


class TuneArgumentError(TuneError):
    """A tuning call got a bad argument (a budget, a model name, an executor)."""

    code = "MLC-U002"


__all__ = ["SpaceError", "TuneArgumentError", "DatabaseError", "TuneError"]
