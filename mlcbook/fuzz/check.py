"""Differential checking of one model: onnxruntime's outputs against mlcbook's at every
``opt_level``; shrinking a failing model to a minimal one and saving it.

    >>> failure = check(case)        # None when every opt level agrees with onnxruntime
    >>> small = shrink(case, failure)

A failure is a mismatch beyond ``rtol``/``atol`` (NaNs must agree), or an error raised by
mlcbook on a model onnxruntime runs.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from ..optional import require
from .generate import Case

RTOL, ATOL = 1e-4, 1e-5
OPT_LEVELS = (0, 1, 2, 3)


@dataclass
class Failure:
    """What went wrong: ``kind`` is "mismatch" or "error"; ``opt_level`` where it did."""

    kind: str
    opt_level: int
    detail: str

    def same_as(self, other: "Failure") -> bool:
        return self.kind == other.kind and (self.kind == "mismatch" or
                                            self.detail.split(":")[0] ==
                                            other.detail.split(":")[0])


def run_onnxruntime(case: Case) -> list[np.ndarray]:
    ort = require("onnxruntime", "the fuzzer (it compares with onnxruntime)", extra="fuzz")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(case.model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, case.inputs)


def _compare(want: list, got, opt_level: int) -> Failure | None:
    got = list(got) if isinstance(got, tuple) else [got]
    for k, (w, g) in enumerate(zip(want, got)):
        g = np.asarray(g)
        if g.shape != w.shape or g.dtype != w.dtype:
            return Failure("mismatch", opt_level, f"output {k}: {g.dtype}{g.shape} where "
                                                  f"onnxruntime gives {w.dtype}{w.shape}")
        if not np.allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True):
            with np.errstate(all="ignore"):
                err = np.abs(g.astype(np.float64) - w.astype(np.float64))
                rel = err / np.maximum(np.abs(w.astype(np.float64)), 1e-30)
            at = np.unravel_index(np.nanargmax(np.where(np.isnan(err), np.inf, err)), w.shape)
            return Failure("mismatch", opt_level,
                           f"output {k} at {tuple(int(i) for i in at)}: mlcbook {g[at]!r}, "
                           f"onnxruntime {w[at]!r} (max abs err {np.nanmax(err):.3g}, "
                           f"max rel err {np.nanmax(rel):.3g})")
    return None


def check(case: Case, opt_levels=OPT_LEVELS) -> Failure | None:
    """The first way mlcbook disagrees with onnxruntime on ``case``, or None."""
    import mlcbook as mb
    want = run_onnxruntime(case)
    try:
        mod = mb.from_onnx(case.model)
    except Exception as e:  # noqa: BLE001 - any error on a model onnxruntime runs is a finding
        return Failure("error", -1, f"{type(e).__name__}: {e}")
    for level in opt_levels:
        try:
            got = mb.compile(mod, opt_level=level).run(case.inputs)
        except Exception as e:  # noqa: BLE001
            return Failure("error", level, f"{type(e).__name__}: {e}")
        failure = _compare(want, got, level)
        if failure is not None:
            return failure
    return None


# --- shrinking ------------------------------------------------------------------------------------
def _shapes(model) -> dict[str, tuple]:
    import onnx
    inferred = onnx.shape_inference.infer_shapes(model)
    out = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output) + \
            list(inferred.graph.input):
        t = vi.type.tensor_type
        out[vi.name] = (t.elem_type, tuple(d.dim_value for d in t.shape.dim))
    return out


def _rebuild(case: Case, nodes, outputs: list[str], new_inputs: dict) -> Case:
    """``case`` restricted to the nodes that ``outputs`` need, with ``new_inputs`` (name ->
    array) as extra graph inputs."""
    from onnx import helper
    graph = case.model.graph
    types = _shapes(case.model)
    needed, keep = set(outputs), []
    for node in reversed(nodes):
        if any(o in needed for o in node.output):
            keep.append(node)
            needed.update(i for i in node.input if i)
    keep.reverse()
    inputs = {k: v for k, v in {**case.inputs, **new_inputs}.items() if k in needed}
    inits = [t for t in graph.initializer if t.name in needed]
    infos = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
             for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(o, types[o][0], types[o][1]) for o in outputs]
    model = helper.make_model(helper.make_graph(keep, graph.name, infos, outs, initializer=inits),
                              opset_imports=case.model.opset_import)
    model.ir_version = case.model.ir_version
    return Case(model, inputs, [n.op_type for n in keep])


def _candidates(case: Case):
    """Smaller variants of ``case``: each value alone as the output; each node replaced by a
    graph input holding what onnxruntime computes for it."""
    nodes = list(case.model.graph.node)
    outputs = [o.name for o in case.model.graph.output]
    for node in nodes:
        for o in node.output:
            if o and [o] != outputs:
                yield _rebuild(case, nodes, [o], {})
    for k, node in enumerate(nodes):
        if len(node.output) != 1:
            continue
        probe = _rebuild(case, nodes, [node.output[0]], {})
        try:
            value = run_onnxruntime(probe)[0]
        except Exception:  # noqa: BLE001 - a variant onnxruntime cannot run is no candidate
            continue
        rest = nodes[:k] + nodes[k + 1:]
        yield _rebuild(case, rest, outputs, {node.output[0]: value})


def shrink(case: Case, failure: Failure, max_steps: int = 200) -> Case:
    """A model with as few nodes as greedy deletion finds that still fails the same way."""
    steps = 0
    improved = True
    while improved and steps < max_steps:
        improved = False
        for cand in _candidates(case):
            steps += 1
            if len(cand.model.graph.node) >= len(case.model.graph.node) and \
                    len(cand.model.graph.output) >= len(case.model.graph.output):
                continue
            try:
                f = check(cand)
            except Exception:  # noqa: BLE001 - onnxruntime refuses the variant
                continue
            if f is not None and f.same_as(failure):
                case, improved = cand, True
                break
            if steps >= max_steps:
                break
    return case


def save(case: Case, failure: Failure, directory: str, stem: str) -> str:
    """Write ``stem.onnx``, ``stem.npz`` (inputs) and ``stem.md`` (a repro note)."""
    import onnx
    os.makedirs(directory, exist_ok=True)
    base = os.path.join(directory, stem)
    onnx.save(case.model, base + ".onnx")
    np.savez(base + ".npz", **case.inputs)
    with open(base + ".md", "w") as f:
        f.write(f"# {stem}: {failure.kind} at opt_level {failure.opt_level}\n\n"
                f"{failure.detail}\n\nops: {', '.join(case.ops)}\n\n"
                "Reproduce:\n\n```python\nimport numpy as np, onnx, mlcbook as mb\n"
                f"from mlcbook.fuzz.check import check\nfrom mlcbook.fuzz.generate import Case\n"
                f"m = onnx.load({base + '.onnx'!r})\n"
                f"inputs = dict(np.load({base + '.npz'!r}))\n"
                "print(check(Case(m, inputs)))\n```\n")
        f.write("\nfailure: " + json.dumps(failure.__dict__) + "\n")
    return base
