"""Models with a symbolic batch size: imported once, compiled for each batch size they meet.

``mb.from_onnx`` of a model whose inputs have a symbolic first dimension (and no
``batch_size``) gives a :class:`SymbolicBatchModule`: the model at batch 1, to print, draw
or interpret, which ``specialize(n)`` imports again at batch ``n``. ``mb.compile`` of it
gives a :class:`BatchExecutable`: it compiles the model for a batch size the first time a
call brings inputs of that size (a log line says so, since compiling takes a while), keeps
that executable, and runs later calls of the same size on it.

    >>> mod = mb.from_onnx("mlp.onnx")              # input (N, 784), shown at N = 1
    >>> exe = mb.compile(mod)
    >>> y = exe(np.ones((8, 784), "float32"))       # compiles for batch 8, then runs
    >>> y = exe(np.ones((8, 784), "float32"))       # runs the batch-8 code again
    >>> exe.batch_sizes
    [8]
    >>> exe.specialize(8).save("mlp8.mlcb")          # a saved file has static shapes

A saved artifact or an exported C library has static shapes: ``save`` and ``export`` of a
BatchExecutable raise a :class:`~mlcbook.errors.DynamicShapeError` that says to pick a batch
size with ``specialize(n)`` first.

Its ``inputs`` and ``outputs`` name the batch axis, as onnxruntime's session does:

    >>> exe.inputs
    [TensorInfo(name='input', shape=('N', 784), dtype='float32')]
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import ArgumentError, ArtifactError, DynamicShapeError
from ..tir.function import IRModule
from .run.executable import Executable
from .interpret import main_function
from ..ops.types import TupleType
from .run.signature import TensorInfo, graph_output_names, parse_run_args, symbolic_shape

logger = logging.getLogger(__name__)


@dataclass(frozen=True, eq=False, repr=False)
class SymbolicBatchModule(IRModule):
    """An IRModule whose functions are the model at batch 1, with the means to import it at
    any batch size: ``batch_dim`` is the symbolic dimension's name (``"N"``; ``"?"`` if
    unnamed), ``batch_inputs`` the inputs whose first axis it is, and ``rebuild(n)`` the
    module at batch ``n``.

        >>> mod.specialize(4)["main"].params[0].type.shape
        (4, 784)

    Transforming it (``with_function``, passes) gives a plain IRModule at batch 1.
    """

    batch_dim: str = "N"
    batch_inputs: tuple[str, ...] = ()
    rebuild: Callable[[int], IRModule] | None = None

    def __post_init__(self):
        super().__post_init__()
        if not callable(self.rebuild):
            raise ArgumentError("a SymbolicBatchModule needs rebuild, a function from a batch "
                                f"size to the module at that size; got {self.rebuild!r}")

    def specialize(self, batch_size: int) -> IRModule:
        """The module with the symbolic batch dimension set to ``batch_size``."""
        return self.rebuild(check_batch_size(batch_size, f"the batch size {self.batch_dim!r}"))

    def __repr__(self) -> str:
        return (f"<SymbolicBatchModule {', '.join(self.functions)}: batch {self.batch_dim!r} "
                f"of {', '.join(map(repr, self.batch_inputs))}, shown at 1>")


def check_batch_size(batch_size, what: str = "batch_size") -> int:
    """``batch_size`` as an int, or an ArgumentError naming ``what`` if it is not a
    positive integer."""
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, (int, np.integer)) \
            or batch_size < 1:
        raise ArgumentError(f"{what} must be a positive integer, got {batch_size!r}")
    return int(batch_size)


class BatchExecutable:
    """A compiled model with a symbolic batch size: call it like an :class:`Executable`.

    Each call reads the batch size from its inputs' first axis, compiles the model for it if
    no call had that size before, and runs the executable for it. ``batch_sizes`` lists the
    sizes compiled so far, ``specialize(n)`` returns (compiling if needed) the
    :class:`Executable` for ``n``, which is what to ``save`` or ``export``.

        >>> exe = mb.compile(mb.from_onnx("mlp.onnx"))
        >>> exe(np.ones((2, 784), "float32")).shape
        (2, 10)
        >>> exe
        <BatchExecutable (input: (N, 784) float32): compiled for batch sizes 2>

    Threads may call it at once; a batch size is compiled once, by the first of them.
    """

    def __init__(self, module: SymbolicBatchModule, build: Callable[[int], Executable]):
        self.module = module
        self._build = build
        self._compiled: dict[int, Executable] = {}
        self._lock = threading.Lock()
        func, _ = main_function(module)
        self._inputs = [(p.name, p.type) for p in func.params]
        self._outputs: list[TensorInfo] | None = None

    @property
    def batch_dim(self) -> str:
        return self.module.batch_dim

    @property
    def input_names(self) -> list[str]:
        return [n for n, _ in self._inputs]

    @property
    def inputs(self) -> list[TensorInfo]:
        """Each input's name, shape and dtype (onnxruntime: ``get_inputs()``), the batch axis
        named ``batch_dim``: ``('N', 784)``."""
        return [TensorInfo(n, symbolic_shape(t.shape, (2, *t.shape[1:]), self.batch_dim)
                           if n in self.module.batch_inputs else tuple(t.shape), str(t.dtype))
                for n, t in self._inputs]

    @property
    def outputs(self) -> list[TensorInfo]:
        """Each output's name, shape and dtype (``get_outputs()``), every axis that follows
        the batch size named after ``batch_dim``: the model imported at batch 2 (once, on
        first use) shows which do."""
        if self._outputs is None:
            at_1 = _result_types(self.module)
            at_2 = _result_types(self.module.specialize(2))
            names = graph_output_names(main_function(self.module)[0], len(at_1)) or \
                [f"output_{k}" for k in range(len(at_1))]
            self._outputs = [TensorInfo(n, symbolic_shape(a.shape, b.shape, self.batch_dim),
                                        str(a.dtype)) for n, a, b in zip(names, at_1, at_2)]
        return list(self._outputs)

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.outputs]

    @property
    def batch_sizes(self) -> list[int]:
        """The batch sizes compiled so far, in increasing order."""
        return sorted(self._compiled)

    @property
    def stats(self) -> dict[str, Any]:
        """``batch_dim``, the compiled ``batch_sizes``, and each one's executable's stats
        (``by_batch_size[n]``)."""
        return {"batch_dim": self.batch_dim, "batch_sizes": self.batch_sizes,
                "by_batch_size": {n: dict(e.stats) for n, e in sorted(self._compiled.items())}}

    def specialize(self, batch_size: int) -> Executable:
        """The executable for ``batch_size``, compiled now unless a call or an earlier
        ``specialize`` compiled it already."""
        n = check_batch_size(batch_size, f"the batch size {self.batch_dim!r}")
        exe = self._compiled.get(n)
        if exe is None:
            with self._lock:
                exe = self._compiled.get(n)
                if exe is None:
                    logger.warning("compiling the model for batch size %s = %d (the first use "
                                   "of this size; later calls reuse it)", self.batch_dim, n)
                    exe = self._compiled[n] = self._build(n)
        return exe

    def _batch_of(self, args: tuple, kwargs: Mapping[str, Any]) -> int:
        given = dict(zip(self.input_names, args))
        given.update(kwargs)
        sizes = {}
        for name in self.module.batch_inputs:
            if name not in given:
                continue
            shape = np.shape(given[name])
            if not shape:
                raise ArgumentError(f"input {name!r} is a scalar, but its first axis is the "
                                    f"batch size {self.batch_dim!r}; pass an array of batches")
            sizes[name] = shape[0]
        if not sizes:
            raise ArgumentError(f"missing input {self.module.batch_inputs[0]!r}: its first axis "
                                f"sets the batch size {self.batch_dim!r} to compile for")
        if len(set(sizes.values())) > 1:
            listing = ", ".join(f"{k!r} has {v}" for k, v in sizes.items())
            raise ArgumentError(f"the inputs disagree on the batch size {self.batch_dim!r} "
                                f"(their first axis): {listing}; pass the same number of "
                                "batches to every input")
        return next(iter(sizes.values()))

    def __call__(self, *args, **kwargs):
        return self.specialize(self._batch_of(args, kwargs))(*args, **kwargs)

    def run(self, inputs=None, feeds: Mapping[str, np.ndarray] | None = None):
        """Run on ``inputs``, a mapping from input names to arrays; or onnxruntime's form
        ``run(output_names, feeds)`` (see :meth:`Executable.run`)."""
        ort_form, names, feeds = parse_run_args(inputs, feeds)
        feeds = dict(feeds or {})
        exe = self.specialize(self._batch_of((), feeds))
        return exe.run(names, feeds) if ort_form else exe.run(feeds)

    def profile(self, *args, repeat: int = 20, **kwargs) -> list[tuple[str, float]]:
        """Median seconds of each kernel call of a run on these inputs, in plan order."""
        return self.specialize(self._batch_of(args, kwargs)).profile(*args, repeat=repeat,
                                                                    **kwargs)

    def save(self, path) -> str:
        raise DynamicShapeError(self._static_only("a saved model",
                                                  f"exe.specialize(8).save({str(path)!r})"))

    def export(self, out_dir, name: str = "model", cc: str = "cc"):
        raise DynamicShapeError(self._static_only(
            "an exported model", f"exe.specialize(8).export({str(out_dir)!r}, name={name!r})"))

    def _static_only(self, what: str, example: str) -> str:
        compiled = f" (compiled so far: {', '.join(map(str, self.batch_sizes))})" \
            if self._compiled else ""
        return (f"this executable has the symbolic batch size {self.batch_dim!r}, and "
                f"{what} has static shapes. Instead: pick a batch size{compiled}, e.g. "
                f"{example}, or import with mb.from_onnx(..., batch_size=8)")

    def __reduce_ex__(self, protocol):
        raise ArtifactError("an Executable holds native code and cannot be pickled or copied; "
                            "Instead: exe.specialize(n).save(path) writes one batch size to a "
                            "file and mb.load(path) reads it back")

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {_shape_with(self.batch_dim, t.shape)} {t.dtype}"
                        if n in self.module.batch_inputs else f"{n}: {t}"
                        for n, t in self._inputs)
        done = ", ".join(map(str, self.batch_sizes)) or "none yet"
        return f"<BatchExecutable ({ins}): compiled for batch sizes {done}>"


def _result_types(mod) -> list:
    """The tensor types of the main function's results, in order."""
    ret = main_function(mod)[0].ret_type
    return list(ret.fields) if isinstance(ret, TupleType) else [ret]


def _shape_with(batch_dim: str, shape: tuple) -> str:
    dims = [batch_dim, *map(str, shape[1:])]
    return f"({', '.join(dims)}{',' if len(dims) == 1 else ''})"


__all__ = ["BatchExecutable", "SymbolicBatchModule", "check_batch_size"]
