"""Whole models as native code: ``mb.compile(mod)`` -> :class:`Executable`; ``exe.save`` and
``mb.load`` for a deployable artifact.

    >>> exe = mb.compile(mb.from_onnx("mlp.onnx"), target="llvm")
    >>> y = exe(x)                          # or exe.run({"input": x})
    >>> exe.save("mlp.mlcb")
    >>> mb.load("mlp.mlcb")(x)              # no recompiling: object code, plan and weights

``mb.compile`` (:mod:`mlcbook.graph.compile`) makes one: a plan of kernel calls on slots
(:mod:`mlcbook.graph.memory.plan`), whose intermediates share one arena when memory is
planned (:mod:`mlcbook.graph.memory.memory_plan`), weights kept as given and reshapes views of
their input.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from typing import Any, Mapping

import numpy as np

from ...codegen.target import Target
from ...errors import ArgumentError, ArtifactError, BuildError, ExportError
from ...paths import output_file, output_folder
from ...ops.declare import check_indices
from ...runtime.c_export import ExportedModel, export_library
from ...runtime.kernel import allocation_failed
from ...runtime.native_pool import native_pool
from ...runtime.pages import HUGE_AT_LEAST, huge_copy, huge_empty
from ...runtime.plan_runner import plan_runner
from ...runtime.thread_pool import launcher_address
from ...tir.functor import post_order_visit
from ...tir.stmt import For
from ..expr import Function, Tuple, Var
from ..interpret import bind_inputs
from ..memory.plan import Plan
from .signature import (TensorInfo, executable_html, input_infos, output_infos, parse_run_args,
                        select_outputs)


def _on_huge_pages(consts: dict) -> dict:
    """The constants copied into one block on huge pages (when they are big enough to be
    worth 2 MiB pages): like the arena's, their place in physical memory then does not
    depend on the process. ResNet-18 at 2 threads on Zen 5, six processes each: 0.83-0.85x
    onnxruntime's latency (one process 1.01x), against 0.86-0.91x with two at 1.07x on 4 KiB
    pages."""
    if sum(a.nbytes for a in consts.values()) < HUGE_AT_LEAST:
        return consts
    keys = sorted(consts)
    return dict(zip(keys, huge_copy([consts[k] for k in keys])))


class Executable:
    """A compiled model: call it like the graph function it came from.

    ``exe(x)``, ``exe(input=x)`` or ``exe.run({"input": x})``; inputs are checked by name,
    shape and dtype (other byte orders are converted). Returns one array, or a tuple for
    models with several outputs; the arrays are the caller's own.

    Threads: one executable may be called from several threads at once and every call
    returns what a call alone would. Each thread gets its own intermediate buffers at its
    first call (weights are shared, read-only), so memory for intermediates grows with the
    number of calling threads; the native calls themselves run without the GIL.
    """

    def __init__(self, plan: Plan, kernels: Mapping[str, Any], consts: Mapping[int, np.ndarray],
                 stats: dict | None = None):
        self.plan = plan
        self.kernels = dict(kernels)
        self.stats = dict(stats or {})
        #: sha256 of the artifact file this executable was last saved to or loaded from
        self.artifact_sha256: str | None = None
        params = tuple(Var(n, t) for n, t in plan.inputs)
        self._sig = Function(params, Tuple(params), "main")  # for checking inputs
        missing = sorted({k for k, _ in plan.steps} - set(self.kernels))
        if missing:
            raise BuildError(f"the plan calls kernels {', '.join(missing)} that the library "
                             "does not have; the artifact is inconsistent")
        self._consts = _on_huge_pages({i: np.ascontiguousarray(consts[i], dtype=s.dtype)
                                       for i, s in enumerate(plan.slots) if s.kind == "const"})
        checks: dict[int, list] = {}
        for step, pos, n, axis, coord in plan.checks:
            # (the kernel's name, after its op, names the op in the error)
            checks.setdefault(step, []).append((plan.steps[step][1][pos], n, axis, coord,
                                                plan.steps[step][0]))
        self._calls = [(self.kernels[k], args, checks.get(s, ()))
                       for s, (k, args) in enumerate(plan.steps)]
        self._roots = [plan.root(i) for i in range(len(plan.slots))]
        # a run fills in only the slots that are, or view, an input
        self._input_slots = [(i, plan.slots[r].ref) for i, r in enumerate(self._roots)
                             if plan.slots[r].kind == "input"]
        self._output_roots = [self._roots[o] for o in plan.outputs]
        self._fast_inputs = _fast_input_specs(plan.inputs)
        # rousing the pool's workers costs them a spin: only for runs with parallel loops
        parallel = any(_may_run_in_parallel(k) for k in self.kernels.values())
        self._wake = native_pool().wake if parallel else _nothing
        self._local = threading.local()
        #: one native call for the whole plan (:mod:`~mlcbook.runtime.plan_runner`), made on
        #: the first run; a plan with index checks between its calls keeps calling from Python
        self._runner = None if any(checks for _, _, checks in self._calls) else _UNBUILT
        self._arena()   # this thread's buffers now: a model too big fails here, not at a call

    @property
    def input_names(self) -> list[str]:
        return [n for n, _ in self.plan.inputs]

    @property
    def inputs(self) -> list[TensorInfo]:
        """Each input's name, shape and dtype, in call order (onnxruntime: ``get_inputs()``)."""
        return input_infos(self.plan)

    @property
    def outputs(self) -> list[TensorInfo]:
        """Each output's name (the ONNX graph's), shape and dtype (``get_outputs()``)."""
        return output_infos(self.plan)

    @property
    def output_names(self) -> list[str]:
        return self.plan.names_of_outputs

    def _repr_html_(self) -> str:
        return executable_html(self)

    @property
    def constants(self) -> dict[int, np.ndarray]:
        """The buffers of the plan's constant slots, by slot index (what ``save`` writes)."""
        return dict(self._consts)

    def _temp_buffers(self) -> list:
        """Fresh buffers for the temps: views into one arena when memory is planned."""
        plan = self.plan
        if not plan.offsets:
            return [np.empty(s.shape, s.dtype) if s.kind == "temp" else None for s in plan.slots]
        # on huge pages from 1 MiB: where 4 KiB pages land decides a memory-bound kernel's
        # cache conflicts (ResNet's Winograd input transforms: 0.21-0.23 ms in six processes on
        # huge pages, 0.22-0.29 ms on 4 KiB pages, Zen 5)
        arena = huge_empty(plan.arena_bytes)
        out = [None] * len(plan.slots)
        for i, off in plan.offsets.items():
            s = plan.slots[i]
            out[i] = arena[off:off + s.nbytes].view(s.dtype).reshape(s.shape)
        return out

    def _arena(self) -> tuple[list, list[int]]:
        """This thread's buffers of every slot, and their addresses (inputs left 0)."""
        arena = getattr(self._local, "arena", None)
        if arena is None:
            temps = [s for s in self.plan.slots if s.kind == "temp"]
            try:
                own = self._temp_buffers()
                buffers = [self._consts.get(i) if s.kind != "temp" else own[i]
                           for i, s in enumerate(self.plan.slots)]
            except (MemoryError, ValueError):
                need = self.plan.arena_bytes or sum(s.nbytes for s in temps)
                raise ArgumentError(f"the model's intermediate buffers need {need / 2**30:.1f} "
                                    "GiB, more memory than this machine can give; compile it "
                                    "for a smaller batch size or input shape") from None
            arena = self._local.arena = (buffers, [_address(buffers[r]) for r in self._roots])
        return arena

    def _steps(self) -> list:
        """This thread's kernel calls, ready to make: ``(native function, argument list,
        [(position, input number)], index checks)``. The arguments (buffer addresses, then
        the pool's launcher) are fixed except the inputs' addresses, written in by a run."""
        steps = getattr(self._local, "steps", None)
        if steps is None:
            fixed = self._arena()[1]
            inputs = dict(self._input_slots)
            launcher = launcher_address()
            steps = []
            for kernel, args, checks in self._calls:
                ptrs = [fixed[a] for a in args] + [launcher]
                patches = [(pos, inputs[a]) for pos, a in enumerate(args) if a in inputs]
                steps.append((kernel.native_function(), ptrs, patches, checks))
            self._local.steps = steps
        return steps

    def __call__(self, *args, **kwargs):
        if not kwargs and _matches(args, self._fast_inputs):
            return self._execute(args, converted=True)
        return self._execute(bind_inputs(self._sig, args, kwargs))

    def run(self, inputs=None, feeds: Mapping[str, np.ndarray] | None = None):
        """Run on ``inputs``, a mapping from input names to arrays: returns what ``exe(...)``
        does. onnxruntime's form ``exe.run(output_names, feeds)`` returns the list of the
        named outputs (all of them, in order, for ``None``).

        >>> probs, = exe.run(None, {"image": x})      # doctest: +SKIP
        """
        ort_form, names, feeds = parse_run_args(inputs, feeds)
        result = self._execute(bind_inputs(self._sig, [], dict(feeds or {})))
        return select_outputs(result, names, self.outputs) if ort_form else result

    def profile(self, *args, repeat: int = 20, **kwargs) -> list[tuple[str, float]]:
        """Median seconds of each kernel call of a run on these inputs, in plan order."""
        arrays = bind_inputs(self._sig, args, kwargs)
        times = [[] for _ in self._calls]
        for _ in range(repeat):
            self._execute(arrays, times)
        return [(k, float(np.median(t))) for (k, _), t in zip(self.plan.steps, times)]

    def _check_indices(self, checks, buffers, arrays) -> None:
        # the reference raises for an index out of range; the kernel would clamp it
        for slot, n, axis, coord, kernel in checks:
            root = self._roots[slot]
            s = self.plan.slots[root]
            a = arrays[s.ref] if s.kind == "input" else buffers[root]
            if coord >= 0:   # one coordinate of gather_nd/scatter_nd's index tuples
                a = a.reshape(self.plan.slots[slot].shape)[..., coord]
            check_indices(kernel, a, n, axis)

    def _execute(self, arrays, times: list | None = None, converted: bool = False):
        self._wake()   # sleeping workers start now, while this thread prepares the run
        if not converted:
            # the kernels read native-order, contiguous memory: convert (e.g. big-endian '>f4')
            arrays = [np.ascontiguousarray(a, a.dtype.newbyteorder("=")) for a in arrays]
        buffers = self._arena()[0]
        addresses = [_address(a) for a in arrays]
        if times is None and self._runner is not None:
            self._run_natively(addresses)
        else:
            self._run_each(buffers, arrays, addresses, times)
        outs = []
        for o, root in zip(self.plan.outputs, self._output_roots):
            src = buffers[root] if self.plan.slots[root].kind != "input" \
                else arrays[self.plan.slots[root].ref]
            outs.append(np.array(src).reshape(self.plan.slots[o].shape))
        return tuple(outs) if self.plan.tuple_output else outs[0]

    def _run_natively(self, addresses: list[int]) -> None:
        """Every kernel call of the plan in one native call (see ``_runner``)."""
        if self._runner is _UNBUILT:
            self._runner = plan_runner([(kernel.native_address(), len(args) + 1,
                                         kernel.entry.may_fail)
                                        for kernel, args, _ in self._calls])
        flat = getattr(self._local, "flat", None)
        if flat is None:   # this thread's arguments: its arena's addresses, then the inputs'
            steps = self._steps()
            flat = (ctypes.c_void_p * sum(len(p) for _, p, _, _ in steps))()
            patches, at = [], 0
            for _, ptrs, step_patches, _ in steps:
                flat[at:at + len(ptrs)] = ptrs
                patches += [(at + pos, i) for pos, i in step_patches]
                at += len(ptrs)
            flat = self._local.flat = (flat, patches)
        args, patches = flat
        for pos, i in patches:
            args[pos] = addresses[i]
        failed = self._runner(args)
        if failed:   # 1 + the call whose kernel could not allocate
            raise allocation_failed(self.plan.steps[failed - 1][0])

    def _run_each(self, buffers, arrays, addresses, times) -> None:
        """The plan's kernel calls one by one from Python: between them, the index checks;
        with ``times``, each call's time appended to its list."""
        steps = self._steps()
        for k, (fn, ptrs, patches, checks) in enumerate(steps):
            for pos, i in patches:
                ptrs[pos] = addresses[i]
            if checks:
                self._check_indices(checks, buffers, arrays)
            if times is None:
                failed = fn(*ptrs)
            else:
                t0 = time.perf_counter()
                failed = fn(*ptrs)
                times[k].append(time.perf_counter() - t0)
            if failed:   # only a kernel that allocates returns a status; 0 is success
                raise allocation_failed(self.plan.steps[k][0])

    # --- artifact ------------------------------------------------------------------------------
    def save(self, path) -> str:
        """Write the deployable artifact (see :mod:`mlcbook.graph.run.artifact`): native object
        code, the plan and the weights. Sets :attr:`artifact_sha256`, the file's hash, to pin
        when loading: ``mb.load(path, expected_sha256=exe.artifact_sha256)``."""
        from .artifact import write_artifact
        output_file(path, "the compiled model", ArtifactError)
        try:
            self.artifact_sha256 = write_artifact(path, self.plan, self.kernels, self._consts)
        except OSError as e:
            raise ArtifactError(f"cannot write the compiled model to {str(path)!r}: "
                                f"{e.strerror or e}; Instead: choose a path you can write, "
                                "with a shorter file name") from None
        return str(path)

    def export(self, out_dir, name: str = "model", cc: str = "cc") -> ExportedModel:
        """Write ``NAME.h``, ``libNAME.so`` and ``libNAME.a`` into ``out_dir``: the model as
        a C library that needs only libc, libm and pthreads (:mod:`mlcbook.runtime.c_export`).

        >>> exe.export("out", name="tiny").header        # doctest: +SKIP
        PosixPath('out/tiny.h')
        """
        output_folder(out_dir, "the C library", ExportError)
        libs = list(self.kernels.values())
        try:
            obj = libs[0].object_code() if libs else b""
        except BuildError:
            raise ExportError("this executable was loaded from a file and keeps no object "
                              "code; Instead: export the result of mb.compile(...)") from None
        target = (libs[0].target if libs else None) or Target()
        consts = dict(self._consts)
        entries = {k: v.entry for k, v in self.kernels.items()}
        return export_library(out_dir, name, self.plan, entries, obj, consts, target, cc=cc)

    def __reduce_ex__(self, protocol):
        raise ArtifactError("an Executable holds native code and cannot be pickled or copied; "
                            "Instead: exe.save(path) writes it to a file and mb.load(path) "
                            "reads it back")

    def __repr__(self) -> str:
        ins = ", ".join(f"{n}: {t}" for n, t in self.plan.inputs)
        return f"<Executable ({ins}): {len(self.plan.steps)} kernel calls, " \
               f"{len(self.kernels)} kernels>"


