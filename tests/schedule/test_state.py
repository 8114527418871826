"""Schedule, handles and queries: lookups, stale handles, copies, the verifier guard."""

import pytest

import mlcbook as mb
from mlcbook.errors import ScheduleError
from mlcbook.schedule import Schedule
from mlcbook.schedule.errors import (ArgumentTypeError, BlockNotFoundError, HandleError,
                                     InvalidResultError, UnsupportedError)
from mlcbook.schedule.state import PRIMITIVES, Context, schedule_primitive
from mlcbook.tir import BufferStore, For, PrimFunc, Var

from ._util import add, mm_relu, parse
from .test_inline import CHAIN


def test_schedule_wraps_a_function_as_main():
    f = mm_relu()
    sch = Schedule(f)
    assert list(sch.mod.functions) == ["main"]
    assert sch.func is f and sch.mod["main"] is f
    assert str(sch) == f.script()


def test_get_block_names_the_blocks_that_exist():
    sch = Schedule(mm_relu())
    with pytest.raises(BlockNotFoundError, match="no block named 'Z'; its blocks are: 'Y', 'C'"):
        sch.get_block("Z")


def test_get_loops_child_blocks_producers_consumers():
    sch = Schedule(parse(CHAIN))
    y, z, c = (sch.get_block(n) for n in "YZC")
    assert [sch.get(lp).loop_var.name for lp in sch.get_loops(z)] == ["i", "j"]
    assert [b.name for b in sch.get_producers(z)] == ["Y"]
    assert [b.name for b in sch.get_consumers(z)] == ["C"]
    assert sch.get_producers(y) == [] and sch.get_consumers(c) == []
    root_children = sch.get_child_blocks(sch.get_loops(z)[0])
    assert [b.name for b in root_children] == ["Z"]


def test_stale_loop_handle_names_the_step_that_replaced_it():
    sch = Schedule(add())
    i, j = sch.get_loops(sch.get_block("B"))
    sch.split(i, [None, 2])
    with pytest.raises(HandleError, match="loop i was replaced by split; use the loops split "
                       "returned"):
        sch.parallel(i)


def test_handles_survive_steps_that_keep_their_loop():
    sch = Schedule(mm_relu())
    i, j, k = sch.get_loops(sch.get_block("Y"))
    sch.reorder(k, j)
    sch.split(i, [None, 4])
    assert sch.get(j).loop_var.name == "j"
    sch.parallel(sch.get_loops(sch.get_block("Y"))[0])


def test_handle_from_another_schedule_is_refused():
    f = add()
    a, b = Schedule(f), Schedule(f)
    i, _ = a.get_loops(a.get_block("B"))
    with pytest.raises(HandleError, match="was not made by this schedule"):
        b.parallel(i)


def test_copy_is_independent():
    sch = Schedule(add(), seed=3)
    i, j = sch.get_loops(sch.get_block("B"))
    other = sch.copy()
    sch.split(i, [None, 2])
    other.fuse(i, j)  # i is still valid in the copy
    assert len(sch.trace) == 3 and len(other.trace) == 3
    assert "split" in str(sch.trace) and "fuse" in str(other.trace)
    # the random state is copied too: both draw the same next decision
    a = sch.copy().sample_categorical([1, 2, 3, 4], [1, 1, 1, 1])
    b = sch.copy().sample_categorical([1, 2, 3, 4], [1, 1, 1, 1])
    assert a == b


def test_wrong_handle_kind():
    sch = Schedule(add())
    b = sch.get_block("B")
    with pytest.raises(ArgumentTypeError, match="expected a loop handle"):
        sch.split(b, [None, 2])
    with pytest.raises(ArgumentTypeError, match="split"):
        sch.split()


def test_unblocked_function_is_refused():
    from mlcbook.tir import Buffer
    A = Buffer("A", (4,))
    i = Var("i")
    f = PrimFunc("f", (A,), For(i, 4, BufferStore(A, mb.tir.const(0.0, "float32"), (i,))),
                 num_outputs=1)
    with pytest.raises(UnsupportedError, match="has no root block"):
        Schedule(f)


def test_verifier_guards_every_step():
    # a deliberately broken primitive: stores to the input. The guard must catch it.
    @schedule_primitive("_test_break")
    def _break(ctx: Context, block) -> None:
        realize = ctx.block_realize(block)
        st = realize.block.body
        bad = BufferStore(ctx.func.params[0], st.value, st.indices)
        from dataclasses import replace
        ctx.replace(realize.block, replace(realize.block, body=bad))

    try:
        sch = Schedule(add())
        with pytest.raises(InvalidResultError, match="would produce a malformed program"):
            sch._test_break(sch.get_block("B"))
        assert sch.func.script() == add().script()
    finally:
        PRIMITIVES.pop("_test_break")
    assert not hasattr(Schedule(add()), "_test_break")  # unregistered: no method any more


def test_every_error_is_a_schedule_error():
    from mlcbook.schedule import errors
    classes = [getattr(errors, n) for n in errors.__all__ if isinstance(getattr(errors, n), type)]
    assert all(issubclass(c, ScheduleError) for c in classes)
    codes = [c.code for c in classes]
    assert len(set(codes)) == len(codes)
    assert all(c.startswith("MLC-S0") and 1 <= int(c[5:]) <= 99 for c in codes)


def test_codes_are_unique_across_the_library():
    assert mb.Schedule is Schedule  # the schedule errors are imported, hence registered
    codes = [c.code for c in mb.errors.all_error_classes()]
    dups = {c for c in codes if codes.count(c) > 1}
    assert not dups


def test_every_primitive_has_a_written_out_method_with_its_signature():
    import inspect
    library = {n: p for n, p in PRIMITIVES.items() if not n.startswith("_test")}
    methods = {n for n, m in vars(Schedule).items() if getattr(m, "__wrapped__", None)}
    assert methods == set(library)
    for name, prim in library.items():
        params = list(inspect.signature(getattr(Schedule, name)).parameters.values())
        assert params[0].name == "self"
        if prim.sampling:
            assert params[-1].name == "decision" and params[-1].kind is params[-1].KEYWORD_ONLY
            params = params[:-1]
        assert params[1:] == list(prim.signature.parameters.values()), name
        assert getattr(Schedule, name).__doc__, name


def test_a_primitive_registered_outside_the_library_is_a_method_too():
    @schedule_primitive("_test_name_of")
    def _name_of(ctx: Context, block) -> None:
        ctx.block(block)

    try:
        sch = Schedule(add())
        sch._test_name_of(sch.get_block("B"))
        assert "sch._test_name_of(b0)" in str(sch.trace)
        with pytest.raises(ArgumentTypeError, match="_test_name_of"):
            sch._test_name_of()
    finally:
        PRIMITIVES.pop("_test_name_of")
    with pytest.raises(AttributeError, match="no attribute 'no_such_step'"):
        Schedule(add()).no_such_step()
