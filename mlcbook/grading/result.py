"""The answer of one check: points and a message, shown nicely in Jupyter.

A :class:`CheckResult` displays as text in a terminal and as a coloured box in Jupyter,
and it carries a machine-readable copy under :data:`MIMETYPE` so that ``mlcbook grade``
can collect it from the outputs of an executed notebook::

    >>> r = CheckResult("01.lnumpy_bmm", 0, 2, "not implemented: lnumpy_bmm raised NotImplementedError")
    >>> print(r)
    [01.lnumpy_bmm] 0/2 — not implemented: lnumpy_bmm raised NotImplementedError
"""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass

MIMETYPE = "application/vnd.mlcbook.check+json"


@dataclass(frozen=True)
class CheckResult:
    exercise: str
    points: int
    max_points: int
    message: str

    @property
    def passed(self) -> bool:
        return self.points == self.max_points

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> CheckResult:
        return cls(exercise=str(data["exercise"]), points=int(data["points"]),
                   max_points=int(data["max_points"]), message=str(data["message"]))

    def __str__(self) -> str:
        return f"[{self.exercise}] {self.points}/{self.max_points} — {self.message}"

    def _repr_html_(self) -> str:
        if self.passed:
            colour, mark = "#2e7d32", "&#10004;"
        elif self.points > 0:
            colour, mark = "#ef6c00", "&#9679;"
        else:
            colour, mark = "#c62828", "&#10008;"
        return (f'<div style="border-left: 4px solid {colour}; padding: 4px 10px; margin: 2px 0">'
                f'<span style="color: {colour}; font-weight: bold">{mark} {self.points}/'
                f'{self.max_points}</span> <code>{html.escape(self.exercise)}</code>'
                f'<div style="white-space: pre-wrap; font-family: monospace">'
                f"{html.escape(self.message)}</div></div>")

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/plain": str(self), "text/html": self._repr_html_(), MIMETYPE: self.to_json()}
