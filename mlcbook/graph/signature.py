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

from ..errors import ArgumentError


@dataclass(frozen=True)
class TensorInfo:
    """One input or output of a compiled model (onnxruntime: ``NodeArg``).

    >>> TensorInfo("probs", (1, 10), "float32").nbytes
    40
    """

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        import numpy as np
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize


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
    """The notebook display of an Executable: inputs, outputs, kernels (calls each), arena."""
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
            + _table(["kernel", "calls"], list(calls.items())) + "</details></div>")


__all__ = ["TensorInfo", "input_infos", "output_infos", "select_outputs", "parse_run_args",
           "executable_html"]
