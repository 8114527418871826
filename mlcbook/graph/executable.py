"""Whole models as native code: ``mb.compile(mod)`` -> :class:`Executable`; ``exe.save`` and
``mb.load`` for a deployable artifact.

    >>> exe = mb.compile(mb.from_onnx("mlp.onnx"), target="llvm")
    >>> y = exe(x)                          # or exe.run({"input": x})
    >>> exe.save("mlp.mlcb")
    >>> mb.load("mlp.mlcb")(x)              # no recompiling: object code, plan and weights

Compiling legalizes every op call to a PrimFunc, gives each the default schedule
(:mod:`mlcbook.graph.default_schedule`), builds them all into one native library, and plans
the run: every value gets a buffer allocated once (weights are kept as given, reshapes are
views of their input), and a run is a list of kernel calls on those buffers.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..codegen.target import Target
from ..errors import ArgumentError, BuildError, ExportError, GraphError
from ..ops.registry import get as get_op, view_ops
from ..ops.types import TensorType, TupleType
from ..runtime.c_export import ExportedModel, export_library
from ..tir.function import IRModule, PrimFunc
from .expr import Call, CallTIR, Constant, Function, Tuple, TupleGetItem, Var, post_order
from .interpret import bind_inputs, main_function

FORMAT_VERSION = 2


def __getattr__(name: str):
    # VIEW_OPS moved into the op registry (Op.is_view); the old name keeps working, with a warning
    if name == "VIEW_OPS":
        warnings.warn("mlcbook.graph.executable.VIEW_OPS is deprecated; use "
                      "mlcbook.ops.view_ops() or mlcbook.ops.get(name).is_view",
                      DeprecationWarning, stacklevel=2)
        return view_ops()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class _Slot:
    """A buffer of the plan: an input, a weight, an intermediate, or a view of another slot."""

    shape: tuple[int, ...]
    dtype: str
    kind: str                 #: "input", "const", "temp" or "view"
    ref: int = -1             #: input index (input) or viewed slot (view)

    @property
    def size_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "kind": self.kind, "ref": self.ref}

    @staticmethod
    def from_json(d: dict) -> "_Slot":
        return _Slot(tuple(d["shape"]), d["dtype"], d["kind"], d["ref"])


@dataclass
class Plan:
    """What a run does: ``steps`` call kernels on slots; ``outputs`` are slots to return."""

    inputs: list[tuple[str, TensorType]]
    slots: list[_Slot]
    steps: list[tuple[str, list[int]]]
    outputs: list[int]
    tuple_output: bool
    #: byte offset of each temp slot in one arena (see mlcbook.graph.memory_plan); empty:
    #: every temp has a buffer of its own
    offsets: dict[int, int] = field(default_factory=dict)
    arena_bytes: int = 0

    def to_json(self) -> dict:
        return {"version": FORMAT_VERSION,
                "inputs": [[n, list(t.shape), t.dtype] for n, t in self.inputs],
                "slots": [s.to_json() for s in self.slots],
                "steps": [[k, a] for k, a in self.steps],
                "outputs": self.outputs, "tuple_output": self.tuple_output,
                "offsets": [[k, v] for k, v in sorted(self.offsets.items())],
                "arena_bytes": self.arena_bytes}

    @staticmethod
    def from_json(d: dict) -> "Plan":
        if d.get("version") != FORMAT_VERSION:
            raise BuildError(f"this artifact has format version {d.get('version')}; this "
                             f"mlcbook reads version {FORMAT_VERSION}: compile the model again")
        return Plan([(n, TensorType(tuple(s), dt)) for n, s, dt in d["inputs"]],
                    [_Slot.from_json(s) for s in d["slots"]],
                    [(k, list(a)) for k, a in d["steps"]], list(d["outputs"]),
                    bool(d["tuple_output"]), {int(k): int(v) for k, v in d.get("offsets", [])},
                    int(d.get("arena_bytes", 0)))


def build_plan(func: Function) -> tuple[Plan, dict[int, np.ndarray]]:
    """Assign slots to the values of a legalized graph function (each temp its own buffer;
    :func:`mlcbook.graph.memory_plan.plan_memory` then places them in one arena)."""
    slots: list[_Slot] = []
    consts: dict[int, np.ndarray] = {}
    where: dict[int, Any] = {}   # node id -> slot index, or a list of them for tuples
    steps = []

    def new(t: TensorType, kind: str, ref: int = -1) -> int:
        slots.append(_Slot(t.shape, t.dtype, kind, ref))
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
    return Plan(inputs, slots, steps, outputs, tuple_output), consts


class Executable:
    """A compiled model: call it like the graph function it came from.

    ``exe(x)``, ``exe(input=x)`` or ``exe.run({"input": x})``; inputs are checked by name,
    shape and dtype. Returns one array, or a tuple for models with several outputs.
    """

    def __init__(self, plan: Plan, kernels: Mapping[str, Any], consts: Mapping[int, np.ndarray],
                 stats: dict | None = None):
        self.plan = plan
        self.kernels = dict(kernels)
        self.stats = dict(stats or {})
        params = tuple(Var(n, t) for n, t in plan.inputs)
        self._sig = Function(params, Tuple(params), "main")  # for checking inputs
        missing = sorted({k for k, _ in plan.steps} - set(self.kernels))
        if missing:
            raise BuildError(f"the plan calls kernels {', '.join(missing)} that the library "
                             "does not have; the artifact is inconsistent")
        self._buffers: list[np.ndarray | None] = [None] * len(plan.slots)
        self._arena = np.empty(plan.arena_bytes, np.uint8) if plan.offsets else None
        for i, s in enumerate(plan.slots):
            if s.kind == "const":
                self._buffers[i] = np.ascontiguousarray(consts[i], dtype=s.dtype)
            elif s.kind == "temp" and i in plan.offsets:
                n = int(np.prod(s.shape, dtype=np.int64)) * np.dtype(s.dtype).itemsize
                off = plan.offsets[i]
                self._buffers[i] = self._arena[off:off + n].view(s.dtype).reshape(s.shape)
            elif s.kind == "temp":
                self._buffers[i] = np.empty(s.shape, s.dtype)
        self._calls = [(self.kernels[k], args) for k, args in plan.steps]
        # pointers of the slots that are the same in every run (weights and temps, and views
        # of them); a run only fills in the slots that are, or view, an input
        roots = [self._root(i) for i in range(len(plan.slots))]
        self._fixed_ptrs = [_address(self._buffers[r]) for r in roots]
        self._input_slots = [(i, plan.slots[r].ref) for i, r in enumerate(roots)
                             if plan.slots[r].kind == "input"]
        self._output_roots = [roots[o] for o in plan.outputs]

    @property
    def input_names(self) -> list[str]:
        return [n for n, _ in self.plan.inputs]

    @property
    def constants(self) -> dict[int, np.ndarray]:
        """The buffers of the plan's constant slots, by slot index (what ``save`` writes)."""
        return {i: b for i, b in enumerate(self._buffers) if self.plan.slots[i].kind == "const"}

    def _root(self, i: int) -> int:
        while self.plan.slots[i].kind == "view":
            i = self.plan.slots[i].ref
        return i

    def __call__(self, *args, **kwargs):
        return self._execute(bind_inputs(self._sig, args, kwargs))

    def run(self, inputs: Mapping[str, np.ndarray] | None = None):
        """Run on ``inputs``, a mapping from input names to arrays."""
        if inputs is not None and not isinstance(inputs, Mapping):
            raise ArgumentError("exe.run takes a dict {input name: array}; call exe(x) to pass "
                                "arrays by position")
        return self._execute(bind_inputs(self._sig, [], dict(inputs or {})))

    def profile(self, *args, repeat: int = 20, **kwargs) -> list[tuple[str, float]]:
        """Median seconds of each kernel call of a run on these inputs, in plan order."""
        arrays = bind_inputs(self._sig, args, kwargs)
        times = [[] for _ in self._calls]
        for _ in range(repeat):
            self._execute(arrays, times)
        return [(k, float(np.median(t))) for (k, _), t in zip(self.plan.steps, times)]

    def _execute(self, arrays: list[np.ndarray], times: list | None = None):
        arrays = [np.ascontiguousarray(a) for a in arrays]
        ptr = list(self._fixed_ptrs)
        for slot, k in self._input_slots:
            ptr[slot] = _address(arrays[k])
        if times is None:
            for kernel, args in self._calls:
                kernel.run_unchecked([ptr[a] for a in args])
        else:
            for (kernel, args), t in zip(self._calls, times):
                t0 = time.perf_counter()
                kernel.run_unchecked([ptr[a] for a in args])
                t.append(time.perf_counter() - t0)
        outs = []
        for o, root in zip(self.plan.outputs, self._output_roots):
            src = self._buffers[root] if self.plan.slots[root].kind != "input" \
                else arrays[self.plan.slots[root].ref]
            outs.append(np.array(src).reshape(self.plan.slots[o].shape))
        return tuple(outs) if self.plan.tuple_output else outs[0]

    # --- artifact ------------------------------------------------------------------------------
    def save(self, path) -> str:
        """Write the deployable artifact: native object code, the plan and the weights."""
        if not self.kernels:
            obj = b""
        else:
            with tempfile.TemporaryDirectory() as d:
                f = os.path.join(d, "kernels.o")
                next(iter(self.kernels.values())).export_object(f)
                with open(f, "rb") as fh:
                    obj = fh.read()
        weights = io.BytesIO()
        np.savez(weights, **{str(i): b for i, b in self.constants.items()})
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("plan.json", json.dumps(self.plan.to_json()))
            z.writestr("kernels.o", obj)
            z.writestr("weights.npz", weights.getvalue())
            z.writestr("kernels.json", json.dumps(sorted(self.kernels)))
        return str(path)

    def export(self, out_dir, name: str = "model", cc: str = "cc") -> ExportedModel:
        """Write ``NAME.h``, ``libNAME.so`` and ``libNAME.a`` into ``out_dir``: the model as
        a C library that needs only libc, libm and pthreads (:mod:`mlcbook.runtime.c_export`).

        >>> exe.export("out", name="tiny").header        # doctest: +SKIP
        PosixPath('out/tiny.h')
        """
        libs = list(self.kernels.values())
        try:
            obj = libs[0].object_code() if libs else b""
        except BuildError:
            raise ExportError("this executable was loaded from a file and keeps no object "
                              "code; Instead: export the result of mb.compile(...)") from None
        target = (libs[0].target if libs else None) or Target()
        consts = {i: b for i, b in enumerate(self._buffers) if self.plan.slots[i].kind == "const"}
        entries = {k: v.entry for k, v in self.kernels.items()}
        return export_library(out_dir, name, self.plan, entries, obj, consts, target, cc=cc)

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {t}" for n, t in self.plan.inputs)
        return f"<Executable ({ins}): {len(self.plan.steps)} kernel calls, " \
               f"{len(self.kernels)} kernels>"


