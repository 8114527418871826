"""The docs stay true: every path of the repository that a page names exists."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))
PATH = re.compile(r"`((?:mlcbook|tests|docs|chapters|exercises|bench)/[\w/.]*)`")


def test_there_are_pages():
    assert {p.name for p in PAGES} >= {"architecture.md", "adding_an_op.md"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_named_path_exists(page):
    named = PATH.findall(page.read_text())
    assert named, f"{page.name} names no path"
    missing = [p for p in named if not (ROOT / p).exists()]
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


def test_the_layering_table_names_every_package():
    text = (ROOT / "docs" / "architecture.md").read_text()
    packages = {p.name for p in (ROOT / "mlcbook").iterdir()
                if p.is_dir() and (p / "__init__.py").exists()}
    unnamed = {p for p in packages if f"mlcbook/{p}/" not in text}
    assert not unnamed, f"docs/architecture.md does not place: {sorted(unnamed)}"
