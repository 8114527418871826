"""The README's Python code runs as written: each ```python block, pasted into a fresh
interpreter in an empty folder, runs without error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _python_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"^```python\n(.*?)^```", text, re.MULTILINE | re.DOTALL)


def test_the_readme_has_python_blocks():
    assert len(_python_blocks()) >= 2


@pytest.mark.parametrize("index", range(len(_python_blocks())))
def test_a_readme_python_block_runs_as_written(index, tmp_path):
    code = _python_blocks()[index]
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"README python block {index}:\n{code}\n{proc.stderr[-3000:]}"
