"""``Schedule``: a function being transformed step by step, handles to its loops and blocks,
and the decorator that turns a pure function into a recorded, verified schedule primitive.

    >>> sch = Schedule(func)
    >>> i, j, k = sch.get_loops(sch.get_block("C"))
    >>> io, ii = sch.split(i, factors=[None, 32])
    >>> print(sch.trace)
    b0 = sch.get_block("C")
    l1, l2, l3 = sch.get_loops(b0)
    l4, l5 = sch.split(l1, factors=[None, 32])

**Handles.** :class:`BlockRV` finds its block by name (block names are unique in a
function); :class:`LoopRV` finds its loop by the identity of the loop variable, which every
primitive that keeps a loop keeps. A handle to something a later step removed raises
:class:`~mlcbook.schedule.errors.HandleError` naming the step. :class:`ExprRV` is an ``int``
that remembers which sampling step produced it, so a trace can replay it with another value.

**Writing a primitive** (any module of this package)::

    @schedule_primitive("parallel")
    def parallel(ctx: Context, loop: LoopRV) -> None:
        node = ctx.loop(loop)                     # the For; ctx.path(node) its ancestors
        if ...:                                   # a fact forbids it
            ctx.fail(ReduceLoopParallelError, "why ...", "what instead ...", mark=node)
        ctx.replace(node, new_node)               # or ctx.set_func(new_func)

The decorator adds ``Schedule.parallel``; on each call it binds the arguments, checks that
every handle still resolves, runs the function, verifies the new program with
:func:`mlcbook.tir.verify` and that its vectorized loops still compile to vector code
(:func:`.for_kind.check_vector_lanes`), commits it only if all went well, and appends the
instruction (its name, arguments with handles as symbols, outputs, sampling decision) to
``sch.trace``. A primitive returns None, a handle, an ExprRV, or a list of them, which it
makes with ``ctx.loop_rv(var)``, ``ctx.block_rv(name)`` and ``ctx.expr_rv(value)``.
"""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from ..errors import ScheduleError, TIRError
from ..tir.analysis import collect_blocks
from ..tir.expr import Var
from ..tir.function import IRModule, PrimFunc
from ..tir.stmt import Block, BlockRealize, For, Stmt
from ..tir.verify import verify
from . import tree
from .errors import (ArgumentTypeError, HandleError, InvalidResultError, UnsupportedError,
                     schedule_error)
from .trace import Instruction, Trace


# --- handles --------------------------------------------------------------------------------
class BlockRV:
    """A handle to a block, valid for as long as a block of that name exists."""

    __slots__ = ("name", "func_name", "sym")

    def __init__(self, name: str, func_name: str):
        self.name, self.func_name, self.sym = name, func_name, None

    def __repr__(self) -> str:
        return f"BlockRV({self.sym}: {self.name!r})"


class LoopRV:
    """A handle to a loop, valid for as long as a loop over the same variable exists."""

    __slots__ = ("var", "func_name", "sym")

    def __init__(self, var: Var, func_name: str):
        self.var, self.func_name, self.sym = var, func_name, None

    def __repr__(self) -> str:
        return f"LoopRV({self.sym}: {self.var.name})"


class ExprRV(int):
    """An int produced by a sampling step; the trace records where it came from.

    Arithmetic on it gives a plain int, which the trace records as a constant: pass the
    ExprRV itself (``split(i, factors=[v0, v1])``) for a decision change to flow through.
    """

    sym: Optional[str]

    def __new__(cls, value: int):
        obj = super().__new__(cls, value)
        obj.sym = None
        return obj

    def __repr__(self) -> str:
        return f"ExprRV({self.sym}: {int(self)})"


Handle = Union[BlockRV, LoopRV, ExprRV]


