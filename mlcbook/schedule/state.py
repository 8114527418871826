"""``Schedule``: a function being transformed step by step, and ``Trace``, the steps so far.

    >>> sch = Schedule(func)
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> io, ii = sch.split(i, factors=[None, 32])
    >>> print(sch.trace)
    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    l4, l5 = sch.split(l1, factors=[None, 32])
    >>> new = sch.trace.apply(func)                       # the same program again
    >>> Trace.from_json(sch.trace.as_json())              # through JSON
    >>> sch.trace.with_decision(2, [4, 32]).apply(func)   # the same steps, another tile

Every step is a primitive (a function of a :class:`~.context.Context`, registered in
:mod:`.registry`, implemented in a module of its family). Its method on
:class:`Schedule` binds the arguments to the primitive's signature, checks that every
handle still resolves, runs the primitive, checks the result (:func:`.postconditions.check_step`:
well formed, vectorized loops still vector code), commits it only if all went well, and
appends the :class:`~.instruction.Instruction` (name, arguments with handles as symbols,
outputs, sampling decision) to ``sch.trace``. A primitive returns None, a handle, an
ExprRV, or a list of them (see :mod:`.handles`).
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, TypeVar, Union

from ..errors import ScheduleError
from ..tir.analysis import collect_blocks
from ..tir.expr import Var
from ..tir.function import IRModule, PrimFunc
from . import tree
# the modules of the primitives, imported for their registration (the methods below run them)
from . import (blockize, cache, compute_at, for_kind, inline, layout, loops,  # noqa: F401
               padding, queries, reduction, sampling, tensorize)
from .context import Context
from .errors import ArgumentTypeError, HandleError, TraceError, UnsupportedError
from .handles import BlockRV, ExprRV, Handle, LoopRV, handles_in
from .instruction import Instruction, encode_args
from .postconditions import check_step
from .registry import PRIMITIVES, Primitive, schedule_primitive

_VERSION = 1


M = TypeVar("M", bound=Callable)


def _primitive(method: M) -> M:
    """Make a written-out method run the registered primitive of its name (see the module
    docstring); the method's signature is the primitive's, plus ``decision=`` for a
    sampling step, and a test keeps the two equal."""
    name = method.__name__

    @functools.wraps(method)
    def run(self: "Schedule", *args, **kwargs):
        return self._call(PRIMITIVES[name], args, kwargs)

    return run  # type: ignore[return-value]


class Schedule:
    """A function (or module) being transformed; every step is checked and recorded.

    >>> sch = Schedule(func, seed=0)
    >>> sch.mod["main"]          # the current program
    >>> sch.trace                # the steps so far, printable as Python

    ``checks=False`` skips the checks that a step is legal (dependences, vector lanes, a
    well-formed result): for a search that tries many candidates and replays only the one
    it picks in a checked schedule (``trace.apply``), which refuses it if it is illegal.

    ``Schedule(func)`` puts the function into a module under the name ``"main"`` (as
    TVM does); a module keeps its names and ``func_name`` picks the one to schedule.
    Each primitive method below runs the function of the same name in the module named
    in its docstring, which documents it in full.
    """

    def __init__(self, func_or_mod: Union[PrimFunc, IRModule], *, seed: Optional[int] = None,
                 func_name: Optional[str] = None, checks: bool = True):
        if isinstance(func_or_mod, PrimFunc):
            mod = IRModule({"main": func_or_mod})
        elif isinstance(func_or_mod, IRModule):
            mod = func_or_mod
        else:
            raise ArgumentTypeError(
                f"Schedule needs a PrimFunc or an IRModule, got {type(func_or_mod).__name__}")
        if func_name is None:
            prims = [n for n, f in mod.items() if isinstance(f, PrimFunc)]
            if "main" in prims or len(prims) != 1:
                func_name = "main"
            else:
                func_name = prims[0]
        if func_name not in mod or not isinstance(mod[func_name], PrimFunc):
            raise ArgumentTypeError(f"the module has no PrimFunc {func_name!r}; pass func_name=...")
        for name, f in mod.items():
            if isinstance(f, PrimFunc) and f.root_block is None:
                raise UnsupportedError(
                    f"function {name!r} has no root block, so it has no blocks to schedule; "
                    "build it with mb.te.create_prim_func or the script dialect (T.block)")
        self._mod = mod
        self._func_name = func_name
        self.checks = checks
        self._trace = Trace()
        self._handles: dict[str, Handle] = {}
        self._counter = 0
        self.seed = seed if seed is not None else random.randrange(2**31)
        self._rng = random.Random(self.seed)
        self._removed_loops: dict[Var, str] = {}
        self._removed_blocks: dict[str, str] = {}

    # --- state ---------------------------------------------------------------------------
    @property
    def mod(self) -> IRModule:
        """The current module."""
        return self._mod

    @property
    def func(self) -> PrimFunc:
        """The function being scheduled (``mod[func_name]``)."""
        return self._mod[self._func_name]

    @property
    def func_name(self) -> str:
        return self._func_name

    @property
    def trace(self) -> "Trace":
        """The steps so far (a copy: changing it does not change the schedule)."""
        return Trace(list(self._trace.insts))

    def get(self, rv: Union[BlockRV, LoopRV]):
        """The IR node behind a handle: a For for a loop, a Block for a block."""
        ctx = self._context(rv.func_name, None)
        return ctx.loop(rv) if isinstance(rv, LoopRV) else ctx.block(rv)

    def copy(self) -> "Schedule":
        """An independent schedule with the same program, trace, handles and random state."""
        new = object.__new__(Schedule)
        new.__dict__.update(self.__dict__)
        new._trace = Trace(list(self._trace.insts))
        new._handles = dict(self._handles)
        new._rng = random.Random()
        new._rng.setstate(self._rng.getstate())
        new._removed_loops = dict(self._removed_loops)
        new._removed_blocks = dict(self._removed_blocks)
        return new

    def show(self) -> None:
        """Print the function being scheduled."""
        print(self.func.script())

    def __str__(self) -> str:
        return self.func.script()

    def _repr_html_(self) -> str:
        return self.func._repr_html_()

    def __repr__(self) -> str:
        return f"<Schedule of {self._func_name!r}, {len(self._trace)} steps>"

    def __getattr__(self, name: str):
        # a primitive registered outside the library, which has no written-out method
        prim = PRIMITIVES.get(name)
        if prim is None or name.startswith("__"):
            raise AttributeError(f"'Schedule' object has no attribute {name!r}")
        return lambda *args, **kwargs: self._call(prim, args, kwargs)

    # --- queries (:mod:`.queries`) ---------------------------------------------------------
    @_primitive
    def get_block(self, name: str, func_name: Optional[str] = None) -> BlockRV:
        """The block called ``name``: ``sch.get_block("C")`` (:func:`.queries.get_block`)."""

    @_primitive
    def get_loops(self, block: BlockRV) -> list[LoopRV]:
        """The loops around ``block``, outermost first (:func:`.queries.get_loops`)."""

    @_primitive
    def get_child_blocks(self, block_or_loop: Union[BlockRV, LoopRV]) -> list[BlockRV]:
        """The blocks directly inside a block or loop (:func:`.queries.get_child_blocks`)."""

    @_primitive
    def get_producers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks that write what ``block`` reads (:func:`.queries.get_producers`)."""

    @_primitive
    def get_consumers(self, block: BlockRV) -> list[BlockRV]:
        """The blocks that read what ``block`` writes (:func:`.queries.get_consumers`)."""

    # --- loops (:mod:`.loops`) -----------------------------------------------------------
    @_primitive
    def split(self, loop: LoopRV, factors: list) -> list[LoopRV]:
        """Split ``loop`` into nested loops of the given extents (:func:`.loops.split`)."""

    @_primitive
    def fuse(self, *loops: LoopRV) -> LoopRV:
        """Fuse perfectly nested loops into one (:func:`.loops.fuse`)."""

    @_primitive
    def reorder(self, *loops: LoopRV) -> None:
        """Put loops of one nest in the given order (:func:`.loops.reorder`)."""

    # --- how loops run (:mod:`.for_kind`) --------------------------------------------------
    @_primitive
    def parallel(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` on threads (:func:`.for_kind.parallel`)."""

    @_primitive
    def vectorize(self, loop: LoopRV) -> None:
        """Run the iterations of ``loop`` as SIMD lanes (:func:`.for_kind.vectorize`)."""

    @_primitive
    def unroll(self, loop: LoopRV) -> None:
        """Copy the body of ``loop`` once per iteration (:func:`.for_kind.unroll`)."""

    @_primitive
    def annotate(self, block_or_loop: Union[BlockRV, LoopRV], ann_key: str,
                 ann_val: Any) -> None:
        """Attach ``ann_key = ann_val`` to a loop or block (:func:`.for_kind.annotate`)."""

    @_primitive
    def unannotate(self, block_or_loop: Union[BlockRV, LoopRV], ann_key: str) -> None:
        """Remove an annotation from a loop or block (:func:`.for_kind.unannotate`)."""

    # --- moving blocks (:mod:`.compute_at`, :mod:`.inline`) -----------------------------------
    @_primitive
    def compute_at(self, block: BlockRV, loop: LoopRV, preserve_unit_loops: bool = False) -> None:
        """Compute producer ``block`` inside ``loop`` (:func:`.compute_at.compute_at`)."""

    @_primitive
    def reverse_compute_at(self, block: BlockRV, loop: LoopRV,
                           preserve_unit_loops: bool = False) -> None:
        """Compute consumer ``block`` inside its producer's ``loop``
        (:func:`.compute_at.reverse_compute_at`)."""

    @_primitive
    def compute_inline(self, block: BlockRV) -> None:
        """Substitute an elementwise block into its readers (:func:`.inline.compute_inline`)."""

    @_primitive
    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Fold an elementwise consumer into its producer
        (:func:`.inline.reverse_compute_inline`)."""

    # --- sampling (:mod:`.sampling`) -------------------------------------------------------
    @_primitive
    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 16, *,
                            decision: Optional[list] = None) -> list[ExprRV]:
        """``n`` tile sizes whose product is the loop's extent
        (:func:`.sampling.sample_perfect_tile`)."""

    @_primitive
    def sample_categorical(self, candidates: list, probs: list, *,
                           decision: Optional[int] = None) -> ExprRV:
        """One of ``candidates``, drawn with ``probs`` (:func:`.sampling.sample_categorical`)."""

    # --- buffers (:mod:`.cache`, :mod:`.layout`, :mod:`.padding`) ------------------------------
    @_primitive
    def cache_read(self, block: BlockRV, read_buffer_index: Union[int, str], scope: str,
                   consumer_blocks: Optional[list] = None) -> BlockRV:
        """Read a buffer through a copy in ``scope`` (:func:`.cache.cache_read`)."""

    @_primitive
    def cache_write(self, block: BlockRV, write_buffer_index: Union[int, str],
                    scope: str) -> BlockRV:
        """Write a buffer through a copy in ``scope`` (:func:`.cache.cache_write`)."""

    @_primitive
    def transform_layout(self, block: BlockRV, buffer, index_map) -> None:
        """Lay out a buffer by an index map (:func:`.layout.transform_layout`)."""

    @_primitive
    def pad_einsum(self, block: BlockRV, padding: list) -> None:
        """Round an einsum block's extents up to multiples (:func:`.padding.pad_einsum`)."""

    # --- reductions and blocks (:mod:`.reduction`, :mod:`.blockize`) ---------------------------
    @_primitive
    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Move a block's init into its own block before ``loop``
        (:func:`.reduction.decompose_reduction`)."""

    @_primitive
    def rfactor(self, loop: LoopRV, factor_axis: int = 0) -> BlockRV:
        """Reduce along ``loop`` in a separate block first (:func:`.reduction.rfactor`)."""

    @_primitive
    def blockize(self, loop: LoopRV) -> BlockRV:
        """Wrap ``loop`` and its block in an outer block (:func:`.blockize.blockize`)."""

    @_primitive
    def tensorize(self, block_or_loop: Union[BlockRV, LoopRV], intrin: str) -> BlockRV:
        """Compute a block (or the loops from ``loop`` down, blockized first) with a tensor
        intrinsic (:func:`.tensorize.tensorize`)."""

    # --- running a primitive -------------------------------------------------------------
    def _context(self, func_name: str, decision: Any) -> Context:
        return Context(func_name, self._mod[func_name], rng=self._rng,
                       removed_loops=self._removed_loops, removed_blocks=self._removed_blocks,
                       decision=decision, checks=self.checks)

    def _call(self, prim: Primitive, args: tuple, kwargs: dict):
        decision = kwargs.pop("decision", None) if prim.sampling else None
        return self._apply(prim, args, kwargs, decision)

    def _apply(self, prim: Primitive, args: tuple, kwargs: dict, decision: Any = None):
        try:
            bound = prim.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise ArgumentTypeError(f"sch.{prim.name}{prim.signature}: {err}") from None
        bound.apply_defaults()
        handles = [h for v in bound.arguments.values() for h in handles_in(v)]
        for h in handles:
            if h.sym is None or self._handles.get(h.sym) is not h:
                raise HandleError(
                    f"{h!r} was not made by this schedule (nor by the one it was copied "
                    "from before it was made); get handles from this schedule")
        func_names = {h.func_name for h in handles if not isinstance(h, ExprRV)}
        explicit = bound.arguments.get("func_name")
        if explicit is not None:
            func_names.add(explicit)
        if len(func_names) > 1:
            raise ArgumentTypeError(
                f"{prim.name} got handles from different functions {sorted(func_names)}; "
                "a step works inside one function")
        func_name = func_names.pop() if func_names else self._func_name
        ctx = self._context(func_name, decision)
        old = ctx.func
        for h in handles:
            if not isinstance(h, ExprRV):
                ctx.stmt(h)  # a stale handle fails here, before any work
        outputs = prim.fn(ctx, *bound.args, **bound.kwargs)
        if ctx.func is not old:
            if self.checks:
                check_step(ctx, prim.name, old)
            self._note_removed(old, ctx.func, prim.name)
            self._mod = self._mod.with_function(func_name, ctx.func)
        out_syms = self._name_outputs(outputs, ctx.new_handles)
        self._trace.insts.append(Instruction(
            prim.name, encode_args(prim, {**bound.arguments, **ctx.recorded_args}), out_syms,
            ctx.decision if prim.sampling else None))
        return outputs

    def _name_outputs(self, outputs, made: list):
        made_ids = {id(h) for h in made}

        def name(h):
            if id(h) not in made_ids:
                raise ScheduleError("internal: a primitive returned a handle it did not make")
            prefix = "b" if isinstance(h, BlockRV) else "l" if isinstance(h, LoopRV) else "v"
            h.sym = f"{prefix}{self._counter}"
            self._counter += 1
            self._handles[h.sym] = h
            return h.sym

        if outputs is None:
            return None
        if isinstance(outputs, list):
            return [name(h) for h in outputs]
        return name(outputs)

    def _note_removed(self, old: PrimFunc, new: PrimFunc, step: str) -> None:
        new_vars = {s.loop_var for s in tree.loops_under(new.body)}
        for s in tree.loops_under(old.body):
            if s.loop_var not in new_vars:
                self._removed_loops[s.loop_var] = step
        new_blocks = {b.block.name for b in collect_blocks(new.body)}
        for b in collect_blocks(old.body):
            if b.block.name not in new_blocks:
                self._removed_blocks[b.block.name] = step
        for name in new_blocks:
            self._removed_blocks.pop(name, None)


@dataclass
class Trace:
    """The ordered steps of a schedule (``sch.trace`` returns a copy): printable as Python,
    storable as JSON, replayable onto the program it started from, with a sampling
    decision changed (:meth:`with_decision`) if wanted."""

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
        sch = Schedule(func_or_mod, seed=seed, func_name=func_name)
        self.apply_to_schedule(sch)
        return sch

    def apply_to_schedule(self, sch) -> None:
        """Replay the steps onto an existing schedule (handles are matched by symbol)."""
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


__all__ = ["Schedule", "Trace", "BlockRV", "LoopRV", "ExprRV", "Context", "Instruction",
           "schedule_primitive", "PRIMITIVES", "Primitive"]
