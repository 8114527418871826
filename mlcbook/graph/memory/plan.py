"""The run plan of a compiled model: which buffer ("slot") every value lives in, and which
kernel calls a run makes on them.

    >>> plan, weights = make_plan(func)       # func: a legalized graph Function
    >>> plan.steps[0]
    ('matmul', [0, 1, 2])                      # kernel name, slot of each parameter
    >>> check_plan(plan, entries)             # before anything native runs on a loaded plan

A plan read from a file is checked against the kernels' recorded signatures by
:func:`check_plan`: every slot a kernel touches has the parameter's dtype and size, outputs
are written only to intermediates, views point to earlier slots (so there is no cycle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ...errors import ArtifactError, GraphError
from ...ops import get as get_op
from ...ops.types import GRAPH_DTYPES, Attrs, TensorType, TupleType, storage_dtype
from ..expr import Call, CallTIR, Constant, Function, Tuple, TupleGetItem, Var, post_order

SLOT_KINDS = ("input", "const", "temp", "view")
#: largest buffer a plan may describe (bytes); far beyond any model, small enough that no
#: size computation overflows a 64-bit integer in the native code
MAX_BYTES = 1 << 48


@dataclass
class Slot:
    """A buffer of the plan: an input, a weight, an intermediate, or a view of another slot."""

    shape: tuple[int, ...]
    dtype: str
    kind: str                 #: "input", "const", "temp" or "view"
    ref: int = -1             #: input index (input) or viewed slot (view)

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "kind": self.kind, "ref": self.ref}

    @staticmethod
    def from_json(d: dict) -> "Slot":
        return Slot(parse_shape(d["shape"]), parse_dtype(d["dtype"]), d["kind"], _int(d["ref"]))


@dataclass
class Plan:
    """What a run does: ``steps`` call kernels on slots; ``outputs`` are slots to return."""

    inputs: list[tuple[str, TensorType]]
    slots: list[Slot]
    steps: list[tuple[str, list[int]]]
    outputs: list[int]
    tuple_output: bool
    #: ``(step, argument position, n, axis, coordinate)``: that argument holds indices into
    #: an axis of length ``n`` (all its elements if ``coordinate`` is -1, else only that
    #: position along its last axis); a run checks they lie in ``[-n, n)`` before the step's
    #: kernel runs
    checks: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    #: byte offset of each temp slot in one arena (see mlcbook.graph.memory.memory_plan); empty:
    #: every temp has a buffer of its own
    offsets: dict[int, int] = field(default_factory=dict)
    arena_bytes: int = 0
    #: the name of each output (the ONNX graph's); empty: they are called output_0, output_1...
    output_names: list[str] = field(default_factory=list)
    #: for planning only (never saved): the attrs of each step's call_tir (``inplace``,
    #: ``concat_axis``); the slots that live inside another, ``{slot: (owner, byte
    #: offset)}`` (the inputs of an elided concat); the outputs that update an input,
    #: ``{output: input name}`` (see :mod:`.aliases`)
    facts: list[Attrs] = field(default_factory=list)
    parts: dict[int, tuple[int, int]] = field(default_factory=dict)
    aliases: dict[int, str] = field(default_factory=dict)

    def _repr_html_(self) -> str:
        from .display import plan_html     # the figure is for notebooks only
        return plan_html(self)

    @property
    def names_of_outputs(self) -> list[str]:
        """Each output's name: the graph's, else ``output_K``."""
        return list(self.output_names) or [f"output_{k}" for k in range(len(self.outputs))]

    def to_json(self) -> dict:
        return {"inputs": [[n, list(t.shape), t.dtype] for n, t in self.inputs],
                "slots": [s.to_json() for s in self.slots],
                "steps": [[k, a] for k, a in self.steps],
                "outputs": self.outputs, "tuple_output": self.tuple_output,
                "checks": [list(c) for c in self.checks],
                "offsets": [[k, v] for k, v in sorted(self.offsets.items())],
                "arena_bytes": self.arena_bytes, "output_names": list(self.output_names)}

    @staticmethod
    def from_json(d: dict) -> "Plan":
        """Parse a plan; raise ArtifactError (naming ``plan.json``) if it is malformed."""
        try:
            return Plan([(_str(n), TensorType(parse_shape(s), parse_dtype(dt)))
                         for n, s, dt in d["inputs"]],
                        [Slot.from_json(s) for s in d["slots"]],
                        [(_str(k), [_int(x) for x in a]) for k, a in d["steps"]],
                        [_int(x) for x in d["outputs"]], d["tuple_output"] is True,
                        [_check_entry(c) for c in d["checks"]],
                        {_int(k): _int(v) for k, v in d["offsets"]}, _int(d["arena_bytes"]),
                        # artifacts written before outputs had names load with none
                        [_str(n) for n in d.get("output_names", [])])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
            raise ArtifactError(f"plan.json is malformed ({type(e).__name__}: {e}); the artifact "
                                "is damaged: compile the model again") from None

    def root(self, i: int) -> int:
        """The slot that owns the memory of slot ``i`` (follows views)."""
        while self.slots[i].kind == "view":
            i = self.slots[i].ref
        return i


def check_plan(plan: Plan, entries: Mapping[str, Any]) -> None:
    """Check a loaded plan against the kernels' signatures (``entries``: name -> EntryInfo
    with ``params`` and ``num_outputs``), so that no kernel can touch memory outside its
    buffers; raise ArtifactError naming ``plan.json`` and the offending slot or step."""

    def bad(why: str) -> ArtifactError:
        return ArtifactError(f"plan.json is inconsistent: {why}; the artifact is damaged or "
                             "was edited: compile the model again")

    n = len(plan.slots)
    for i, s in enumerate(plan.slots):
        if s.kind not in SLOT_KINDS:
            raise bad(f"slot {i} has the unknown kind {s.kind!r}")
        if s.nbytes > MAX_BYTES:
            raise bad(f"slot {i} has the absurd size {s.shape}")
        if s.kind == "input":
            if not 0 <= s.ref < len(plan.inputs) or plan.inputs[s.ref][1] != TensorType(
                    s.shape, s.dtype):
                raise bad(f"slot {i} is not the type of input {s.ref}")
        elif s.kind == "view":
            # views are planned after the value they view: a reference forward is a cycle
            if not 0 <= s.ref < i:
                raise bad(f"slot {i} is a view of slot {s.ref}, which is not an earlier slot")
            if plan.slots[s.ref].nbytes != s.nbytes or plan.slots[s.ref].dtype != s.dtype:
                raise bad(f"slot {i} views slot {s.ref} of another size or dtype")
    for k, (name, args) in enumerate(plan.steps):
        entry = entries.get(name)
        if entry is None:
            raise bad(f"step {k} calls {name!r}, which is not one of the artifact's kernels")
        params = entry.params
        if len(args) != len(params):
            raise bad(f"step {k} passes {len(args)} buffers to {name!r}, which takes "
                      f"{len(params)}")
        if any(not 0 <= a < n for a in args):
            raise bad(f"step {k} names a slot that does not exist")
        n_in = len(params) - entry.num_outputs
        roots = [plan.root(a) for a in args]
        for j, (a, p) in enumerate(zip(args, params)):
            s = plan.slots[a]
            if storage_dtype(s.dtype) != p.dtype or math.prod(s.shape) != math.prod(p.shape):
                raise bad(f"step {k} passes slot {a} ({s.dtype}{list(s.shape)}) as parameter "
                          f"{p.name!r} of {name!r}, which is {p.dtype}{list(p.shape)}")
            if j >= n_in and (plan.slots[roots[j]].kind != "temp" or roots.count(roots[j]) > 1):
                raise bad(f"step {k} writes {name!r}'s output {p.name!r} into slot {a}, "
                          "which is not an intermediate of its own")
    if not plan.outputs or any(not 0 <= o < n for o in plan.outputs):
        raise bad("an output names a slot that does not exist")
    if plan.output_names and (len(plan.output_names) != len(plan.outputs)
                              or len(set(plan.output_names)) != len(plan.output_names)):
        raise bad(f"the output names {plan.output_names} are not one distinct name per output "
                  f"({len(plan.outputs)})")
    _check_offsets(plan, bad)
    for step, pos, size, _, coord in plan.checks:
        if not (0 <= step < len(plan.steps) and 0 <= pos < len(plan.steps[step][1])
                and size > 0 and plan.slots[plan.steps[step][1][pos]].dtype in ("int32", "int64")):
            raise bad(f"an index check names step {step}, argument {pos}, which is not an "
                      "integer argument of the plan")
        shape = plan.slots[plan.steps[step][1][pos]].shape
        if not (coord == -1 or (shape and 0 <= coord < shape[-1])):
            raise bad(f"an index check of step {step} names coordinate {coord}, which its "
                      f"indices of shape {list(shape)} do not have")


def _check_entry(c) -> tuple:
    # artifacts saved before coordinates existed hold (step, position, n, axis)
    c = [_int(x) for x in c[:5]]
    return tuple(c + [-1] if len(c) == 4 else c)


def _check_offsets(plan: Plan, bad) -> None:
    """Every planned temp lies inside the arena, every temp a step or output uses has its
    place there, and no step writes an output over bytes it
    also reads, except exactly over a same-sized input (an elementwise kernel in place)."""
    if not plan.offsets:
        return
    if not 0 <= plan.arena_bytes <= MAX_BYTES:
        raise bad(f"the arena has the absurd size {plan.arena_bytes}")
    for i, off in plan.offsets.items():
        if not 0 <= i < len(plan.slots) or plan.slots[i].kind != "temp":
            raise bad(f"an arena offset names slot {i}, which is not an intermediate")
        if not 0 <= off or off + plan.slots[i].nbytes > plan.arena_bytes:
            raise bad(f"slot {i} at offset {off} does not fit in the arena of "
                      f"{plan.arena_bytes} bytes")
    used = {plan.root(a) for _, args in plan.steps for a in args} | \
        {plan.root(o) for o in plan.outputs}
    for i in sorted(used):
        if plan.slots[i].kind == "temp" and i not in plan.offsets:
            raise bad(f"slot {i}, an intermediate, has no arena offset (every intermediate "
                      "lives in the arena once memory is planned)")
    for k, (_, args) in enumerate(plan.steps):
        spans = {}
        for a in args:
            r = plan.root(a)
            if r in plan.offsets:
                spans[r] = (plan.offsets[r], plan.offsets[r] + plan.slots[r].nbytes)
        items = sorted(spans.items(), key=lambda kv: kv[1])
        for (a, (lo, hi)), (b, (lo2, hi2)) in zip(items, items[1:]):
            if lo2 < hi and (lo, hi) != (lo2, hi2):
                raise bad(f"step {k} passes slots {a} and {b}, which overlap in the arena")


def make_plan(func: Function, bounds: Mapping[str, tuple] | None = None,
              aliases: Mapping[int, str] | None = None) -> tuple[Plan, dict[int, np.ndarray]]:
    """Assign slots to the values of a legalized graph function; returns the plan and the
    weights by slot. ``bounds``: the ``index_bounds`` of the PrimFuncs, by name;
    ``aliases``: the outputs that update an input (for the planner, :mod:`.aliases`)."""
    slots: list[Slot] = []
    consts: dict[int, np.ndarray] = {}
    where: dict[int, Any] = {}   # node id -> slot index, or a list of them for tuples
    steps, checks, facts = [], [], []

    def new(t: TensorType, kind: str, ref: int = -1) -> int:
        slots.append(Slot(t.shape, t.dtype, kind, ref))
        return len(slots) - 1

    for k, p in enumerate(func.params):
        where[id(p)] = new(p.type, "input", k)
    for n in post_order(func.body):
        if id(n) in where:
            continue
        if isinstance(n, Constant):
            where[id(n)] = s = new(n.type, "const")
            consts[s] = np.ascontiguousarray(n.data)
        elif isinstance(n, Var):
            raise GraphError(f"variable {n.name!r} is not an input of {func.name!r}")
        elif isinstance(n, CallTIR):
            args = [where[id(a)] for a in n.args]
            outs = [new(t, "temp") for t in n.out_types]
            steps.append((n.func, args + outs))
            facts.append(n.attrs)
            checks += [(len(steps) - 1, *b) for b in (bounds or {}).get(n.func, ())]
            where[id(n)] = outs if isinstance(n.type, TupleType) else outs[0]
        elif isinstance(n, Call) and get_op(n.op).is_view:
            where[id(n)] = new(n.type, "view", where[id(n.args[0])])
        elif isinstance(n, Call):
            raise GraphError(f"op call {n.name!r} ({n.op}) was not legalized")
        elif isinstance(n, Tuple):
            where[id(n)] = [where[id(f)] for f in n.fields]
        elif isinstance(n, TupleGetItem):
            where[id(n)] = where[id(n.tuple_value)][n.index]
    out = where[id(func.body)]
    tuple_output = isinstance(out, list)
    outputs = out if tuple_output else [out]
    if any(isinstance(o, list) for o in outputs):
        raise GraphError("nested tuples cannot be returned by a compiled model")
    inputs = [(p.name, p.type) for p in func.params]
    return Plan(inputs, slots, steps, outputs, tuple_output, checks, facts=facts,
                aliases=dict(aliases or {})), consts


def _int(x) -> int:
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"expected an integer, got {x!r}")
    return x


def _str(x) -> str:
    if not isinstance(x, str):
        raise TypeError(f"expected a string, got {x!r}")
    return x


def parse_shape(xs) -> tuple[int, ...]:
    """A shape read from a file: a short list of non-negative ints (else ValueError)."""
    shape = tuple(_int(x) for x in xs)
    if len(shape) > 64 or any(not 0 <= d < MAX_BYTES for d in shape):
        raise ValueError(f"shape {list(shape)[:8]} is not a shape")
    return shape


def parse_dtype(x) -> str:
    """A dtype name read from a file: one of the graph's dtypes (else ValueError)."""
    if x not in GRAPH_DTYPES:
        raise ValueError(f"dtype {x!r} is not one of mlcbook's")
    return x
