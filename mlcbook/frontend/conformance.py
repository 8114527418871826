"""Run ONNX's own test suites (``onnx.backend.test``, offline) through mlcbook: the node
suite (one op per case) and the small models exported from PyTorch (``pytorch-converted``,
``pytorch-operator``).

    python -m mlcbook.frontend.conformance                # every supported op, reference evaluator
    python -m mlcbook.frontend.conformance --runner legalized   # loop IR, run by the interpreter
    python -m mlcbook.frontend.conformance --runner compiled --ops Relu Conv
    python -m mlcbook.frontend.conformance --show-skips   # why each skipped case was skipped
    python -m mlcbook.frontend.conformance --onnxruntime  # onnxruntime's rates on the same cases
                                                         # (onnxruntime: pip install "mlcbook[test]")

Besides the per-op table of the supported node cases, the command prints pass rates with
*every* case of a suite as the denominator (a case mlcbook does not support counts as not
passed): the node suite's 1,884 cases of onnx 1.23 and both PyTorch suites. With
``--onnxruntime`` it runs every case through onnxruntime too and prints its rates beside.

Each case is imported with :func:`from_onnx` and run with the graph reference evaluator
(``--runner interpret``), legalized to loop IR and run by the loop-IR interpreter
(``--runner legalized``), or compiled to native code (``--runner compiled``); its outputs
must match onnx's expected outputs in shape, dtype and value (the case's rtol/atol).

A case is *skipped*, never counted as a pass, when the importer reports something as
unsupported. The documented limitations are:

* element types outside mlcbook's dtype table (:data:`mlcbook.tir.expr.DTYPES`) and its
  low-bit storage types (float8, float4, int4, int2): string, complex;
* sequences, maps and optionals as values;
* BatchNormalization with ``training_mode=1`` in an inference import (chapter 5's
  exercise 4 repairs such a model); the cases of it are imported with
  ``from_onnx(..., training=True)``, which gives its running statistics;
  Constant with strings or sparse values; Einsum equations that take a diagonal (a
  letter repeated in one operand); RNN/GRU/LSTM activations that take ``activation_alpha`` /
  ``activation_beta``, and LSTM's ``input_forget``; Dropout in training with a nonzero ratio
  (its mask is random; a training import draws mlcbook's own seeded mask); Det of matrices larger than 4 x 4;
* output shapes that depend on values: graphs have static shapes, so Compress takes its
  condition at import (the cases pass it as a constant), and NonZero, Unique and
  NonMaxSuppression are not supported;
* ops outside the supported list (a case whose model uses one is not run);
* models that onnx's own checker (``check_model(full_check=True)``, which every import runs)
  rejects: with onnx 1.23, ``test_mvn``, whose MeanVarianceNormalization function body fails
  onnx's shape inference.

Everything else that goes wrong is a failure.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from ..errors import InvalidModelError, MLCError, UnsupportedModelError
from .. import optional


@dataclass
class CaseResult:
    name: str
    op: str          #: the op type a single-op case tests, or "(multi-op)"
    status: str      #: "pass", "fail" or "skip"
    reason: str = ""


@lru_cache(maxsize=1)
def node_tests() -> tuple:
    """Every node test case of the installed onnx (generated in memory, no download)."""
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return tuple(load_model_tests(kind="node"))


#: onnx's suites of small models exported from PyTorch (a directory of cases each)
MODEL_SUITES = ("pytorch-converted", "pytorch-operator")


@lru_cache(maxsize=None)
def model_tests(kind: str) -> tuple:
    """Every case of one of :data:`MODEL_SUITES`, with its model and data read from disk."""
    import glob
    import os

    import onnx
    from onnx.backend.test.loader import load_model_tests
    out = []
    for case in load_model_tests(kind=kind):
        model = onnx.load(os.path.join(case.model_dir, "model.onnx"))
        data = [(_tensors(d, "input"), _tensors(d, "output"))
                for d in sorted(glob.glob(os.path.join(case.model_dir, "test_data_set_*")))]
        out.append(dataclasses.replace(case, model=model, data_sets=data))
    return tuple(out)


def _tensors(folder: str, kind: str) -> list:
    """``kind_0.pb, kind_1.pb, ...`` of a test-data folder, in index order."""
    import os

    import onnx
    out = []
    while os.path.exists(path := os.path.join(folder, f"{kind}_{len(out)}.pb")):
        out.append(onnx.load_tensor(path))
    return out


def case_op(case) -> str:
    types = {n.op_type for n in case.model.graph.node}
    return types.pop() if len(types) == 1 else "(multi-op)"


def case_ops(case) -> set[str]:
    return {n.op_type for n in case.model.graph.node}


def supported_cases(ops: Sequence[str] | None = None) -> list:
    """The cases whose model uses only supported ops (restricted to ``ops`` if given)."""
    from .onnx_ops import CONVERTERS
    out = []
    for case in node_tests():
        used = case_ops(case)
        if not used <= set(CONVERTERS):
            continue
        if ops is not None and case_op(case) not in ops:
            continue
        out.append(case)
    return out


def _runner(kind: str):
    from ..graph import interpret
    from ..graph.interpret import main_function

    def positional(mod, inputs):
        # by position: an input may be called like interpret's own arguments ("target")
        return [inputs[p.name] for p in main_function(mod)[0].params]
    if kind == "interpret":
        return lambda mod, inputs: interpret(mod, *positional(mod, inputs))
    if kind == "legalized":
        from ..graph.legalize import legalize
        return lambda mod, inputs: interpret(legalize(mod), *positional(mod, inputs))
    if kind == "compiled":
        from ..graph.compile import compile as compile_module
        return lambda mod, inputs: compile_module(mod, target="llvm").run(inputs)
    raise ValueError(f"unknown runner {kind!r}; use 'interpret', 'legalized' or 'compiled'")


def _trains_batch_norm(model) -> bool:
    """Whether a case asks for BatchNormalization's training form (``training_mode=1``):
    it is then imported to train, where BatchNormalization gives its updated running
    statistics (Dropout's random mask in training still cannot match, so it stays skipped)."""
    return any(n.op_type == "BatchNormalization" and any(
        a.name == "training_mode" and a.i == 1 for a in n.attribute) for n in model.graph.node) \
        and not any(n.op_type == "Dropout" for n in model.graph.node)


def run_case(case, runner: str = "interpret") -> CaseResult:
    """Import, run and check one node test case."""
    from .onnx import from_onnx, static_input_names
    name, op = case.name, case_op(case)
    model = case.model
    inputs_sets = case.data_sets or []
    if not inputs_sets:
        return CaseResult(name, op, "skip", "the case has no data")
    graph_inputs = [vi.name for vi in model.graph.input
                    if vi.name not in {i.name for i in model.graph.initializer}]
    run = _runner(runner)
    for ins, expected in inputs_sets:
        values = dict(zip(graph_inputs, (_array(v) for v in ins)))
        expected = [_array(e) for e in expected]
        static = static_input_names(model)
        constants = {k: np.asarray(v) for k, v in values.items() if k in static}
        try:
            mod = from_onnx(model, constants=constants, training=_trains_batch_norm(model))
        except UnsupportedModelError as e:
            return CaseResult(name, op, "skip", e.message.splitlines()[1].strip("- ")
                              if "\n" in e.message else e.message)
        except InvalidModelError as e:
            # onnx's own checker (full_check) refuses a few of onnx's own test models
            return CaseResult(name, op, "skip", e.message)
        except MLCError as e:
            return CaseResult(name, op, "fail", f"import: {e}")
        feed = {k: np.asarray(v) for k, v in values.items() if k not in constants}
        try:
            with np.errstate(all="ignore"):
                got = run(mod, feed)
        except MLCError as e:
            return CaseResult(name, op, "fail", f"run: {e}")
        got = got if isinstance(got, tuple) else (got,)
        problem = compare(got, [np.asarray(e) for e in expected], case.rtol, case.atol)
        if problem:
            return CaseResult(name, op, "fail", problem)
    return CaseResult(name, op, "pass")


def import_onnxruntime():
    """The ``onnxruntime`` module; a :class:`~mlcbook.errors.MissingDependencyError` saying how to
    install it when it is missing (it is an extra, not a dependency of mlcbook)."""
    return optional.require("onnxruntime", "the conformance command's --onnxruntime", extra="fuzz")


def run_case_onnxruntime(case) -> CaseResult:
    """Run one case through onnxruntime and check it the same way (a case onnxruntime cannot
    load or run is a failure: the rate is onnxruntime's on this machine)."""
    ort = import_onnxruntime()
    name, op = case.name, case_op(case)
    graph_inputs = [vi.name for vi in case.model.graph.input
                    if vi.name not in {i.name for i in case.model.graph.initializer}]
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    try:
        sess = ort.InferenceSession(case.model.SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        for ins, expected in case.data_sets or []:
            feed = dict(zip(graph_inputs, (_array(v) for v in ins)))
            got = sess.run(None, feed)
            problem = compare(got, [np.asarray(_array(e)) for e in expected], case.rtol,
                              case.atol)
            if problem:
                return CaseResult(name, op, "fail", problem)
    except Exception as e:  # onnxruntime raises its own exception types for every failure
        return CaseResult(name, op, "fail", f"onnxruntime: {str(e).splitlines()[0][:200]}")
    return CaseResult(name, op, "pass")


def suite_cases(suite: str) -> tuple:
    """Every case of ``suite``: ``"node"`` or one of :data:`MODEL_SUITES`."""
    if suite == "node":
        return node_tests()
    if suite not in MODEL_SUITES:
        raise ValueError(f"unknown suite {suite!r}; use 'node' or one of {MODEL_SUITES}")
    return model_tests(suite)


def suite_rate(suite: str, runner: str = "interpret") -> tuple[int, int]:
    """(cases passed, all cases) of ``suite`` for mlcbook (``runner``) or onnxruntime
    (``runner="onnxruntime"``). A node case using an unsupported op is not run by mlcbook
    and counts as not passed."""
    from .onnx_ops import CONVERTERS
    cases = suite_cases(suite)
    passed = 0
    for case in cases:
        if runner == "onnxruntime":
            passed += run_case_onnxruntime(case).status == "pass"
        elif suite != "node" or case_ops(case) <= set(CONVERTERS):
            passed += run_case(case, runner).status == "pass"
    return passed, len(cases)


def _array(value):
    """Test data come as numpy arrays or as TensorProtos."""
    from onnx import TensorProto, numpy_helper
    if isinstance(value, TensorProto):
        return numpy_helper.to_array(value)
    return value


def compare(got: Sequence[np.ndarray], expected: Sequence[np.ndarray], rtol: float,
            atol: float) -> str:
    """'' when ``got`` matches ``expected`` (shape, dtype, values), else what differs."""
    if len(got) != len(expected):
        return f"{len(got)} outputs, expected {len(expected)}"
    for k, (g, e) in enumerate(zip(got, expected)):
        g = np.asarray(g)
        if g.shape != e.shape:
            return f"output {k}: shape {g.shape}, expected {e.shape}"
        if g.dtype != e.dtype:
            return f"output {k}: dtype {g.dtype}, expected {e.dtype}"
        try:
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        except AssertionError as err:
            lines = [ln for ln in str(err).splitlines() if ln.strip()]
            return f"output {k}: " + " ".join(lines[1:4])
    return ""


def run_all(ops: Sequence[str] | None = None, runner: str = "interpret",
            progress: bool = False) -> list[CaseResult]:
    cases = supported_cases(ops)
    if progress:
        cases = optional.progress(cases, desc="onnx node tests", unit="case",
                                  feature="the conformance command's progress bar", extra="fuzz")
    return [run_case(c, runner) for c in cases]


def summarize(results: Sequence[CaseResult]) -> str:
    """A table: op, passed, failed, skipped, pass rate (over the cases that ran)."""
    by_op: dict[str, list[CaseResult]] = {}
    for r in results:
        by_op.setdefault(r.op, []).append(r)
    lines = [f"{'op':<22}{'pass':>6}{'fail':>6}{'skip':>6}{'rate':>9}"]
    tp = tf = ts = 0
    for op in sorted(by_op, key=lambda o: (o.startswith("("), o)):
        rs = by_op[op]
        p = sum(r.status == "pass" for r in rs)
        f = sum(r.status == "fail" for r in rs)
        s = sum(r.status == "skip" for r in rs)
        tp, tf, ts = tp + p, tf + f, ts + s
        rate = f"{100 * p / (p + f):.1f}%" if p + f else "-"
        lines.append(f"{op:<22}{p:>6}{f:>6}{s:>6}{rate:>9}")
    rate = f"{100 * tp / (tp + tf):.1f}%" if tp + tf else "-"
    lines.append(f"{'total':<22}{tp:>6}{tf:>6}{ts:>6}{rate:>9}")
    return "\n".join(lines)


def _rate_line(who: str, suite: str, passed: int, total: int) -> str:
    rate = 100 * passed / total
    return f"{who:<12} {suite:<18} {passed:>5} of {total:>5} cases pass ({rate:.1f}%)"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mlcbook.frontend.conformance",
                                 description="Run onnx's node tests for the supported ops.")
    ap.add_argument("--ops", nargs="*", help="ONNX op types to run (default: all supported)")
    ap.add_argument("--runner", default="interpret",
                    choices=("interpret", "legalized", "compiled"))
    ap.add_argument("--show-skips", action="store_true", help="list skipped cases and why")
    ap.add_argument("--quiet", action="store_true", help="do not list failing cases")
    ap.add_argument("--onnxruntime", action="store_true",
                    help="also run every case through onnxruntime and print its pass rates")
    args = ap.parse_args(argv)
    if args.onnxruntime:
        import_onnxruntime()  # before the long run, not after it
    # the PyTorch suites are opset 6-9: the importer's line about each conversion is expected
    logging.getLogger("mlcbook.frontend.onnx").setLevel(logging.ERROR)
    results = run_all(args.ops, args.runner, progress=sys.stderr.isatty())
    print(summarize(results))
    for r in results:
        if (r.status == "fail" and not args.quiet) or (r.status == "skip" and args.show_skips):
            print(f"{r.status.upper():5} {r.name}: {r.reason}")
    if args.ops is None:
        print("\nPass rates over every case of each suite:")
        passed = sum(r.status == "pass" for r in results)
        print(_rate_line("mlcbook", "node", passed, len(node_tests())))
        for suite in MODEL_SUITES:
            print(_rate_line("mlcbook", suite, *suite_rate(suite, args.runner)))
        if args.onnxruntime:
            for suite in ("node",) + MODEL_SUITES:
                print(_rate_line("onnxruntime", suite, *suite_rate(suite, "onnxruntime")))
    return 1 if any(r.status == "fail" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
