"""create_prim_func: the loop IR a TE program becomes, and the errors on bad parameter lists."""

import numpy as np
import pytest

import mlcbook as mb
from mlcbook import te, tir
from mlcbook.errors import IndexOutOfBoundsError, TEError
from mlcbook.script import parse
from mlcbook.tir import (Block, BlockRealize, Buffer, BufferRegion, BufferStore, For, IterVar,
                         PrimFunc, Var, assert_structural_equal, const, root_block_realize)
from mlcbook.tir.analysis import collect_blocks


def mm_relu_te(n=128):
    A = te.placeholder((n, n), "float32", name="A")
    B = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis(n, name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="Y")
    C = te.compute((n, n), lambda i, j: tir.max(Y[i, j], const(0.0, "float32")), name="C")
    return te.create_prim_func([A, B, C]), (A, B, Y, C)


def mm_relu_by_hand(n=128):
    """The brief's mm_relu, written with the IR constructors."""
    A, B, C = Buffer("A", (n, n)), Buffer("B", (n, n)), Buffer("C", (n, n))
    Y = Buffer("Y", (n, n))
    i, j, k = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    y_block = Block(
        "Y", (IterVar(vi, n), IterVar(vj, n), IterVar(vk, n, "reduce")),
        (BufferRegion.point(A, (vi, vk)), BufferRegion.point(B, (vk, vj))),
        (BufferRegion.point(Y, (vi, vj)),),
        BufferStore(Y, Y[vi, vj] + A[vi, vk] * B[vk, vj], (vi, vj)),
        init=BufferStore(Y, const(0.0, "float32"), (vi, vj)))
    y_nest = For(i, n, For(j, n, For(k, n, BlockRealize((i, j, k), True, y_block))))
    i2, j2, vi2, vj2 = Var("i"), Var("j"), Var("vi"), Var("vj")
    c_block = Block(
        "C", (IterVar(vi2, n), IterVar(vj2, n)),
        (BufferRegion.point(Y, (vi2, vj2)),), (BufferRegion.point(C, (vi2, vj2)),),
        BufferStore(C, tir.max(Y[vi2, vj2], const(0.0, "float32")), (vi2, vj2)))
    c_nest = For(i2, n, For(j2, n, BlockRealize((i2, j2), True, c_block)))
    return PrimFunc("mm_relu", (A, B, C), root_block_realize(tir.seq(y_nest, c_nest), (Y,)))


MM_RELU_SCRIPT = '''
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
'''


def blocks(func):
    return {r.block.name: r for r in collect_blocks(func.body) if r.block.name != "root"}


def test_mm_relu_equals_the_hand_built_ir():
    func, _ = mm_relu_te()
    assert_structural_equal(func, mm_relu_by_hand())


def test_mm_relu_equals_the_hand_written_script():
    func, _ = mm_relu_te()
    assert_structural_equal(func, parse(MM_RELU_SCRIPT))


def test_mm_relu_runs():
    func, _ = mm_relu_te(16)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 16, 16)).astype("float32")
    c = np.empty((16, 16), "float32")
    mb.tir.interpret(func, a, b, c)
    np.testing.assert_allclose(c, np.maximum(a.astype("float64") @ b, 0), rtol=1e-5, atol=1e-6)


def test_params_and_outputs():
    func, (A, B, Y, C) = mm_relu_te(8)
    assert func.params == (A.buffer, B.buffer, C.buffer)
    assert func.num_outputs == 1 and func.name == "main"
    assert func.root_block.alloc_buffers == (Y.buffer,)


def test_reduction_block_facts():
    func, (A, B, Y, C) = mm_relu_te(8)
    realize = blocks(func)["Y"]
    block = realize.block
    assert [iv.kind for iv in block.iter_vars] == ["spatial", "spatial", "reduce"]
    assert [iv.extent.value for iv in block.iter_vars] == [8, 8, 8]
    # bound to the loops around it, in order, reduce loop innermost
    assert all(isinstance(v, Var) for v in realize.iter_values)
    nest = func.body.block.body.stmts[0]
    loop_vars = []
    while isinstance(nest, For):
        loop_vars.append(nest.loop_var)
        nest = nest.body
    assert nest is realize and tuple(loop_vars) == realize.iter_values
    assert isinstance(block.init, BufferStore) and block.init.value.value == 0.0
    assert [r.buffer.name for r in block.reads] == ["A", "B"]
    assert [r.buffer.name for r in block.writes] == ["Y"]


