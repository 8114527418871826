"""Functions and modules: :class:`PrimFunc` (a loop-level tensor function) and :class:`IRModule`.

A PrimFunc follows destination-passing style, as ``call_tir`` expects: its parameters are
buffers, inputs first and the ``num_outputs`` outputs last; it returns nothing and writes
its outputs in place. Intermediate buffers are allocated by the *root block*, the block
named ``"root"`` that the body of every blocked function is wrapped in (the printer
shows its allocations as ``T.alloc_buffer`` lines at the top of the function).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Mapping

from ..printing import printer
from ..errors import DuplicateNameError, TIRError
from .expr import Buffer, Const
from .stmt import Block, BlockRealize, Stmt, freeze_annotations


@dataclass(frozen=True, eq=False, repr=False)
class PrimFunc:
    """A tensor function in loop IR. Build one with ``mb.te.create_prim_func``, the
    ``@T.prim_func`` script decorator, or directly::

        PrimFunc("add", (A, B, C), body)   # C is the (last) output
    """

    name: str
    params: tuple[Buffer, ...]
    body: Stmt
    num_outputs: int = 1
    attrs: tuple = ()

    __hash__ = object.__hash__

    def __post_init__(self):
        object.__setattr__(self, "params", tuple(self.params))
        object.__setattr__(self, "attrs", freeze_annotations(self.attrs))
        if not 0 <= self.num_outputs <= len(self.params):
            raise TIRError(
                f"function {self.name!r} declares {self.num_outputs} outputs but has only "
                f"{len(self.params)} parameters")
        names = [p.name for p in self.params]
        for n in names:
            if names.count(n) > 1:
                raise DuplicateNameError(
                    f"function {self.name!r} has two parameters named {n!r}; rename one")

    @property
    def inputs(self) -> tuple[Buffer, ...]:
        return self.params[: len(self.params) - self.num_outputs]

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return self.params[len(self.params) - self.num_outputs:]

    @property
    def root_block(self) -> Block | None:
        """The root block holding the function's intermediate buffers, if the body has one."""
        b = self.body
        if isinstance(b, BlockRealize) and b.block.name == "root" and not b.block.iter_vars:
            return b.block
        return None

    def with_body(self, body: Stmt) -> "PrimFunc":
        return replace(self, body=body)

    def script(self) -> str:
        """The function as mlcbook script text (what ``print(func)`` shows)."""
        return printer("tir.func")(self)

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"<PrimFunc {self.name}({', '.join(p.name for p in self.params)})>"

    def _repr_html_(self) -> str:
        return printer("tir.html")(self.script())


def root_block_realize(body: Stmt, alloc_buffers=()) -> BlockRealize:
    """Wrap ``body`` in the root block that owns ``alloc_buffers``."""
    block = Block("root", (), (), (), body, None, tuple(alloc_buffers))
    return BlockRealize((), Const(True, "bool"), block)


@dataclass(frozen=True, eq=False, repr=False)
class IRModule:
    """Named functions: PrimFuncs and, at the graph level, graph functions.

    >>> mod = IRModule({"main": func})
    >>> mod["main"] is func
    True
    """

    functions: Mapping[str, Any] = field(default_factory=dict)

    __hash__ = object.__hash__

    def __post_init__(self):
        object.__setattr__(self, "functions", dict(self.functions))

    @staticmethod
    def from_func(func: PrimFunc) -> "IRModule":
        return IRModule({func.name: func})

    def __getitem__(self, name: str):
        if name not in self.functions:
            raise TIRError(
                f"the module has no function {name!r}; it has: {', '.join(self.functions) or 'none'}")
        return self.functions[name]

    def __contains__(self, name: str) -> bool:
        return name in self.functions

    def __iter__(self) -> Iterator[str]:
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def items(self):
        return self.functions.items()

    def with_function(self, name: str, func) -> "IRModule":
        """A new module with ``name`` bound to ``func`` (added or replaced)."""
        funcs = dict(self.functions)
        funcs[name] = func
        return IRModule(funcs)

    def main(self):
        """The function called ``main``, or the only function of the module."""
        if "main" in self.functions:
            return self.functions["main"]
        if len(self.functions) == 1:
            return next(iter(self.functions.values()))
        raise TIRError(
            f"the module has {len(self.functions)} functions and none is named 'main'; "
            "pick one with mod['name']")

    def script(self) -> str:
        return printer("tir.module")(self)

    def __str__(self) -> str:
        return self.script()

    def __repr__(self) -> str:
        return f"<IRModule {', '.join(self.functions)}>"

    def _repr_html_(self) -> str:
        return printer("tir.html")(self.script())
