"""How IR nodes print, without importing their printers.

A printer imports the node classes it prints; a node's ``__str__`` needs the printer. So
the node asks this table, by name, and each printer module registers its functions here
when it loads (``mb.tir`` and ``mb.graph`` import their printers, and any import of a node
module runs its package first).

    >>> register("tir.expr", expr_to_str)        # in mlcbook.tir.printer
    >>> printer("tir.expr")(expr)                 # in PrimExpr.__str__
"""

from __future__ import annotations

from typing import Callable

from .errors import MLCError

_PRINTERS: dict[str, Callable] = {}


def register(name: str, fn: Callable) -> None:
    """Make ``fn`` the printer called ``name``."""
    _PRINTERS[name] = fn


def printer(name: str) -> Callable:
    """The printer registered as ``name``."""
    try:
        return _PRINTERS[name]
    except KeyError:
        raise MLCError(f"no printer {name!r} is registered; import mlcbook (its packages "
                       "register their printers when they load)") from None