def test_max_reduction_uses_max_and_minus_infinity():
    A = te.placeholder((3, 5), name="A")
    k = te.reduce_axis(5, name="k")
    M = te.compute((3,), lambda i: te.max(A[i, k], axis=k), name="M")
    block = blocks(te.create_prim_func([A, M]))["M"].block
    assert block.init.value.value == float("-inf")
    assert isinstance(block.body.value, tir.Binary) and block.body.value.op == "max"
    a = np.random.default_rng(1).standard_normal((3, 5)).astype("float32") - 10
    m = np.empty(3, "float32")
    mb.tir.interpret(te.create_prim_func([A, M]), a, m)
    np.testing.assert_array_equal(m, a.max(axis=1))


def test_several_reduce_axes_and_a_range():
    A = te.placeholder((4, 6, 5), name="A")
    r = te.reduce_axis(6, name="r")
    k = te.reduce_axis((1, 4), name="k")   # only k = 1, 2, 3
    S = te.compute((4,), lambda i: te.sum(A[i, r, k], axis=[r, k]), name="S")
    func = te.create_prim_func([A, S])
    assert [iv.kind for iv in blocks(func)["S"].block.iter_vars] == ["spatial", "reduce", "reduce"]
    a = np.random.default_rng(2).standard_normal((4, 6, 5)).astype("float32")
    s = np.empty(4, "float32")
    mb.tir.interpret(func, a, s)
    np.testing.assert_allclose(s, a[:, :, 1:4].astype("float64").sum(axis=(1, 2)), rtol=1e-5)


def test_where_restricts_a_reduction():
    A = te.placeholder((5, 5), name="A")
    k = te.reduce_axis(5, name="k")
    # sum of the lower triangle of each row
    S = te.compute((5,), lambda i: te.sum(A[i, k], axis=k, where=k <= i), name="S")
    a = np.random.default_rng(3).standard_normal((5, 5)).astype("float32")
    s = np.empty(5, "float32")
    mb.tir.interpret(te.create_prim_func([A, S]), a, s)
    np.testing.assert_allclose(s, np.tril(a).astype("float64").sum(axis=1), rtol=1e-5, atol=1e-6)


def test_full_reduction_to_a_scalar():
    A = te.placeholder((3, 4), name="A")
    i, j = te.reduce_axis(3, name="i"), te.reduce_axis(4, name="j")
    S = te.compute((), lambda: te.sum(A[i, j], axis=[i, j]), name="S")
    a = np.random.default_rng(4).standard_normal((3, 4)).astype("float32")
    s = np.empty((), "float32")
    mb.tir.interpret(te.create_prim_func([A, S]), a, s)
    np.testing.assert_allclose(s, a.astype("float64").sum(), rtol=1e-5)


