"""The notebook display of a run plan: its figures and the lifetimes figure (inline SVG)."""

import re

import pytest

import mlcbook as mb
from mlcbook.graph.memory.display import peak_live_bytes, plan_html
from mlcbook.graph.memory.memory_plan import ALIGN, lifetimes, plan_memory

from .._models import model

RECT = re.compile(r"<rect x='([\d.]+)' y='([\d.]+)' width='([\d.]+)' height='([\d.]+)'"
                  r"[^>]*><title>slot (\d+): ")


@pytest.fixture(scope="module")
def planned():
    return mb.compile(model("cnn")).plan


def test_each_intermediate_is_a_box_at_its_offset_for_its_lifetime(planned):
    page = planned._repr_html_()
    boxes = {int(m.group(5)): tuple(map(float, m.group(1, 2, 3, 4)))
             for m in RECT.finditer(page)}
    life = lifetimes(planned)
    assert set(boxes) == set(life) and planned.offsets
    # boxes lower in the arena are lower in the picture; later steps further right
    by_offset = sorted(life, key=lambda s: planned.offsets[s] + planned.slots[s].nbytes)
    ys = [boxes[s][1] for s in by_offset]
    assert ys == sorted(ys, reverse=True)
    by_first = sorted(life, key=lambda s: life[s][0])
    assert [boxes[s][0] for s in by_first] == sorted(boxes[s][0] for s in life)
    s = by_first[0]
    assert f"slot {s}: {tuple(planned.slots[s].shape)} {planned.slots[s].dtype}" in page
    assert f"steps {life[s][0]}-{life[s][1]}, written by {planned.steps[life[s][0]][0]}" in page


def test_the_header_gives_the_arena_and_the_bound_no_plan_beats(planned):
    page = plan_html(planned)
    life = lifetimes(planned)
    # by hand: the aligned bytes of the intermediates live at each step
    size = {s: max(ALIGN, -(-planned.slots[s].nbytes // ALIGN) * ALIGN) for s in life}
    peak = max(sum(size[s] for s, (a, b) in life.items() if a <= k <= b)
               for k in range(len(planned.steps) + 1))
    assert peak_live_bytes(planned, life) == peak <= planned.arena_bytes
    mp = plan_memory(planned)
    assert f"one buffer each {mp.unplanned_bytes / 1024:.1f} KiB" in page
    assert f"the most live at one step {peak / 1024:.1f} KiB" in page
    assert f"arena {planned.arena_bytes / 1024:.1f} KiB" in page


def test_a_plan_without_an_arena_says_so_and_draws_nothing():
    page = mb.compile(model("cnn"), opt_level=1).plan._repr_html_()
    assert "memory not planned" in page and "<svg" not in page


def test_the_executable_display_holds_the_plan_figure():
    exe = mb.compile(model("cnn"))
    assert plan_html(exe.plan) in exe._repr_html_()