def _handles_in(value) -> list:
    if isinstance(value, (BlockRV, LoopRV, ExprRV)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [h for v in value for h in _handles_in(v)]
    return []


# --- the registry of primitives --------------------------------------------------------------
@dataclass(frozen=True)
class Primitive:
    """A registered schedule primitive: its name, function and signature (without ``ctx``)."""

    name: str
    fn: Callable
    signature: inspect.Signature
    sampling: bool


PRIMITIVES: dict[str, Primitive] = {}


def schedule_primitive(name: str, *, sampling: bool = False) -> Callable[[Callable], Callable]:
    """Register ``fn(ctx, ...)`` as the primitive ``name`` and add it to :class:`Schedule`.

    ``sampling=True`` marks a step that makes a random decision (``ctx.decide``), which
    the trace records and can replay or change; its method also takes ``decision=`` to
    force the outcome (the trace prints it so, and ``ctx.decision`` holds it).
    """

    def register(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1:]
        prim = Primitive(name, fn, sig.replace(parameters=params), sampling)
        PRIMITIVES[name] = prim

        if sampling:
            def method(self: Schedule, *args, decision=None, **kwargs):
                return self._apply(prim, args, kwargs, decision)
        else:
            def method(self: Schedule, *args, **kwargs):
                return self._apply(prim, args, kwargs)

        method.__name__ = method.__qualname__ = name
        method.__doc__ = fn.__doc__
        self_param = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        extra = [inspect.Parameter("decision", inspect.Parameter.KEYWORD_ONLY, default=None)]
        method.__signature__ = sig.replace(
            parameters=[self_param] + params + (extra if sampling else []))
        setattr(Schedule, name, method)
        return fn

    return register


# --- the context a primitive runs in ---------------------------------------------------------
class Context:
    """What a primitive sees: the current function, handle resolution, tree helpers, failure."""

    def __init__(self, sch: "Schedule", func_name: str, decision: Any):
        self._sch = sch
        self.func_name = func_name
        self.func: PrimFunc = sch.mod[func_name]
        self.decision = decision          # the recorded decision when a trace is replayed
        self.rng: random.Random = sch._rng
        self._new_handles: list = []
        # what to record instead of an argument the trace cannot store (a lambda -> its text)
        self.recorded_args: dict = {}

    # handles -> IR
    def loop(self, rv: LoopRV) -> For:
        """The For the handle refers to (raises HandleError if a step removed it)."""
        if not isinstance(rv, LoopRV):
            raise ArgumentTypeError(
                f"expected a loop handle (from get_loops, split, fuse), got {_describe(rv)}")
        node = tree.find_loop(self.func.body, rv.var)
        if node is None:
            why = self._sch._removed_loops.get(rv.var)
            if why is not None:
                raise HandleError(
                    f"loop {rv.var.name} was replaced by {why}; use the loops {why} returned, "
                    f"or call sch.get_loops(block) again")
            raise HandleError(f"loop {rv.var.name} is not in function {self.func_name!r}; "
                              "get a fresh handle with sch.get_loops(block)")
        return node

    def block_realize(self, rv: BlockRV) -> BlockRealize:
        if not isinstance(rv, BlockRV):
            raise ArgumentTypeError(
                f"expected a block handle (from get_block), got {_describe(rv)}")
        node = tree.find_block(self.func.body, rv.name)
        if node is None:
            why = self._sch._removed_blocks.get(rv.name)
            if why is not None:
                raise HandleError(f"block {rv.name!r} was removed by {why}; it no longer exists, "
                                  "schedule the block it was merged into instead")
            raise HandleError(f"block {rv.name!r} is not in function {self.func_name!r}")
        return node

    def block(self, rv: BlockRV) -> Block:
        return self.block_realize(rv).block

    def stmt(self, rv: Union[BlockRV, LoopRV]) -> Stmt:
        """The For or BlockRealize behind a loop or block handle."""
        return self.loop(rv) if isinstance(rv, LoopRV) else self.block_realize(rv)

    # tree queries
    def path(self, node: Stmt) -> list[Stmt]:
        """Statements from the function body down to ``node``, both included."""
        p = tree.path_to(self.func.body, node)
        if p is None:
            raise ScheduleError(f"internal: statement not found in function {self.func_name!r}")
        return p

    def loops_above(self, node: Stmt) -> list[For]:
        """Loops between ``node``'s enclosing block and ``node``, outermost first."""
        return tree.loops_between(self.path(node))

    def scope_of(self, node: Stmt) -> BlockRealize:
        """The BlockRealize directly enclosing ``node`` (the root block for top-level loops)."""
        return tree.enclosing_block(self.path(node))

    # changing the program
    def replace(self, old: Stmt, new: Optional[Stmt]) -> None:
        """Replace statement ``old`` (by identity) with ``new``; None removes it."""
        self.set_func(self.func.with_body(tree.replace_stmt(self.func.body, old, new)))

    def set_func(self, func: PrimFunc) -> None:
        self.func = func

    # making outputs
    def loop_rv(self, loop: Union[For, Var]) -> LoopRV:
        rv = LoopRV(loop.loop_var if isinstance(loop, For) else loop, self.func_name)
        self._new_handles.append(rv)
        return rv

    def block_rv(self, block: Union[str, Block, BlockRealize]) -> BlockRV:
        if isinstance(block, BlockRealize):
            block = block.block
        rv = BlockRV(block if isinstance(block, str) else block.name, self.func_name)
        self._new_handles.append(rv)
        return rv

    def expr_rv(self, value: int) -> ExprRV:
        rv = ExprRV(value)
        self._new_handles.append(rv)
        return rv

    def decide(self, decision: Any) -> None:
        """Record the decision a sampling step took (replayed as ``ctx.decision``)."""
        self.decision = decision

    def fail(self, cls: type[ScheduleError], why: str, instead: str, mark=None,
             label: str = "") -> None:
        """Raise ``cls`` with the message: why, what to do instead, the program with ``mark`` marked."""
        raise schedule_error(cls, why, instead, self.func, mark, label)


def _describe(value) -> str:
    if isinstance(value, (BlockRV, LoopRV)):
        return repr(value)
    return f"{type(value).__name__} {value!r:.40}"


# --- the schedule --------------------------------------------------------------------------
class Schedule:
    """A function (or module) being transformed; every step is checked and recorded.

    >>> sch = Schedule(func, seed=0)
    >>> sch.mod["main"]          # the current program
    >>> sch.trace                # the steps so far, printable as Python

    ``Schedule(func)`` puts the function into a module under the name ``"main"`` (as
    TVM does); a module keeps its names and ``func_name`` picks the one to schedule.
    """

    def __init__(self, func_or_mod: Union[PrimFunc, IRModule], *, seed: Optional[int] = None,
                 func_name: Optional[str] = None):
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
    def trace(self) -> Trace:
        """The steps so far (a copy: changing it does not change the schedule)."""
        return Trace(list(self._trace.insts))

    def get(self, rv: Union[BlockRV, LoopRV]):
        """The IR node behind a handle: a For for a loop, a Block for a block."""
        ctx = Context(self, rv.func_name, None)
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

    # --- running a primitive -------------------------------------------------------------
    def _apply(self, prim: Primitive, args: tuple, kwargs: dict, decision: Any = None):
        try:
            bound = prim.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise ArgumentTypeError(f"sch.{prim.name}{prim.signature}: {err}") from None
        bound.apply_defaults()
        handles = [h for v in bound.arguments.values() for h in _handles_in(v)]
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
        ctx = Context(self, func_name, decision)
        old = ctx.func
        for h in handles:
            if not isinstance(h, ExprRV):
                ctx.stmt(h)  # a stale handle fails here, before any work
        outputs = prim.fn(ctx, *bound.args, **bound.kwargs)
        if ctx.func is not old:
            try:
                verify(ctx.func)
            except TIRError as err:
                raise schedule_error(
                    InvalidResultError,
                    f"{prim.name} would produce a malformed program: {err}",
                    "this is a bug in mlcbook's check of this step; please report it with the "
                    "trace (print(sch.trace))", ctx.func) from None
            # a vectorized loop must stay compilable as vector code whatever the step did
            # (imported here: for_kind imports this module)
            from .for_kind import check_vector_lanes
            check_vector_lanes(ctx, prim.name, old)
            self._note_removed(old, ctx.func, prim.name)
            self._mod = self._mod.with_function(func_name, ctx.func)
        out_syms = self._name_outputs(outputs, ctx._new_handles)
        self._trace.insts.append(Instruction(
            prim.name, _encode_args(prim, {**bound.arguments, **ctx.recorded_args}), out_syms,
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


def _encode_args(prim: Primitive, arguments: dict) -> dict:
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


__all__ = ["Schedule", "BlockRV", "LoopRV", "ExprRV", "Context", "schedule_primitive",
           "PRIMITIVES", "Primitive"]
