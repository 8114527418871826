"""What a compiled model takes and gives, as onnxruntime's session shows it: each input's and
output's name, shape and dtype; runs that return outputs by name; and the notebook display.

    >>> [(t.name, t.shape, t.dtype) for t in exe.outputs]
    [('probs', (1, 10), 'float32')]
    >>> probs, = exe.run(["probs"], {"image": x})     # onnxruntime's session.run(names, feeds)
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Mapping, Sequence

from ...errors import ArgumentError, DynamicShapeError
from ..memory.display import plan_html


@dataclass(frozen=True)
class TensorInfo:
    """One input or output of a compiled model (onnxruntime: ``NodeArg``). A model with a
    symbolic batch size names that axis, as onnxruntime does: ``("N", 784)``.

    >>> TensorInfo("probs", (1, 10), "float32").nbytes
    40
    """

    name: str
    shape: tuple[int | str, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        import numpy as np
        symbolic = [d for d in self.shape if isinstance(d, str)]
        if symbolic:
            raise DynamicShapeError(f"{self.name!r} has the shape {self.shape}, whose axis "
                                    f"{symbolic[0]!r} is symbolic, so it has no size in bytes. "
                                    "Instead: read it from exe.specialize(n).inputs or "
                                    ".outputs, for a batch size n")
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


def symbolic_shape(at_1: tuple[int, ...], at_2: tuple[int, ...], dim: str) -> tuple:
    """The shape of a tensor that is ``at_1`` at batch size 1 and ``at_2`` at 2, each axis
    that follows the batch size named after ``dim`` (``"4*N"`` for 4 per batch; ``"?"`` for
    one that changes otherwise).

        >>> symbolic_shape((1, 10), (2, 10), "N"), symbolic_shape((4,), (8,), "N")
        (('N', 10), ('4*N',))
    """
    def axis(a: int, b: int):
        if a == b:
            return a
        if b == 2 * a:
            return dim if a == 1 else f"{a}*{dim}"
        return "?"

    return tuple(axis(a, b) for a, b in zip(at_1, at_2))


def graph_output_names(func, count: int) -> list[str]:
    """The names the imported graph ``func`` gave its ``count`` outputs (``from_onnx`` keeps
    the ONNX graph's in its attrs), if there is one distinct name per output; else none."""
    names = list(dict(func.attrs).get("output_names", ()))
    return names if len(names) == count and len(set(names)) == count else []


def input_infos(plan) -> list[TensorInfo]:
    """The plan's inputs in call order."""
    return [TensorInfo(n, tuple(t.shape), str(t.dtype)) for n, t in plan.inputs]


def output_infos(plan) -> list[TensorInfo]:
    """The plan's outputs in result order, with the graph's names (``output_K`` without)."""
    return [TensorInfo(name, tuple(plan.slots[o].shape), str(plan.slots[o].dtype))
            for name, o in zip(plan.names_of_outputs, plan.outputs)]


def select_outputs(result, names: Sequence[str] | None, outputs: list[TensorInfo]) -> list:
    """``result`` (one array, or a tuple of them) as the list onnxruntime's ``run(names,
    feeds)`` returns: every output in order when ``names`` is None, else the named ones."""
    arrays = list(result) if isinstance(result, tuple) else [result]
    if names is None:
        return arrays
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ArgumentError(f"exe.run(output_names, feeds) takes a list of output names (or "
                            f"None for all), got {names!r}; Instead: exe.run(['"
                            f"{outputs[0].name}'], feeds)")
    by_name = {t.name: k for k, t in enumerate(outputs)}
    for n in names:
        if n not in by_name:
            raise ArgumentError(f"the model has no output named {n!r}; its outputs are: "
                                f"{', '.join(by_name)}")
    return [arrays[by_name[n]] for n in names]


def parse_run_args(first, second) -> tuple[bool, Sequence[str] | None, Mapping | None]:
    """(onnxruntime form?, output names, feeds) of ``exe.run(first, second)``: ``run(feeds)``
    or onnxruntime's ``run(output_names, feeds)``."""
    if second is None and (first is None or isinstance(first, Mapping)):
        return False, None, first
    if not isinstance(second, Mapping):
        raise ArgumentError("exe.run takes a dict {input name: array}, or onnxruntime's "
                            "(output_names, {input name: array}); call exe(x) to pass arrays "
                            "by position")
    return True, first, second


def _table(head: Sequence[str], rows: Sequence[Sequence]) -> str:
    cells = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{html.escape(str(c))}</td>"
                                    for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _size(nbytes: int) -> str:
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def executable_html(exe) -> str:
    """The notebook display of an Executable: inputs, outputs, kernels (calls each), arena
    and the lifetimes figure of its plan."""
    plan = exe.plan
    tensors = [("input", t.name, t.shape, t.dtype) for t in exe.inputs] + \
              [("output", t.name, t.shape, t.dtype) for t in exe.outputs]
    calls: dict[str, int] = {}
    for name, _ in plan.steps:
        calls[name] = calls.get(name, 0) + 1
    weights = sum(a.nbytes for a in exe.constants.values())
    arena = plan.arena_bytes if plan.offsets else \
        sum(s.nbytes for s in plan.slots if s.kind == "temp")
    where = "one arena" if plan.offsets else "a buffer each (memory not planned)"
    return (f"<div><b>Executable</b>: {len(calls)} kernels, {len(plan.steps)} calls per run; "
            f"intermediates {_size(arena)} in {where}; weights {_size(weights)}"
            + _table(["", "name", "shape", "dtype"], tensors)
            + "<details><summary>kernels, in run order</summary>"
            + _table(["kernel", "calls"], list(calls.items())) + "</details>"
            + "<details><summary>memory plan</summary>" + plan_html(plan) + "</details></div>")


__all__ = ["TensorInfo", "symbolic_shape", "graph_output_names", "input_infos", "output_infos",
           "select_outputs", "parse_run_args", "executable_html"]
