"""The chapters time code the honest way: through mb.runtime's interleaved rounds, with
numpy's BLAS threads pinned, and saying whether the machine was busy."""

from __future__ import annotations

import json
import re

import pytest

from mlcbook import book


def _code(notebook) -> list[str]:
    cells = json.loads(notebook.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


WRITTEN = [c for c in book.chapters() if c.written]


@pytest.mark.parametrize("chapter", WRITTEN, ids=lambda c: f"chapter{c.number:02d}")
def test_no_hand_rolled_stopwatch(chapter):
    for cell in _code(chapter.notebook):
        assert not re.search(r"perf_counter|time\.time\(\)", cell), (
            f"chapter {chapter.number} times by hand; use mb.runtime.time_interleaved:\n{cell}")


@pytest.mark.parametrize("chapter", WRITTEN, ids=lambda c: f"chapter{c.number:02d}")
def test_every_timing_says_how_busy_the_machine_was(chapter):
    cells = _code(chapter.notebook)
    timed = [k for k, cell in enumerate(cells) if "time_interleaved(" in cell]
    for k in timed:
        later = "".join(cells[k:k + 3])
        assert "machine_load()" in later, (
            f"chapter {chapter.number}: a timing without a load check near it:\n{cells[k]}")


@pytest.mark.parametrize("chapter", WRITTEN, ids=lambda c: f"chapter{c.number:02d}")
def test_timings_that_include_numpy_pin_its_threads(chapter):
    cells = _code(chapter.notebook)
    numpy_timed = [cell for cell in cells if "time_interleaved(" in cell
                   and re.search(r"lambda: (np\.|numpy_mlp)", cell)]
    if numpy_timed:
        assert any("threadpool_limits(" in cell for cell in cells), (
            f"chapter {chapter.number} times numpy without pinning its BLAS threads")
