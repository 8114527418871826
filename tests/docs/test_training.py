"""docs/training.md's table of what trains stays true: every registered op is in exactly one
row, and each row holds exactly the ops with that kind of gradient."""

from pathlib import Path

import pytest

import mlcbook as mb
from mlcbook.ops import get as get_op
from mlcbook.train import has_gradient

from ..train.test_grad_rules import COMPILER_ONLY, NO_RULE_YET, NOT_DIFFERENTIABLE

PAGE = Path(__file__).resolve().parents[2] / "docs" / "training.md"
DECLARED = "trains: declared derivative"
RULE = "trains: gradient rule"
NO_RULE = "no rule yet"
NOT_DIFF = "not differentiable: booleans, indices, integers, rounding or bits"
COMPILER = "compiler only: inserted after differentiation"


def _rows() -> dict[str, list[str]]:
    """The table's rows: the gradient column's label -> the ops of the row, as written."""
    rows = {}
    for line in PAGE.read_text().splitlines():
        if line.startswith("| `"):
            ops, label = line.strip("| ").rsplit(" | ", 1)
            rows[label] = [o.strip(" `") for o in ops.split(",")]
    return rows


def _expected(label: str) -> list[str]:
    ops = mb.ops.list_ops()
    if label == DECLARED:
        return [o for o in ops if get_op(o).grad_ops]
    if label == RULE:
        return [o for o in ops if has_gradient(o) and not get_op(o).grad_ops]
    return sorted({NO_RULE: NO_RULE_YET, NOT_DIFF: NOT_DIFFERENTIABLE,
                   COMPILER: COMPILER_ONLY}[label])


#: the rows the table has (the one of ops without a rule only while there are some)
LABELS = [DECLARED, RULE] + ([NO_RULE] if NO_RULE_YET else []) + [NOT_DIFF, COMPILER]


def test_the_table_has_one_row_per_kind_of_gradient():
    assert sorted(_rows()) == sorted(LABELS)


@pytest.mark.parametrize("label", LABELS)
def test_each_row_holds_exactly_its_ops(label):
    want = _expected(label)
    row = ", ".join(f"`{o}`" for o in want)
    assert _rows().get(label) == want, (f"docs/training.md: the row {label!r} is stale; "
                                        f"write it as:\n| {row} | {label} |")


def test_every_op_is_in_exactly_one_row():
    listed = [o for ops in _rows().values() for o in ops]
    assert sorted(listed) == mb.ops.list_ops()
