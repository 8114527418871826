from dataclasses import replace

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.graph.memory.memory_plan import (ALIGN, lifetimes, place_in_arena, plan_memory,
                                              plot_lifetimes)
from mlcbook.graph.memory.plan import make_plan
from mlcbook.ops.types import Attrs

from .._models import MODELS, model


def _nbytes(slot):
    return max(ALIGN, -(-slot.nbytes // ALIGN) * ALIGN)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_no_two_live_temps_share_bytes(name):
    exe = mb.compile(model(name))
    plan = exe.plan
    mp = plan_memory(plan)
    live = mp.lifetimes
    items = sorted(live)
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            (a0, a1), (b0, b1) = live[a], live[b]
            if a0 <= b1 and b0 <= a1 and not (a1 == b0 or b1 == a0):
                lo_a, lo_b = mp.offsets[a], mp.offsets[b]
                assert lo_a + _nbytes(plan.slots[a]) <= lo_b or \
                    lo_b + _nbytes(plan.slots[b]) <= lo_a, (a, b)
    assert mp.arena_bytes <= mp.unplanned_bytes + ALIGN * len(items)


def test_lifetimes_run_from_the_writer_to_the_last_reader():
    exe = mb.compile(model("mlp"))
    life = lifetimes(exe.plan)
    for slot, (first, last) in life.items():
        writer_args = exe.plan.steps[first][1]
        assert slot in writer_args
        assert first <= last


def test_an_elementwise_step_writes_over_an_input_that_dies():
    x = mb.graph.Var("x", mb.graph.TensorType((64, 64)))
    w = mb.graph.Constant(np.eye(64, dtype="float32"), "w")
    op = mb.graph.op
    h = op.matmul(x, w, name="mm")
    f = mb.graph.Function([x], op.softmax(op.exp(op.transpose(h, name="t"), name="e"),
                                          name="sm"))
    exe = mb.compile(f)
    mp = plan_memory(exe.plan, inplace_steps=set(range(len(exe.plan.steps))) - {0})
    assert mp.inplace, "some step should reuse its dying input"
    a = np.random.default_rng(0).standard_normal((64, 64)).astype("float32")
    np.testing.assert_allclose(exe(a), mb.graph.interpret(f, a), rtol=1e-5, atol=1e-6)


def test_the_plan_halves_the_memory_of_a_deep_network():
    from mlcbook.frontend import examples
    exe = mb.compile(mb.from_onnx(examples.resnet(size=32, classes=10)))
    assert exe.stats["arena_bytes"] * 2 <= exe.stats["unplanned_bytes"]


def test_the_lifetime_plot_draws_a_box_per_temp():
    import matplotlib
    matplotlib.use("Agg")
    exe = mb.compile(model("cnn"))
    mp = plan_memory(exe.plan)
    ax = plot_lifetimes(exe.plan, mp)
    assert len(ax.patches) == len(mp.lifetimes)
    assert "arena" in ax.get_title()


def test_an_arena_of_a_mebibyte_or_more_starts_on_a_huge_page():
    # where 4 KiB pages land would decide a memory-bound kernel's cache conflicts
    from mlcbook.runtime.pages import HUGE_PAGE
    from mlcbook.frontend import examples
    exe = mb.compile(mb.from_onnx(examples.resnet(size=128, classes=10)), opt_level=2)
    assert exe.plan.arena_bytes >= 1 << 20
    temps = [b for b, s in zip(exe._arena()[0], exe.plan.slots) if s.kind == "temp"]
    assert min(t.ctypes.data for t in temps) % HUGE_PAGE == 0


def _chain_plan():
    x = mb.graph.Var("x", mb.graph.TensorType((4, 64)))
    op = mb.graph.op
    f = mb.graph.Function([x], op.relu(op.exp(op.sqrt(x))))
    return make_plan(mb.graph.legalize(f)["main"])[0]     # sqrt, exp, relu: a kernel each


def test_the_arena_step_runs_in_place_where_the_facts_of_a_step_say_it_may():
    plan = _chain_plan()
    exp_out, relu_out = plan.steps[1][1][-1], plan.steps[2][1][-1]
    planned = place_in_arena(replace(plan, facts=[Attrs(), Attrs(), Attrs(inplace=1)]))
    assert planned.offsets[relu_out] == planned.offsets[exp_out]


def test_without_the_fact_a_step_gets_bytes_of_its_own():
    plan = _chain_plan()
    exp_out, relu_out = plan.steps[1][1][-1], plan.steps[2][1][-1]
    planned = place_in_arena(replace(plan, facts=[Attrs()] * 3))
    assert planned.offsets[relu_out] != planned.offsets[exp_out]
