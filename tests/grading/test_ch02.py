"""Chapter 2's exercises: plausible wrong answers earn zero, with a message that says why.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

# No `from __future__ import annotations` here: it would turn the buffer annotations of the
# @T.prim_func answers below into strings, which hide the sizes they use from the closure.

import pytest

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook.script import T

from .conftest import zero


# --- 02.bmm_relu -----------------------------------------------------------------------------
def _bmm(kinds="SSSR", relu=True, batch_of_b=True, short_y=0):
    def make_bmm_relu(BATCH, N, M, K):
        NY = N - short_y

        @T.prim_func
        def bmm_relu(A: T.Buffer((BATCH, N, K), "float32"),
                     B: T.Buffer((BATCH, K, M), "float32"),
                     C: T.Buffer((BATCH, N, M), "float32")):
            Y = T.alloc_buffer((BATCH, N, M), "float32")
            for b, i, j, k in T.grid(BATCH, NY, M, K):
                with T.block("Y"):
                    vb, vi, vj, vk = T.axis.remap(kinds, [b, i, j, k])
                    with T.init():
                        Y[vb, vi, vj] = T.float32(0)
                    Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]
            for b, i, j in T.grid(BATCH, N, M):
                with T.block("C"):
                    vb, vi, vj = T.axis.remap("SSS", [b, i, j])
                    C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))

        @T.prim_func
        def bmm_no_relu(A: T.Buffer((BATCH, N, K), "float32"),
                        B: T.Buffer((BATCH, K, M), "float32"),
                        C: T.Buffer((BATCH, N, M), "float32")):
            for b, i, j, k in T.grid(BATCH, N, M, K):
                with T.block("C"):
                    vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                    with T.init():
                        C[vb, vi, vj] = T.float32(0)
                    C[vb, vi, vj] = C[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]

        @T.prim_func
        def bmm_b0(A: T.Buffer((BATCH, N, K), "float32"), B: T.Buffer((BATCH, K, M), "float32"),
                   C: T.Buffer((BATCH, N, M), "float32")):
            Y = T.alloc_buffer((BATCH, N, M), "float32")
            for b, i, j, k in T.grid(BATCH, N, M, K):
                with T.block("Y"):
                    vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                    with T.init():
                        Y[vb, vi, vj] = T.float32(0)
                    Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, vk] * B[0, vk, vj]
            for b, i, j in T.grid(BATCH, N, M):
                with T.block("C"):
                    vb, vi, vj = T.axis.remap("SSS", [b, i, j])
                    C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))

        if not relu:
            return bmm_no_relu
        return bmm_relu if batch_of_b else bmm_b0
    return make_bmm_relu


def test_bmm_relu_reference_form_passes():
    assert grading.check("02.bmm_relu", _bmm()).passed


def test_bmm_relu_reduce_axis_declared_spatial():
    message = zero("02.bmm_relu", _bmm(kinds="SSSS"))
    assert message.startswith("block 'Y': iteration variable vk is spatial, but it should be "
                              "reduce: the block writes Y[vb, vi, vj]")
    assert "T.axis.reduce" in message


def test_bmm_relu_spatial_axis_declared_reduce():
    message = zero("02.bmm_relu", _bmm(kinds="SRSR"))
    assert message.startswith("block 'Y': iteration variable vi is reduce, but it should be "
                              "spatial")


def test_bmm_relu_missing_relu():
    message = zero("02.bmm_relu", _bmm(relu=False))
    assert "values differ: C[" in message and "C equals A @ B: apply relu" in message


def test_bmm_relu_first_batch_of_b():
    assert "every batch was multiplied by B[0]" in zero("02.bmm_relu", _bmm(batch_of_b=False))


def test_bmm_relu_off_by_one_reads_unwritten_intermediate():
    message = zero("02.bmm_relu", _bmm(short_y=1))
    assert "is nan" in message and "read an element of an intermediate buffer" in message
    assert "on A of shape" in message


def test_bmm_relu_fixed_sizes():
    fixed = _bmm()(2, 3, 4, 5)
    message = zero("02.bmm_relu", lambda BATCH, N, M, K: fixed)
    assert message.startswith("wrong shape: parameter #1 (A, the input A) of the program built "
                              "by make_bmm_relu(")
    assert "build every shape from the sizes passed to make_bmm_relu" in message


def test_bmm_relu_forgot_return():
    def make_bmm_relu(BATCH, N, M, K):
        _bmm()(BATCH, N, M, K)
    message = zero("02.bmm_relu", make_bmm_relu)
    assert message.startswith("make_bmm_relu(")
    assert "returned None: end make_bmm_relu with `return`" in message


def test_bmm_relu_block_peeking_at_a_loop_variable():
    def make_bmm_relu(BATCH, N, M, K):
        @T.prim_func
        def bmm_relu(A: T.Buffer((BATCH, N, K), "float32"),
                     B: T.Buffer((BATCH, K, M), "float32"),
                     C: T.Buffer((BATCH, N, M), "float32")):
            Y = T.alloc_buffer((BATCH, N, M), "float32")
            for b, i, j, k in T.grid(BATCH, N, M, K):
                with T.block("Y"):
                    vb, vi, vj = T.axis.remap("SSS", [b, i, j])
                    Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, k] * B[vb, k, vj]
            for b, i, j in T.grid(BATCH, N, M):
                with T.block("C"):
                    vb, vi, vj = T.axis.remap("SSS", [b, i, j])
                    C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))
        return bmm_relu
    message = zero("02.bmm_relu", make_bmm_relu)
    assert message.startswith("make_bmm_relu raised UndefinedVariableError: [MLC-T001] "
                              "variable 'k' is used inside block 'Y'")


# --- 02.conv2d -------------------------------------------------------------------------------
def _conv(kinds="SSSSRRR", flip=False, first_channel=False, short=0):
    def make_conv2d(N, CI, H, W, CO, KH, KW):
        OH, OW = H - KH + 1 - short, W - KW + 1
        CIN = 1 if first_channel else CI
        FH, FW = (KH - 1, KW - 1) if flip else (0, 0)
        SY, SX = (-1, -1) if flip else (1, 1)

        @T.prim_func
        def conv2d(X: T.Buffer((N, CI, H, W), "float32"),
                   Wt: T.Buffer((CO, CI, KH, KW), "float32"),
                   Y: T.Buffer((N, CO, OH, OW), "float32")):
            for n, o, y, x, c, dy, dx in T.grid(N, CO, OH, OW, CIN, KH, KW):
                with T.block("Y"):
                    vn, vo, vy, vx, vc, vdy, vdx = T.axis.remap(kinds, [n, o, y, x, c, dy, dx])
                    with T.init():
                        Y[vn, vo, vy, vx] = T.float32(0)
                    Y[vn, vo, vy, vx] = Y[vn, vo, vy, vx] + X[vn, vc, vy + vdy, vx + vdx] * Wt[
                        vo, vc, FH + SY * vdy, FW + SX * vdx]
        return conv2d
    return make_conv2d


def test_conv2d_reference_form_passes():
    assert grading.check("02.conv2d", _conv()).passed


def test_conv2d_channel_axis_declared_spatial():
    message = zero("02.conv2d", _conv(kinds="SSSSSRR"))
    assert message.startswith("block 'Y': iteration variable vc is spatial, but it should be "
                              "reduce: the block writes Y[vn, vo, vy, vx]")


def test_conv2d_flipped_kernel():
    assert "kernel flipped" in zero("02.conv2d", _conv(flip=True))


def test_conv2d_first_channel_only():
    assert "only input channel 0 was used" in zero("02.conv2d", _conv(first_channel=True))


def test_conv2d_off_by_one_output_shape():
    message = zero("02.conv2d", _conv(short=1))
    assert message.startswith("wrong shape: parameter #3 (Y, the output Y)")
    assert "dimension 2 is off by one" in message


def test_conv2d_sum_hidden_in_a_loop_inside_the_block():
    def make_conv2d(N, CI, H, W, CO, KH, KW):
        OH, OW = H - KH + 1, W - KW + 1

        @T.prim_func
        def conv2d(X: T.Buffer((N, CI, H, W), "float32"),
                   Wt: T.Buffer((CO, CI, KH, KW), "float32"),
                   Y: T.Buffer((N, CO, OH, OW), "float32")):
            for n, o, y, x in T.grid(N, CO, OH, OW):
                with T.block("Y"):
                    vn, vo, vy, vx = T.axis.remap("SSSS", [n, o, y, x])
                    Y[vn, vo, vy, vx] = T.float32(0)
                    for c, dy, dx in T.grid(CI, KH, KW):
                        Y[vn, vo, vy, vx] = Y[vn, vo, vy, vx] + X[vn, c, vy + dy, vx + dx] * Wt[
                            vo, c, dy, dx]
        return conv2d
    message = zero("02.conv2d", make_conv2d)
    assert message.startswith("no block has a reduce iteration variable, but the program sums "
                              "over the input channels and the kernel window")


# --- 02.te_linear_relu -----------------------------------------------------------------------
def _linear(relu=True, bias=True, relu_first=False, order="XWBY"):
    def make_linear_relu(N, M, K):
        X = mb.te.placeholder((N, K), "float32", name="X")
        W = mb.te.placeholder((M, K), "float32", name="W")
        B = mb.te.placeholder((M,), "float32", name="B")
        k = mb.te.reduce_axis(K, name="k")
        Z = mb.te.compute((N, M), lambda i, j: mb.te.sum(X[i, k] * W[j, k], axis=k), name="Z")

        def out(i, j):
            if relu_first:
                return mb.tir.max(Z[i, j], 0.0) + B[j]
            z = Z[i, j] + B[j] if bias else Z[i, j] + 0.0
            return mb.tir.max(z, 0.0) if relu else z
        Y = mb.te.compute((N, M), out, name="Y")
        tensors = {"X": X, "W": W, "B": B, "Y": Y}
        return mb.te.create_prim_func([tensors[c] for c in order])
    return make_linear_relu


def test_linear_relu_reference_form_passes():
    assert grading.check("02.te_linear_relu", _linear()).passed


@pytest.mark.parametrize("kwargs, hint", [
    ({"relu": False}, "Y equals X @ W.T + B: apply relu"),
    ({"bias": False}, "the bias is missing"),
    ({"relu_first": True}, "relu was applied before adding the bias"),
])
def test_linear_relu_mistakes(kwargs, hint):
    message = zero("02.te_linear_relu", _linear(**kwargs))
    assert message.startswith("values differ: Y[") and hint in message


def test_linear_relu_parameters_in_the_wrong_order():
    message = zero("02.te_linear_relu", _linear(order="XBWY"))
    assert message.startswith("wrong shape: parameter #2 (B, the weight W)")
    assert "that is the shape of the bias B: the parameters go in the order X, W, B, Y" in message


def test_linear_relu_returns_the_tensor_not_the_function():
    def make_linear_relu(N, M, K):
        X = mb.te.placeholder((N, K), "float32", name="X")
        return mb.te.compute((N, M), lambda i, j: X[i, 0], name="Y")
    message = zero("02.te_linear_relu", make_linear_relu)
    assert "returned Tensor" in message and "te.create_prim_func" in message


# --- 02.te_softmax ---------------------------------------------------------------------------
def _softmax(stable=True, axis=1, divide=True):
    def make_softmax(N, M):
        X = mb.te.placeholder((N, M), "float32", name="X")
        n_red = M if axis == 1 else N

        def at(t, i, r):  # element r of row i along the softmax axis
            return t[i, r] if axis == 1 else t[r, i]
        rows = N if axis == 1 else M
        k1 = mb.te.reduce_axis(n_red, name="k1")
        mx = mb.te.compute((rows,), lambda i: mb.te.max(at(X, i, k1), axis=k1), name="mx")
        if axis == 1:
            E = mb.te.compute((N, M), lambda i, j: mb.tir.exp(
                X[i, j] - (mx[i] if stable else 0.0)), name="E")
        else:
            E = mb.te.compute((N, M), lambda i, j: mb.tir.exp(
                X[i, j] - (mx[j] if stable else 0.0)), name="E")
        k2 = mb.te.reduce_axis(n_red, name="k2")
        s = mb.te.compute((rows,), lambda i: mb.te.sum(at(E, i, k2), axis=k2), name="s")
        if not divide:
            Y = mb.te.compute((N, M), lambda i, j: E[i, j] + 0.0 * s[0], name="Y")
        elif axis == 1:
            Y = mb.te.compute((N, M), lambda i, j: E[i, j] / s[i], name="Y")
        else:
            Y = mb.te.compute((N, M), lambda i, j: E[i, j] / s[j], name="Y")
        return mb.te.create_prim_func([X, Y])
    return make_softmax


def test_softmax_reference_form_passes():
    assert grading.check("02.te_softmax", _softmax()).passed


def test_softmax_library_operator_passes():
    def make_softmax(N, M):
        X = mb.te.placeholder((N, M), "float32", name="X")
        return mb.te.create_prim_func([X, mb.te.ops.softmax(X, axis=-1)])
    assert grading.check("02.te_softmax", make_softmax).passed


def test_softmax_unstable_overflows():
    message = zero("02.te_softmax", _softmax(stable=False))
    assert "overflowed or divided by zero" in message and "(large values)" in message
    assert "subtract each row's maximum" in message


def test_softmax_wrong_axis():
    message = zero("02.te_softmax", _softmax(axis=0))
    assert "values differ: Y[" in message and "softmax of each column (axis 0)" in message


def test_softmax_forgets_to_divide():
    assert "do not sum to 1" in zero("02.te_softmax", _softmax(divide=False))


# --- 02.loop_order ---------------------------------------------------------------------------
def _split(order="reordered", vj="j0 * 4 + j1", relu="inside"):
    """mm_relu with j split by 4; the keyword arguments pick one mistake."""
    def make_mm_relu_split(N, M, K):
        M4 = M // 4

        @T.prim_func
        def reordered(A: T.Buffer((N, K), "float32"), B: T.Buffer((K, M), "float32"),
                      C: T.Buffer((N, M), "float32")):
            Y = T.alloc_buffer((N, M), "float32")
            for i, j0 in T.grid(N, M4):
                for k, j1 in T.grid(K, 4):
                    with T.block("Y"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j0 * 4 + j1)
                        vk = T.axis.reduce(K, k)
                        with T.init():
                            Y[vi, vj] = T.float32(0)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
                for ax in range(4):
                    with T.block("C"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j0 * 4 + ax)
                        C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

        @T.prim_func
        def not_reordered(A: T.Buffer((N, K), "float32"), B: T.Buffer((K, M), "float32"),
                          C: T.Buffer((N, M), "float32")):
            Y = T.alloc_buffer((N, M), "float32")
            for i, j0 in T.grid(N, M4):
                for j1, k in T.grid(4, K):
                    with T.block("Y"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j0 * 4 + j1)
                        vk = T.axis.reduce(K, k)
                        with T.init():
                            Y[vi, vj] = T.float32(0)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
                for ax in range(4):
                    with T.block("C"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j0 * 4 + ax)
                        C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

        @T.prim_func
        def strided(A: T.Buffer((N, K), "float32"), B: T.Buffer((K, M), "float32"),
                    C: T.Buffer((N, M), "float32")):
            Y = T.alloc_buffer((N, M), "float32")
            for i, j0 in T.grid(N, M4):
                for k, j1 in T.grid(K, 4):
                    with T.block("Y"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j1 * M4 + j0)
                        vk = T.axis.reduce(K, k)
                        with T.init():
                            Y[vi, vj] = T.float32(0)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            for i, j in T.grid(N, M):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

        @T.prim_func
        def relu_outside(A: T.Buffer((N, K), "float32"), B: T.Buffer((K, M), "float32"),
                         C: T.Buffer((N, M), "float32")):
            Y = T.alloc_buffer((N, M), "float32")
            for i, j0 in T.grid(N, M4):
                for k, j1 in T.grid(K, 4):
                    with T.block("Y"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j0 * 4 + j1)
                        vk = T.axis.reduce(K, k)
                        with T.init():
                            Y[vi, vj] = T.float32(0)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            for i, j in T.grid(N, M):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

        @T.prim_func
        def relu_first(A: T.Buffer((N, K), "float32"), B: T.Buffer((K, M), "float32"),
                       C: T.Buffer((N, M), "float32")):
            Y = T.alloc_buffer((N, M), "float32")
            for i, j0 in T.grid(N, M4):
                for ax in range(4):
                    with T.block("C"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j0 * 4 + ax)
                        C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
                for k, j1 in T.grid(K, 4):
                    with T.block("Y"):
                        vi = T.axis.spatial(N, i)
                        vj = T.axis.spatial(M, j0 * 4 + j1)
                        vk = T.axis.reduce(K, k)
                        with T.init():
                            Y[vi, vj] = T.float32(0)
                        Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]

        if order != "reordered":
            return not_reordered
        if vj != "j0 * 4 + j1":
            return strided
        return {"inside": reordered, "outside": relu_outside, "first": relu_first}[relu]
    return make_mm_relu_split


def test_split_reference_form_passes():
    assert grading.check("02.loop_order", _split()).passed


def test_split_without_reorder():
    message = zero("02.loop_order", _split(order="i, j0, j1, k"))
    assert message.startswith("the loops around block 'Y' are (i: ")
    assert "expected i: " in message and "put k between them" in message


def test_split_with_strided_binding():
    message = zero("02.loop_order", _split(vj="j1 * M4 + j0"))
    assert message.startswith("block 'Y': iteration variable vj (the column) is bound to j1 * ")
    assert "expected j0 * 4 + j1" in message


def test_split_relu_not_moved():
    message = zero("02.loop_order", _split(relu="outside"))
    assert message.startswith("the loops around block 'C' are (i: ")
    assert "put the relu loop inside the j0 loop" in message


def test_split_relu_before_the_sums():
    message = zero("02.loop_order", _split(relu="first"))
    assert "is nan" in message and "runs before the block that reads it" in message


def test_split_original_mm_relu_is_not_enough():
    def make_mm_relu_split(N, M, K):
        @T.prim_func
        def mm_relu(A: T.Buffer((N, K), "float32"), B: T.Buffer((K, M), "float32"),
                    C: T.Buffer((N, M), "float32")):
            Y = T.alloc_buffer((N, M), "float32")
            for i, j, k in T.grid(N, M, K):
                with T.block("Y"):
                    vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                    with T.init():
                        Y[vi, vj] = T.float32(0)
                    Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
            for i, j in T.grid(N, M):
                with T.block("C"):
                    vi, vj = T.axis.remap("SS", [i, j])
                    C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
        return mm_relu
    message = zero("02.loop_order", make_mm_relu_split)
    assert message.startswith("the loops around block 'Y' are (i: ")


def test_split_wrong_block_names():
    def make_mm_relu_split(N, M, K):
        func = _split()(N, M, K)
        return mb.script.parse(str(func).replace('T.block("C")', 'T.block("relu")'))
    message = zero("02.loop_order", make_mm_relu_split)
    assert message.startswith("the program has no block named 'C' (it has 'Y', 'relu')")


def test_split_iteration_variables_in_another_order():
    def make_mm_relu_split(N, M, K):
        text = str(_split()(N, M, K))
        vk_line = [line for line in text.splitlines() if "vk = T.axis.reduce" in line][0]
        vi_line = [line for line in text.splitlines() if "vi = T.axis.spatial" in line][0]
        text = text.replace(vk_line, "@@").replace(vi_line, vk_line, 1).replace("@@", vi_line)
        return mb.script.parse(text)
    message = zero("02.loop_order", make_mm_relu_split)
    assert message.startswith("block 'Y' declares its iteration variables in the order "
                              "vk (reduce), vj (spatial), vi (spatial)")


# --- a reduction without T.init() ----------------------------------------------------------------
def _bmm_relu_init(style):
    """bmm_relu whose block Y starts its sums with T.init() ("init"), a block of its own
    ("block", as decompose_reduction writes it), or not at all ("none")."""
    def make_bmm_relu(BATCH, N, M, K):
        @T.prim_func
        def with_init_block(A: T.Buffer((BATCH, N, K), "float32"),
                            B: T.Buffer((BATCH, K, M), "float32"),
                            C: T.Buffer((BATCH, N, M), "float32")):
            Y = T.alloc_buffer((BATCH, N, M), "float32")
            for b, i, j in T.grid(BATCH, N, M):
                with T.block("Y_init"):
                    vb, vi, vj = T.axis.remap("SSS", [b, i, j])
                    Y[vb, vi, vj] = T.float32(0)
            for b, i, j, k in T.grid(BATCH, N, M, K):
                with T.block("Y"):
                    vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                    Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]
            for b, i, j in T.grid(BATCH, N, M):
                with T.block("C"):
                    vb, vi, vj = T.axis.remap("SSS", [b, i, j])
                    C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))

        @T.prim_func
        def without_init(A: T.Buffer((BATCH, N, K), "float32"),
                         B: T.Buffer((BATCH, K, M), "float32"),
                         C: T.Buffer((BATCH, N, M), "float32")):
            Y = T.alloc_buffer((BATCH, N, M), "float32")
            for b, i, j, k in T.grid(BATCH, N, M, K):
                with T.block("Y"):
                    vb, vi, vj, vk = T.axis.remap("SSSR", [b, i, j, k])
                    Y[vb, vi, vj] = Y[vb, vi, vj] + A[vb, vi, vk] * B[vb, vk, vj]
            for b, i, j in T.grid(BATCH, N, M):
                with T.block("C"):
                    vb, vi, vj = T.axis.remap("SSS", [b, i, j])
                    C[vb, vi, vj] = T.max(Y[vb, vi, vj], T.float32(0))

        return {"block": with_init_block, "none": without_init}[style]
    return make_bmm_relu


def test_a_reduction_without_init_is_pointed_at_the_init():
    message = zero("02.bmm_relu", _bmm_relu_init("none"))
    assert message.startswith("block 'Y' reduces over vk but has no `with T.init():`, so "
                              "nothing sets Y[vb, vi, vj] before the first update adds to it")
    assert "hint: put `with T.init(): Y[vb, vi, vj] = T.float32(0)` in block 'Y'" in message
    assert "loop ranges" not in message


def test_a_reduction_started_by_a_block_of_its_own_passes():
    result = grading.check("02.bmm_relu", _bmm_relu_init("block"))
    assert result.passed, str(result)


def test_te_softmax_subtracting_the_global_max_scores_zero():
    def make_softmax(N, M):
        te = mb.te
        X = te.placeholder((N, M), "float32", name="X")
        k0, k1 = te.reduce_axis(N, name="k0"), te.reduce_axis(M, name="k1")
        top = te.compute((1,), lambda _: te.max(X[k0, k1], axis=[k0, k1]), name="top")
        E = te.compute((N, M), lambda i, j: mb.tir.exp(X[i, j] - top[0]), name="E")
        k2 = te.reduce_axis(M, name="k2")
        total = te.compute((N,), lambda i: te.sum(E[i, k2], axis=k2), name="total")
        Y = te.compute((N, M), lambda i, j: E[i, j] / total[i], name="Y")
        return te.create_prim_func([X, Y])

    message = zero("02.te_softmax", make_softmax)
    assert "subtract each row's own maximum, not the maximum of the whole array" in message
