"""The trace: every step of a schedule, replayable, printable as Python, storable as JSON.

    >>> print(sch.trace)
    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    v4, v5 = sch.sample_perfect_tile(l1, n=2, max_innermost_factor=16, decision=[8, 16])
    l6, l7 = sch.split(l1, factors=[v4, v5])
    >>> new = sch.trace.apply(func)                    # same program again
    >>> Trace.from_json(sch.trace.as_json())           # through JSON
    >>> sch.trace.with_decision(2, [4, 32]).apply(func)   # the same steps, another tile

An instruction stores its arguments by parameter name, with every handle replaced by its
symbol (``{"rv": "l1"}`` in JSON, ``l1`` in Python); sampling steps also store the
decision they took, which a replay reuses instead of drawing again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Union

from .errors import TraceError

_VERSION = 1


@dataclass(frozen=True)
class Instruction:
    """One step: ``kind`` names the primitive; ``args`` maps parameter names to values."""

    kind: str
    args: dict
    outputs: Union[None, str, list]
    decision: Any = None

    def as_python(self, sch_name: str = "sch") -> str:
        """The step as one line of Python, e.g. ``l4, l5 = sch.split(l1, factors=[None, 32])``."""
        from .state import PRIMITIVES
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


@dataclass
class Trace:
    """The ordered steps of a schedule. ``sch.trace`` returns a copy."""

    insts: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.insts)

    def __iter__(self):
        return iter(self.insts)

    def __getitem__(self, k):
        return self.insts[k]

    def as_python(self, sch_name: str = "sch") -> str:
        """The steps as Python lines that, run with a fresh ``sch``, redo the schedule."""
        return "\n".join(inst.as_python(sch_name) for inst in self.insts)

    def __str__(self) -> str:
        return self.as_python()

    def _repr_pretty_(self, p, cycle) -> None:
        p.text(self.as_python())

    def as_json(self) -> dict:
        """A JSON-serializable object; :meth:`from_json` reads it back."""
        return {"version": _VERSION, "insts": [i.as_json() for i in self.insts]}

    @staticmethod
    def from_json(obj: Union[dict, str]) -> "Trace":
        """The trace stored by :meth:`as_json` (the object, or its JSON text)."""
        if isinstance(obj, str):
            try:
                obj = json.loads(obj)
            except json.JSONDecodeError as err:
                raise TraceError(f"the trace is not valid JSON: {err}") from None
        if not isinstance(obj, dict) or obj.get("version") != _VERSION or not isinstance(
                obj.get("insts"), list):
            raise TraceError(f"not a trace of version {_VERSION}: expected "
                             "{'version': 1, 'insts': [...]}, as Trace.as_json() writes")
        insts = []
        for k, d in enumerate(obj["insts"]):
            if not isinstance(d, dict) or not isinstance(d.get("kind"), str) or not isinstance(
                    d.get("args"), dict):
                raise TraceError(f"instruction #{k} of the trace is malformed: {d!r:.80}")
            insts.append(Instruction(d["kind"], d["args"], d.get("outputs"), d.get("decision")))
        return Trace(insts)

    @property
    def decisions(self) -> list[tuple[int, Instruction]]:
        """``(index, instruction)`` of every sampling step, the places a search can change."""
        return [(k, i) for k, i in enumerate(self.insts) if i.decision is not None]

    def with_decision(self, inst: Union[int, Instruction], decision: Any) -> "Trace":
        """A copy with the decision of one sampling step (its index, or the instruction) changed."""
        if isinstance(inst, Instruction):
            matches = [k for k, i in enumerate(self.insts) if i is inst]
            if not matches:
                raise TraceError("the instruction is not in this trace")
            k = matches[0]
        else:
            k = inst
            if not isinstance(k, int) or not -len(self.insts) <= k < len(self.insts):
                raise TraceError(f"instruction index {k!r} is out of range for a trace of "
                                 f"{len(self.insts)} steps")
        if self.insts[k].decision is None:
            raise TraceError(f"step {k} ({self.insts[k].kind}) makes no random decision; "
                             "see trace.decisions for the ones that do")
        insts = list(self.insts)
        insts[k] = replace(insts[k], decision=decision)
        return Trace(insts)

    def apply(self, func_or_mod, *, seed: Optional[int] = None, func_name: Optional[str] = None):
        """Replay the steps onto ``func_or_mod`` (the program the trace started from).

        Returns a new :class:`~mlcbook.schedule.Schedule`; sampling steps reuse their
        recorded decisions. Illegal steps raise the same errors as when first applied.
        """
        from .state import Schedule
        sch = Schedule(func_or_mod, seed=seed, func_name=func_name)
        self.apply_to_schedule(sch)
        return sch

    def apply_to_schedule(self, sch) -> None:
        """Replay the steps onto an existing schedule (handles are matched by symbol)."""
        from .state import PRIMITIVES
        env: dict[str, Any] = {}

        def dec(v):
            if isinstance(v, dict):
                if set(v) != {"rv"} or v["rv"] not in env:
                    raise TraceError(f"the trace uses {v!r} before any step defines it")
                return env[v["rv"]]
            if isinstance(v, list):
                return [dec(x) for x in v]
            return v

        for k, inst in enumerate(self.insts):
            prim = PRIMITIVES.get(inst.kind)
            if prim is None:
                raise TraceError(f"step {k}: unknown instruction {inst.kind!r}; known: "
                                 f"{', '.join(sorted(PRIMITIVES))}")
            args, kwargs = [], {}
            for p in prim.signature.parameters.values():
                if p.name not in inst.args:
                    continue
                value = dec(inst.args[p.name])
                if p.kind is p.VAR_POSITIONAL:
                    args.extend(value)
                elif p.kind is p.KEYWORD_ONLY:
                    kwargs[p.name] = value
                elif kwargs:
                    kwargs[p.name] = value
                else:
                    args.append(value)
            unknown = set(inst.args) - set(prim.signature.parameters)
            if unknown:
                raise TraceError(f"step {k} ({inst.kind}) has unknown arguments {sorted(unknown)}")
            result = sch._apply(prim, tuple(args), kwargs, decision=inst.decision)
            out = inst.outputs
            if isinstance(out, str):
                env[out] = result
            elif isinstance(out, list):
                if not isinstance(result, list) or len(result) != len(out):
                    raise TraceError(f"step {k} ({inst.kind}) gave {result!r:.60} but the trace "
                                     f"expects {len(out)} outputs")
                env.update(zip(out, result))


__all__ = ["Trace", "Instruction"]
