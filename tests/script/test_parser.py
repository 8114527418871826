"""The parser on hand-written scripts: decorated functions, text, modules, normalizations."""

import textwrap
from functools import reduce

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.script import T, dialect, ir_module, parse, prim_func
from mlcbook.tir import (BlockRealize, Const, For, IRModule, PrimFunc, Select,
                         assert_structural_equal, structural_equal)
from mlcbook.tir.analysis import collect_blocks

from . import _future_funcs

N = 128
SCALE = 0.5


def _round_trips(f):
    text = str(f)
    back = parse(text)
    assert_structural_equal(back, f)
    assert str(back) == text


@T.prim_func
def mm_relu(A: T.Buffer((128, 128), "float32"), B: T.Buffer((128, 128), "float32"),
            C: T.Buffer((128, 128), "float32")):
    Y = T.alloc_buffer((128, 128), "float32")
    for i, j, k in T.grid(128, 128, 128):
        with T.block("Y"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            T.reads(A[vi, vk], B[vk, vj])
            T.writes(Y[vi, vj])
            with T.init():
                Y[vi, vj] = T.float32(0)
            Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
    for i, j in T.grid(128, 128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            vj = T.axis.spatial(128, j)
            C[vi, vj] = T.max(Y[vi, vj], T.float32(0))


def test_mm_relu_parses_to_blocks_with_a_root_allocation():
    assert isinstance(mm_relu, PrimFunc) and mm_relu.name == "mm_relu"
    root = mm_relu.root_block
    assert [b.name for b in root.alloc_buffers] == ["Y"]
    names = [r.block.name for r in collect_blocks(mm_relu.body)]
    assert names == ["root", "Y", "C"]
    y = collect_blocks(mm_relu.body)[1].block
    assert [iv.kind for iv in y.iter_vars] == ["spatial", "spatial", "reduce"]
    assert y.init is not None
    _round_trips(mm_relu)


def test_mm_relu_equals_the_same_program_built_with_te():
    A = mb.te.placeholder((128, 128), "float32", name="A")
    B = mb.te.placeholder((128, 128), "float32", name="B")
    k = mb.te.reduce_axis(128, name="k")
    Y = mb.te.compute((128, 128), lambda i, j: mb.te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = mb.te.compute((128, 128), lambda i, j: mb.tir.max(Y[i, j], 0.0), name="C")
    assert_structural_equal(mb.te.create_prim_func([A, B, C]), mm_relu)


def test_missing_regions_are_inferred_from_the_body():
    # block "C" above states no regions: they are read off its body
    c = collect_blocks(mm_relu.body)[2].block
    assert "T.reads(Y[vi, vj])" in str(mm_relu) and "T.writes(C[vi, vj])" in str(mm_relu)
    assert [r.buffer.name for r in c.reads] == ["Y"]


def test_inferred_regions_cover_inner_loops_and_differing_indices():
    @T.prim_func
    def rowsum(A: T.Buffer((8, 4), "float32"), B: T.Buffer((8,), "float32")):
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = T.float32(0)
                for k in range(4):
                    B[vi] = B[vi] + A[vi, k] + A[vi, 0] * A[vi, 0]

    text = str(rowsum)
    assert "T.reads(B[vi], A[vi, 0:4])" in text and "T.writes(B[vi])" in text
    _round_trips(rowsum)


def test_globals_and_closure_constants_are_resolved():
    def make(n):
        @T.prim_func
        def scale(A: T.Buffer((n, N), "float32"), B: T.Buffer((n, N), "float32")):
            for i, j in T.grid(n, N):
                with T.block("B"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    B[vi, vj] = A[vi, vj] * SCALE
        return scale

    f = make(3)
    assert f.params[0].shape == (3, 128)
    assert "B[vi, vj] = A[vi, vj] * T.float32(0.5)" in str(f)
    _round_trips(f)


def test_string_annotations_are_parsed_from_source():
    # the module uses `from __future__ import annotations`, so T.Buffer(...) is never evaluated
    f = _future_funcs.make_copy(6)
    assert f.params[0].shape == (6,) and f.params[1].scope == "local"
    _round_trips(f)


def test_bare_numbers_take_the_dtype_they_meet():
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "int64")):
        for i in T.serial(T.int64(4)):
            with T.block("B"):
                vi = T.axis.spatial(T.int64(4), i)
                B[vi] = T.Cast("int64", A[vi]) + 1
        for i in range(4):
            with T.block("A"):
                vi = T.axis.spatial(4, i)
                T.reads()
                T.writes()
                T.evaluate(T.max(A[vi], 0))

    text = str(f)
    assert "B[vi] = T.Cast(\"int64\", A[vi]) + T.int64(1)" in text
    assert "T.evaluate(T.max(A[vi], T.float32(0)))" in text
    assert "for i in range(T.int64(4)):" in text   # T.serial without annotations is range
    _round_trips(f)


def test_plain_nested_fors_equal_a_grid_and_range_may_start_at_zero():
    src = '''
        @T.prim_func
        def f(A: T.Buffer((2, 3), "float32")):
            for i in range(0, 2):
                for j in range(3):
                    A[i, j] = T.float32(1)
    '''
    grid = src.replace("for i in range(0, 2):\n                for j in range(3):\n"
                       "                    A", "for i, j in T.grid(2, 3):\n                    A")
    assert structural_equal(parse(src), parse(grid))
    assert "for i, j in T.grid(2, 3):" in str(parse(src))


def test_if_then_else_and_aug_assign_and_negative_literals():
    f = parse('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = T.if_then_else(vi > 1, A[vi], T.float32(-1.5))
                    B[vi] += T.float32(2)
                    if not vi < 2 and vi != 3:
                        B[vi] = B[vi] * -1.0
    ''')
    body = collect_blocks(f.body)[1].block.body
    assert isinstance(body.stmts[0].value, Select)
    assert str(body.stmts[1]) == "B[vi] = B[vi] + T.float32(2)"
    assert "B[vi] = B[vi] * T.float32(-1)" in str(f)
    _round_trips(f)


def test_text_may_be_indented_and_import_lines_are_skipped():
    f = parse('''
        from mlcbook.script import T

        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            """A docstring is skipped too."""
            T.evaluate(0)
    ''')
    assert isinstance(f, PrimFunc) and f.name == "f"


def test_special_floats_and_dtypes_read_back_exactly():
    f = parse(textwrap.dedent('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            A[0] = T.float32("inf")
            A[1] = T.float32("-inf")
            A[2] = T.float32("nan")
            A[3] = T.float32(0.1)
    '''))
    values = [s.value.value for s in f.root_block.body.stmts]
    assert values[:2] == [np.inf, -np.inf] and np.isnan(values[2]) and values[3] == 0.1
    _round_trips(f)


def test_lowered_function_with_allocate_round_trips():
    f = parse('''
        @T.prim_func(root=False)
        def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            with T.allocate((4,), "float32", scope="local") as tmp:
                for i in T.parallel(4):
                    tmp[i] = A[i] * T.float32(2)
                for i in T.vectorized(4):
                    B[i] = tmp[i]
    ''')
    assert isinstance(f.body, mb.tir.Allocate) and f.root_block is None
    _round_trips(f)


def test_num_outputs_comes_from_the_decorator():
    @T.prim_func(num_outputs=2)
    def split(A: T.Buffer((2,), "float32"), B: T.Buffer((1,), "float32"),
              C: T.Buffer((1,), "float32")):
        with T.block("B"):
            B[0] = A[0]
        with T.block("C"):
            C[0] = A[1]

    assert [b.name for b in split.outputs] == ["B", "C"]
    assert str(split).startswith("@T.prim_func(num_outputs=2)\n")
    _round_trips(split)


def test_ir_module_class_decorator_collects_prim_funcs():
    @ir_module
    class Module:
        @T.prim_func
        def main(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
            for i in range(4):
                with T.block("B"):
                    vi = T.axis.spatial(4, i)
                    B[vi] = A[vi] + T.float32(1)

        @prim_func
        def other(A: T.Buffer((4,), "float32")):
            T.evaluate(0)

    assert isinstance(Module, IRModule) and list(Module) == ["main", "other"]
    back = parse(str(Module))
    assert_structural_equal(back, Module)
    assert str(back) == str(Module)


def test_several_functions_in_text_make_a_module():
    text = str(mm_relu) + "\n\n" + str(mm_relu).replace("def mm_relu", "def again")
    mod = parse(text)
    assert isinstance(mod, IRModule) and list(mod) == ["mm_relu", "again"]


def test_mb_script_is_reachable_from_the_package():
    assert mb.script.parse is parse and mb.script.T is T


def test_expression_constructors_work_outside_scripts():
    assert T.float32(0.5).dtype == "float32" and T.int64(3).value == 3
    assert T.float32("inf").value == np.inf
    assert isinstance(T.max(mb.tir.Var("i"), 1), mb.tir.Binary)
    assert T.Cast("float32", 1).dtype == "float32"


def test_parsed_loops_define_fresh_vars_per_scope():
    f = parse('''
        @T.prim_func
        def f(A: T.Buffer((4,), "float32")):
            for i in range(4):
                A[i] = T.float32(0)
            for i in range(4):
                A[i] = T.float32(1)
    ''')
    first, second = f.root_block.body.stmts
    assert isinstance(first, For) and first.loop_var is not second.loop_var
    assert first.body.indices[0] is first.loop_var


def test_where_predicate_and_block_annotations():
    f = parse('''
        @T.prim_func
        def f(A: T.Buffer((10,), "float32")):
            for io, ii in T.grid(3, 4):
                with T.block("A"):
                    v = T.axis.spatial(10, io * 4 + ii)
                    T.where(io * 4 + ii < 10)
                    T.block_attr({"unroll": 4, "tag": "x"})
                    A[v] = T.float32(0)
    ''')
    realize = collect_blocks(f.body)[1]
    assert isinstance(realize, BlockRealize) and str(realize.predicate) == "io * 4 + ii < 10"
    assert realize.block.annotations == (("tag", "x"), ("unroll", 4))
    assert not (isinstance(realize.predicate, Const))
    _round_trips(f)


def test_qualified_names_reach_the_dialect():
    @mb.script.prim_func
    def f(A: mb.script.T.Buffer((4,), "float32")):
        for i in mb.script.T.grid(4):
            A[i] = mb.script.T.float32(1)

    assert "    for i in range(4):\n        A[i] = T.float32(1)" in str(f)


def test_every_dialect_name_exists_on_t():
    for name in dialect.NAMES:
        assert callable(reduce(getattr, name.split("."), T)), name


def test_misspelled_t_attribute_suggests_the_name():
    with pytest.raises(AttributeError, match="did you mean T.grid"):
        T.gird  # noqa: B018