#: an executable's runner before its first run builds it
_UNBUILT = object()


def _address(a: np.ndarray | None) -> int:
    return a.__array_interface__["data"][0] if a is not None and a.size else 0


def _may_run_in_parallel(kernel) -> bool:
    """Whether ``kernel`` has a parallel loop (one loaded from a file: maybe)."""
    if kernel.lowered is None:
        return True
    found = []
    post_order_visit(kernel.lowered.body, lambda n: found.append(n) if isinstance(n, For)
                     and n.kind == "parallel" else None)
    return bool(found)


def _nothing() -> None:
    pass


def _fast_input_specs(inputs) -> list | None:
    """(shape, dtype) of each input, to recognize arrays that need neither checking nor
    converting; None when some input's dtype is not a numpy one (low-bit types)."""
    try:
        return [(tuple(t.shape), np.dtype(t.dtype)) for _, t in inputs]
    except TypeError:
        return None


def _matches(args, specs) -> bool:
    """Whether ``args`` are, in order, arrays of exactly the inputs' shapes and dtypes, in
    native byte order, C-contiguous and aligned: what a run can use as they are."""
    if specs is None or len(args) != len(specs):
        return False
    for a, (shape, dtype) in zip(args, specs):
        if type(a) is not np.ndarray or a.shape != shape or a.dtype != dtype \
                or not a.dtype.isnative or not (a.flags.c_contiguous and a.flags.aligned):
            return False
    return True


def load(path, expected_sha256: str | None = None) -> Executable:
    """Load an artifact written by :meth:`Executable.save` (no compiler needed).

    The file is checked member by member before any of its native code runs (see
    :mod:`mlcbook.graph.run.artifact`); a damaged file raises
    :class:`~mlcbook.errors.ArtifactError`.
    An artifact holds native code: load only artifacts you trust, and pin the hash you saved
    with ``expected_sha256`` to refuse any other file.

        >>> mb.load("m.mlcb", expected_sha256="3f5a...")
    """
    from .artifact import read_artifact
    if not isinstance(path, (str, os.PathLike)):
        raise ArtifactError(f"mb.load needs the path of a compiled model (a str or "
                            f"pathlib.Path), got {path!r}; Instead: mb.load('model.mlcb'), "
                            "a file written by exe.save")
    plan, kernels, consts, digest = read_artifact(path, expected_sha256)
    exe = Executable(plan, kernels, consts)
    exe.artifact_sha256 = digest
    return exe


__all__ = ["load", "Executable", "Plan"]
