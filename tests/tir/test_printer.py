"""The printer: exact text for each construct, minimal parentheses, unique names."""

import math
import textwrap

import pytest

from mlcbook.tir import (Allocate, Block, BlockRealize, Buffer, BufferRegion, BufferStore, Cast,
                         Const, Evaluate, For, IfThenElse, IRModule, IterVar, PrimFunc, Range,
                         Unary, Var, const, exp, max, root_block_realize, select, seq)
from mlcbook.tir.printer import expr_to_str, stmt_to_str, to_html

from ._programs import matmul

i, j = Var("i"), Var("j")
x, y = Var("x", "float32"), Var("y", "float32")
b, c = Var("b", "bool"), Var("c", "bool")


def _text(s: str) -> str:
    return textwrap.dedent(s).strip("\n")


@pytest.mark.parametrize("e, text", [
    ((i + j) * 4, "(i + j) * 4"),
    (i + j * 4, "i + j * 4"),
    (i - (j - 1), "i - (j - 1)"),
    ((i - j) - 1, "i - j - 1"),
    (i // (j * 2), "i // (j * 2)"),
    (i * -j, "i * -j"),
    (-(i + j), "-(i + j)"),
    (Unary("-", Const(5, "int32")), "-T.int32(5)"),
    (Unary("-", Const(-5, "int32")), "--5"),
    (i * -3, "i * -3"),
    ((i < j) == (j < i), "(i < j) == (j < i)"),
    (~(b & c), "not (b and c)"),
    (~b & c, "not b and c"),
    (b | (c & b), "b or c and b"),
    ((b | c) & b, "(b or c) and b"),
    (b & (c & b), "b and (c and b)"),
    (max(x, 0.0) / exp(y), "T.max(x, T.float32(0)) / T.exp(y)"),
    (select(i < 4, x, y), "T.select(i < 4, x, y)"),
    (Cast("float32", i) * x, 'T.Cast("float32", i) * x'),
])
def test_expression_parentheses_follow_python_precedence(e, text):
    assert expr_to_str(e) == text


@pytest.mark.parametrize("value, dtype, text", [
    (7, "int32", "7"),
    (-7, "int32", "-7"),
    (7, "int64", "T.int64(7)"),
    (3, "uint8", "T.uint8(3)"),
    (0.5, "float32", "T.float32(0.5)"),
    (2.0, "float64", "T.float64(2)"),
    (0.1, "float32", "T.float32(0.1)"),
    (-0.0, "float32", "T.float32(-0.0)"),
    (1e300, "float64", "T.float64(1e+300)"),
    (math.inf, "float32", 'T.float32("inf")'),
    (-math.inf, "float16", 'T.float16("-inf")'),
    (math.nan, "float32", 'T.float32("nan")'),
    (True, "bool", "True"),
])
def test_constants_name_their_dtype_unless_int32_or_bool(value, dtype, text):
    assert expr_to_str(Const(value, dtype)) == text


def test_matmul_prints_grid_remap_init():
    assert str(matmul(4, 4, 4)) == _text('''
        @T.prim_func
        def matmul(
            A: T.Buffer((4, 4), "float32"),
            B: T.Buffer((4, 4), "float32"),
            C: T.Buffer((4, 4), "float32"),
        ):
            for i, j, k in T.grid(4, 4, 4):
                with T.block("C"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    T.reads(A[vi, vk], B[vk, vj])
                    T.writes(C[vi, vj])
                    with T.init():
                        C[vi, vj] = T.float32(0)
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]''')


def test_short_signature_stays_on_one_line():
    A, B = Buffer("A", (4,)), Buffer("B", (4,))
    f = PrimFunc("copy", (A, B), root_block_realize(BufferStore(B, A[0], (0,))))
    assert str(f).splitlines()[1] == \
        'def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):'


def _block(name, ivs, values, body, pred=True, **kw):
    blk = Block(name, tuple(ivs), kw.pop("reads", ()), kw.pop("writes", ()), body, **kw)
    return BlockRealize(tuple(values), pred, blk)


def test_bindings_that_are_not_bare_loop_vars_print_one_per_line():
    A = Buffer("A", (8,))
    io, ii, v = Var("io"), Var("ii"), Var("v")
    blk = _block("A", [IterVar(v, 8)], [io * 4 + ii], BufferStore(A, 1.0, (v,)),
                 pred=io * 4 + ii < 7, writes=(BufferRegion(A, (Range(v * 2, 2),)),))
    body = For(io, 2, For(ii, 4, blk))
    assert str(PrimFunc("f", (A,), root_block_realize(body))) == _text('''
        @T.prim_func
        def f(A: T.Buffer((8,), "float32")):
            for io, ii in T.grid(2, 4):
                with T.block("A"):
                    v = T.axis.spatial(8, io * 4 + ii)
                    T.where(io * 4 + ii < 7)
                    T.reads()
                    T.writes(A[v * 2:v * 2 + 2])
                    A[v] = T.float32(1)''')


def test_region_forms():
    A = Buffer("A", (8, 8, 8, 8))
    v = Var("v")
    r = BufferRegion(A, (Range(v, 1), Range(0, 8), Range(2, 3), Range(v, Const(1, "int64"))))
    blk = _block("B", [IterVar(v, 8)], [0], Evaluate(const(0)), reads=(r,))
    assert "    T.reads(A[v, 0:8, 2:5, v:v + T.int64(1)])" in stmt_to_str(blk).splitlines()


def test_colliding_and_reserved_names_are_made_unique():
    A = Buffer("A", (4, 4))
    i1, i2, t = Var("i"), Var("i"), Var("T")
    body = For(i1, 4, For(i2, 4, For(t, 4, BufferStore(A, 0.0, (i1, i2)), "parallel")))
    text = str(PrimFunc("f", (A,), root_block_realize(body)))
    assert "for i, i_1 in T.grid(4, 4):" in text
    assert "for T_1 in T.parallel(4):" in text
    assert "A[i, i_1] = T.float32(0)" in text


def test_sibling_loops_reuse_names():
    A = Buffer("A", (4,))
    loops = [For(Var("i"), 4, BufferStore(A, 0.0, (0,))) for _ in range(2)]
    text = str(PrimFunc("f", (A,), root_block_realize(seq(*loops))))
    assert text.count("for i in range(4):") == 2


def test_loop_kinds_annotations_and_dtypes():
    A = Buffer("A", (4,))
    store = lambda v: BufferStore(A, 0.0, (Cast("int32", v),))  # noqa: E731
    k = Var("k", "int64")
    cases = [
        (For(i, 4, store(i), "vectorized"), "for i in T.vectorized(4):"),
        (For(i, 4, store(i), "unrolled"), "for i in T.unroll(4):"),
        (For(i, 4, store(i), "serial", {"pragma": 1}),
         'for i in T.serial(4, annotations={"pragma": 1}):'),
        (For(k, Const(4, "int64"), store(k)), "for k in range(T.int64(4)):"),
        (For(k, 4, store(k), "parallel"), 'for k in T.parallel(4, dtype="int64"):'),
    ]
    for loop, head in cases:
        assert stmt_to_str(loop).splitlines()[0] == head


def test_grid_stops_at_annotated_or_dependent_loops():
    A = Buffer("A", (4,))
    a, bb, cc = Var("a"), Var("b"), Var("c")
    nest = For(a, 4, For(bb, a + 1, For(cc, 4, BufferStore(A, 0.0, (cc,)), "serial", {"x": 1})))
    assert stmt_to_str(nest).splitlines()[:3] == [
        "for a in range(4):", "    for b in range(a + 1):",
        '        for c in T.serial(4, annotations={"x": 1}):']


def test_if_elif_else_allocate_evaluate():
    A = Buffer("A", (4,))
    tmp = Buffer("tmp", (2,), "float32", "local")
    s = IfThenElse(i < 1, BufferStore(A, 1.0, (0,)),
                   IfThenElse(i < 2, Allocate(tmp, BufferStore(tmp, 2.0, (0,))),
                              Evaluate(const(0))))
    assert stmt_to_str(s) == _text('''
        if i < 1:
            A[0] = T.float32(1)
        elif i < 2:
            with T.allocate((2,), "float32", scope="local") as tmp:
                tmp[0] = T.float32(2)
        else:
            T.evaluate(0)''')


def test_root_allocations_attrs_and_outputs():
    A, Y, C = Buffer("A", (4,)), Buffer("Y", (4,), "float32", "local"), Buffer("C", (4,))
    body = root_block_realize(seq(BufferStore(Y, A[0], (0,)), BufferStore(C, Y[0], (0,))), (Y,))
    f = PrimFunc("f", (A, C), body, num_outputs=2, attrs={"global_symbol": "f", "tir.noalias": True})
    assert str(f) == _text('''
        @T.prim_func(num_outputs=2)
        def f(A: T.Buffer((4,), "float32"), C: T.Buffer((4,), "float32")):
            T.func_attr({"global_symbol": "f", "tir.noalias": True})
            Y = T.alloc_buffer((4,), "float32", scope="local")
            Y[0] = A[0]
            C[0] = Y[0]''')


def test_body_without_root_block_is_marked():
    A = Buffer("A", (4,))
    f = PrimFunc("f", (A,), For(i, 4, BufferStore(A, 0.0, (i,))))
    assert str(f).splitlines()[:3] == [
        "@T.prim_func(root=False)", 'def f(A: T.Buffer((4,), "float32")):',
        "    for i in range(4):"]


def test_root_block_with_annotations_is_printed_explicitly():
    A = Buffer("A", (4,))
    root = root_block_realize(BufferStore(A, 0.0, (0,)))
    import dataclasses
    root = dataclasses.replace(root, block=dataclasses.replace(root.block, annotations={"k": 1}))
    text = str(PrimFunc("f", (A,), root))
    assert text.splitlines()[0] == "@T.prim_func(root=False)"
    assert 'with T.block("root"):' in text and 'T.block_attr({"k": 1})' in text


def test_block_allocations_and_annotations_are_shown_in_the_block():
    tmp = Buffer("tmp", (4,))
    blk = _block("B", [], [], BufferStore(tmp, 0.0, (0,)), alloc_buffers=(tmp,),
                 annotations={"meta": "x"})
    assert stmt_to_str(blk) == _text('''
        with T.block("B"):
            T.reads()
            T.writes()
            T.block_attr({"meta": "x"})
            tmp = T.alloc_buffer((4,), "float32")
            tmp[0] = T.float32(0)''')


def test_module_prints_as_class_with_methods_named_by_key():
    mod = IRModule({"mm": matmul(2, 2, 2), "other": matmul(2, 2, 2)})
    lines = str(mod).splitlines()
    assert lines[:5] == ["@T.ir_module", "class Module:", "    @T.prim_func", "    def mm(",
                         '        A: T.Buffer((2, 2), "float32"),']
    assert "" in lines and "    def other(" in lines


def test_html_is_highlighted_with_inline_styles():
    html = matmul()._repr_html_()
    assert html.startswith("<div") and "<span style=" in html
    assert "prim_func" in html and to_html("x = 1").count("<span") >= 2
