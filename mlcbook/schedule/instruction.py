"""One recorded step of a schedule: which primitive, its arguments, its outputs, its decision.

    >>> inst = sch.trace[3]
    >>> inst.as_python()       # 'l6, l7 = sch.split(l1, factors=[v4, v5])'
    >>> inst.as_json()         # {'kind': 'split', 'args': {'loop': {'rv': 'l1'}, ...}, ...}

An instruction stores its arguments by parameter name, with every handle replaced by its
symbol (``{"rv": "l1"}`` in JSON, ``l1`` in Python); sampling steps also store the
decision they took, which a replay reuses instead of drawing again. The sequence of them
is :class:`~.state.Trace`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from .errors import ArgumentTypeError, TraceError
from .handles import BlockRV, ExprRV, LoopRV
from .registry import PRIMITIVES, Primitive


@dataclass(frozen=True)
class Instruction:
    """One step: ``kind`` names the primitive; ``args`` maps parameter names to values."""

    kind: str
    args: dict
    outputs: Union[None, str, list]
    decision: Any = None

    def as_python(self, sch_name: str = "sch") -> str:
        """The step as one line of Python, e.g. ``l4, l5 = sch.split(l1, factors=[None, 32])``."""
        prim = PRIMITIVES.get(self.kind)
        if prim is None:
            raise TraceError(f"unknown instruction {self.kind!r} in trace")
        parts: list[str] = []
        positional = True
        for p in prim.signature.parameters.values():
            value = self.args.get(p.name, p.default)
            if p.kind is p.VAR_POSITIONAL:
                parts.extend(_py(v) for v in value)
                continue
            is_handle = isinstance(value, dict)
            if positional and (not parts or is_handle) and p.kind is not p.KEYWORD_ONLY:
                parts.append(_py(value))
                continue
            positional = False
            if p.default is not p.empty and value == p.default:
                continue
            parts.append(f"{p.name}={_py(value)}")
        if self.decision is not None:
            parts.append(f"decision={json.dumps(self.decision)}")
        call = f"{sch_name}.{self.kind}({', '.join(parts)})"
        out = self.outputs
        if out is None:
            line = call
        elif isinstance(out, str):
            line = f"{out} = {call}"
        elif len(out) == 0:
            line = call
        elif len(out) == 1:
            line = f"[{out[0]}] = {call}"
        else:
            line = f"{', '.join(out)} = {call}"
        return line

    def as_json(self) -> dict:
        d = {"kind": self.kind, "args": self.args, "outputs": self.outputs}
        if self.decision is not None:
            d["decision"] = self.decision
        return d


def _py(value) -> str:
    if isinstance(value, dict):
        return value["rv"]
    if isinstance(value, list):
        return "[" + ", ".join(_py(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def encode_args(prim: Primitive, arguments: dict) -> dict:
    """The arguments of a call to ``prim`` as an instruction stores them (handles as symbols)."""
    def enc(v):
        if isinstance(v, (BlockRV, LoopRV, ExprRV)):
            return {"rv": v.sym}
        if isinstance(v, (list, tuple)):
            return [enc(x) for x in v]
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        raise ArgumentTypeError(
            f"{prim.name}: argument {v!r} of type {type(v).__name__} cannot be recorded in a "
            "trace; use handles, numbers, strings, or lists of them")

    return {k: enc(v) for k, v in arguments.items()}


__all__ = ["Instruction", "encode_args"]
