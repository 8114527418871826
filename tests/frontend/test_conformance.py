"""ONNX's node test suite, for every supported op: imported and run by the graph reference
evaluator, legalized to loop IR (run by the loop-IR interpreter), and compiled to native code.

Skips are only for the limitations documented in mlcbook.frontend.conformance.
"""
import pytest

from mlcbook.frontend import conformance

CASES = conformance.supported_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case_with_reference_evaluator(case):
    result = conformance.run_case(case, "interpret")
    if result.status == "skip":
        pytest.skip(result.reason)
    assert result.status == "pass", result.reason


LEGALIZED = [c for c in CASES if conformance.case_op(c) != "(multi-op)"]


@pytest.mark.parametrize("case", LEGALIZED, ids=[c.name for c in LEGALIZED])
def test_node_case_legalized_to_loop_ir(case):
    result = conformance.run_case(case, "legalized")
    if result.status == "skip":
        pytest.skip(result.reason)
    assert result.status == "pass", result.reason


def test_every_supported_op_has_node_cases():
    from mlcbook.frontend import CONVERTERS
    tested = {conformance.case_op(c) for c in CASES}
    assert set(CONVERTERS) - tested == set()


def test_summary_table_counts_skips_apart_from_passes():
    rs = [conformance.CaseResult("a", "Relu", "pass"), conformance.CaseResult("b", "Relu", "skip"),
          conformance.CaseResult("c", "Add", "fail", "x")]
    table = conformance.summarize(rs)
    assert "Relu" in table and "100.0%" in table and "0.0%" in table
    assert table.splitlines()[-1].split()[1:4] == ["1", "1", "1"]



@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_node_case_compiled(case):
    result = conformance.run_case(case, "compiled")
    if result.status == "skip":
        pytest.skip(result.reason)
    assert result.status == "pass", result.reason