def test_stencil_read_region_is_the_hull():
    A = te.placeholder((10,), name="A")
    B = te.compute((8,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
    block = blocks(te.create_prim_func([A, B]))["B"].block
    (region,) = block.reads
    vi = block.iter_vars[0].var
    assert region.region[0].min is vi and region.region[0].extent.value == 3


def test_unrelated_indices_read_their_bounds():
    A = te.placeholder((10,), name="A")
    B = te.compute((5,), lambda i: A[i] + A[i * 2], name="B")
    (region,) = blocks(te.create_prim_func([A, B]))["B"].block.reads
    assert (region.region[0].min.value, region.region[0].extent.value) == (0, 9)


def test_intermediates_are_allocated_in_topological_order():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((4,), lambda i: C[i] + B[i], name="D")
    func = te.create_prim_func([A, D])
    assert [b.name for b in func.root_block.alloc_buffers] == ["B", "C"]
    assert [r.block.name for r in collect_blocks(func.body)] == ["root", "B", "C", "D"]
    a = np.arange(4, dtype="float32")
    d = np.empty(4, "float32")
    mb.tir.interpret(func, a, d)
    np.testing.assert_array_equal(d, (a + 1) * 2 + (a + 1))


def test_several_outputs():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: B[i] * 2.0, name="C")
    func = te.create_prim_func([A, B, C])
    assert func.num_outputs == 2 and func.root_block.alloc_buffers == ()
    a, b, c = np.arange(4, dtype="float32"), np.empty(4, "float32"), np.empty(4, "float32")
    mb.tir.interpret(func, a, b, c)
    np.testing.assert_array_equal(b, a + 1)
    np.testing.assert_array_equal(c, (a + 1) * 2)


def test_clashing_intermediate_names_are_made_unique():
    A = te.placeholder((4,), name="A")
    B1 = te.compute((4,), lambda i: A[i] + 1.0)        # default name "compute"
    B2 = te.compute((4,), lambda i: B1[i] * 2.0)       # also "compute"
    C = te.compute((4,), lambda i: B2[i] - 1.0, name="compute_1")
    func = te.create_prim_func([A, C])
    names = [r.block.name for r in collect_blocks(func.body)]
    assert names == ["root", "compute", "compute_2", "compute_1"]
    a, c = np.arange(4, dtype="float32"), np.empty(4, "float32")
    mb.tir.interpret(func, a, c)
    np.testing.assert_array_equal(c, (a + 1) * 2 - 1)


def test_unused_input_is_allowed():
    A, B = te.placeholder((4,), name="A"), te.placeholder((4,), name="B")
    C = te.compute((4,), lambda i: A[i] * 2.0, name="C")
    assert te.create_prim_func([A, B, C]).params[1] is B.buffer


def test_function_name():
    A = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A[i], name="C")
    assert te.create_prim_func([A, C], name="copy").name == "copy"


# --- errors --------------------------------------------------------------------------------------
def test_output_before_input_is_rejected():
    _, (A, B, _, C) = mm_relu_te(4)
    with pytest.raises(TEError, match="computed tensor 'C' comes before placeholder 'A'; list the "
                                      "inputs"):
        te.create_prim_func([C, A, B])


def test_missing_input_is_named():
    _, (A, B, Y, C) = mm_relu_te(4)
    with pytest.raises(TEError, match="placeholder 'B', read by 'Y', is missing from the list"):
        te.create_prim_func([A, C])


def test_no_output_is_rejected():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="the list has no computed tensor"):
        te.create_prim_func([A])


def test_tensor_listed_twice():
    A = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A[i], name="C")
    with pytest.raises(TEError, match="tensor 'A' is listed twice"):
        te.create_prim_func([A, A, C])


def test_parameters_with_the_same_name():
    A1, A2 = te.placeholder((4,), name="A"), te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A1[i] + A2[i], name="C")
    with pytest.raises(TEError, match="two tensors are named 'A'"):
        te.create_prim_func([A1, A2, C])


def test_non_tensor_in_the_list():
    A = te.placeholder((4,), name="A")
    with pytest.raises(TEError, match="item 1 of the list is 3, not a te tensor"):
        te.create_prim_func([A, 3])


def test_single_tensor_instead_of_a_list():
    A = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A[i], name="C")
    with pytest.raises(TEError, match=r"takes a list of tensors, e.g. \[A, B, C\]"):
        te.create_prim_func(C)


def test_out_of_bounds_read_is_caught_by_the_verifier():
    A = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: A[i + 1], name="C")
    with pytest.raises(IndexOutOfBoundsError, match=r"A\[vi \+ 1\] in block 'C'"):
        te.create_prim_func([A, C])


def test_compute_attrs_become_the_block_annotations():
    A = te.placeholder((4,), "float32", name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B", attrs={"keep_materialized": True})
    func = te.create_prim_func([A, B])
    block = next(r.block for r in collect_blocks(func.body) if r.block.name == "B")
    assert block.annotations == (("keep_materialized", True),)
    assert 'T.block_attr({"keep_materialized": True})' in str(func)


def test_compute_attrs_must_be_a_dict_of_str_keys():
    A = te.placeholder((4,), "float32", name="A")
    with pytest.raises(TEError, match=r"compute 'B': attrs must be a dict with non-empty str "
                       r"keys, got \[\('x', 1\)\]"):
        te.compute((4,), lambda i: A[i], name="B", attrs=[("x", 1)])
