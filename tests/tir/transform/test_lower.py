"""Lowering: each stage's rule on a small program, and the meaning kept (the lowered program,
interpreted, against the reference evaluator)."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import BuildError, UndefinedVariableError
from mlcbook.tir import (Allocate, Block, BlockRealize, BufferStore, For, IfThenElse, PrimFunc,
                         Var, post_order_visit, structural_equal)
from mlcbook.tir.transform import convert_blocks, flatten_buffers, is_lowered

from ..._reference import run_reference
from ._programs import (ALL, INIT_NO_REDUCE, MM_RELU, MM_REORDERED, MM_SPLIT_K, NESTED_ALLOC,
                        SPLIT_PREDICATE, SUM_REVERSED, SUM_SPLIT_PREDICATE)

RNG = np.random.default_rng(7)


def parse(src) -> PrimFunc:
    return mb.script.parse(src)


def nodes(node, cls):
    out = []
    post_order_visit(node, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def random_args(func):
    return [RNG.standard_normal(p.shape).astype(p.dtype) for p in func.params]


@pytest.mark.parametrize("name", sorted(ALL))
def test_lowered_program_means_the_same(name):
    func = parse(ALL[name])
    lowered = mb.lower(func).main()
    args = random_args(func)
    expected = [a.copy() for a in args]
    run_reference(func, *expected)
    flat = [a.copy().reshape(-1) for a in args]
    mb.tir.interpret(lowered, *flat)
    for p, e, got in zip(func.params, expected, flat):
        np.testing.assert_allclose(got.reshape(p.shape), e, rtol=1e-6, err_msg=p.name)


def test_stages_are_named_and_printable():
    stages = mb.lower(parse(MM_RELU), stages=True)
    assert [n for n, _ in stages] == ["input", "convert_blocks", "compact_allocations",
                                      "flatten_buffers", "simplify"]
    for _, mod in stages:
        assert "def mm_relu" in str(mod)


def test_no_block_survives_and_alloc_becomes_allocate():
    out = mb.lower(parse(MM_RELU)).main()
    assert not nodes(out.body, (Block, BlockRealize))
    (alloc,) = nodes(out.body, Allocate)
    assert alloc.buffer.name == "Y" and alloc.buffer.shape == (128,)


def test_init_is_hoisted_in_front_of_innermost_reduce_loop():
    body = convert_blocks(parse(MM_RELU).body)
    assert not nodes(body, IfThenElse)
    # for i, j: Y[i, j] = 0; for k: ...  (the init store sits outside the k loop)
    k_loops = [f for f in nodes(body, For) if f.loop_var.name == "k"]
    assert len(k_loops) == 1
    stores_in_k = nodes(k_loops[0], BufferStore)
    assert len(stores_in_k) == 1 and "A" in str(stores_in_k[0].value)


def test_init_is_hoisted_in_front_of_split_reduce_loops():
    body = convert_blocks(parse(MM_SPLIT_K).body)
    assert not nodes(body, IfThenElse)
    ko = next(f for f in nodes(body, For) if f.loop_var.name == "ko")
    assert ko.body.loop_var.name == "ki"


@pytest.mark.parametrize("src,cond", [(MM_REORDERED, "k == 0"),
                                      (SUM_SPLIT_PREDICATE, "ko * 4 + ki == 0"),
                                      (SUM_REVERSED, "5 - k == 0")])
def test_init_is_guarded_when_it_cannot_be_hoisted(src, cond):
    out = mb.lower(parse(src)).main()
    conds = [str(s.cond) for s in nodes(out.body, IfThenElse)]
    assert cond in conds


def test_init_of_a_block_without_reduce_variable_always_runs():
    out = mb.lower(parse(INIT_NO_REDUCE)).main()
    assert not nodes(out.body, IfThenElse)
    assert len(nodes(out.body, BufferStore)) == 2


def test_predicate_becomes_if():
    out = mb.lower(parse(SPLIT_PREDICATE)).main()
    (cond,) = [s.cond for s in nodes(out.body, IfThenElse)]
    assert str(cond) == "io * 4 + ii < 10"


def test_dividing_split_predicate_is_simplified_away():
    src = SPLIT_PREDICATE.replace("(10,)", "(12,)").replace("spatial(10", "spatial(12") \
                         .replace("< 10", "< 12")
    out = mb.lower(parse(src)).main()
    assert not nodes(out.body, IfThenElse)


def test_block_allocation_is_placed_where_the_block_was():
    out = mb.lower(parse(NESTED_ALLOC)).main()
    loop = out.body
    assert isinstance(loop, For) and isinstance(loop.body, Allocate)


def test_flatten_makes_buffers_one_dimensional_and_keeps_shapes():
    func = convert_blocks(parse(MM_RELU).body)
    flat = flatten_buffers(parse(MM_RELU).with_body(func))
    assert all(p.ndim == 1 for p in flat.params)
    assert dict(flat.attrs)["param_shapes"] == ((16, 12), (12, 8), (16, 8))
    for n in nodes(flat.body, BufferStore):
        assert n.buffer.ndim == 1


def test_simplify_stage_cleans_split_index_arithmetic():
    # binding vi = io*4 + ii of a (8, 4)-shaped access: (io*4 + ii) // 4 style terms vanish
    src = '''
@T.prim_func
def f(A: T.Buffer((8, 4), "float32"), B: T.Buffer((32,), "float32")):
    for f_ in range(32):
        with T.block("B"):
            vi = T.axis.spatial(32, f_)
            B[vi] = A[vi // 4, vi % 4]
'''
    out = mb.lower(parse(src)).main()
    (store,) = nodes(out.body, BufferStore)
    assert str(store.value) == "A[f_]"


def test_extent_one_loops_are_removed():
    src = SPLIT_PREDICATE.replace("T.grid(3, 4)", "T.grid(1, 10)").replace("io * 4", "io * 10")
    out = mb.lower(parse(src)).main()
    assert [f.loop_var.name for f in nodes(out.body, For)] == ["ii"]


def test_lowering_is_idempotent_and_marks_functions():
    once = mb.lower(parse(MM_RELU))
    assert is_lowered(once.main())
    twice = mb.lower(once)
    assert structural_equal(once, twice)


def test_lower_accepts_module_and_rejects_other_things():
    mod = mb.tir.IRModule({"a": parse(MM_RELU), "b": parse(SPLIT_PREDICATE)})
    out = mb.lower(mod)
    assert sorted(out.functions) == ["a", "b"]
    with pytest.raises(BuildError, match="PrimFunc or an IRModule"):
        mb.lower("def f(): pass")


def test_lower_verifies_its_input():
    A = mb.tir.Buffer("A", (4,))
    i, j = Var("i"), Var("j")
    bad = PrimFunc("bad", (A,), For(i, 4, BufferStore(A, mb.tir.const(0.0, "float32"), (j,))))
    with pytest.raises(UndefinedVariableError, match="'j'"):
        mb.lower(bad)