def _address(a: np.ndarray | None) -> int:
    return a.__array_interface__["data"][0] if a is not None and a.size else 0


def load(path) -> Executable:
    """Load an artifact written by :meth:`Executable.save` (no compiler needed)."""
    from ..runtime import load_kernel
    path = os.fspath(path)
    if not os.path.exists(path):
        raise BuildError(f"no compiled model at {path!r}")
    try:
        with zipfile.ZipFile(path) as z:
            plan = Plan.from_json(json.loads(z.read("plan.json")))
            obj = z.read("kernels.o")
            names = json.loads(z.read("kernels.json"))
            with np.load(io.BytesIO(z.read("weights.npz"))) as w:
                consts = {int(k): w[k] for k in w.files}
    except (zipfile.BadZipFile, KeyError, ValueError) as e:
        raise BuildError(f"{path!r} is not an mlcbook compiled model ({e}); write one with "
                         "exe.save(path)") from None
    kernels = {}
    if obj:
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "kernels.o")
            with open(f, "wb") as fh:
                fh.write(obj)
            lib = load_kernel(f)
        kernels = {lib.name: lib} if not hasattr(lib, "kernels") else dict(lib.kernels)
    missing = [n for n in names if n not in kernels]
    if missing:
        raise BuildError(f"{path!r} lacks the kernels {', '.join(missing)}")
    return Executable(plan, kernels, consts)


__all__ = ["load", "Executable", "Plan", "build_plan"]
