"""Chapter 1's exercises: plausible wrong answers earn zero, with a message that says why.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlcbook.grading as grading

from .conftest import zero


# --- 01.lnumpy_mm_relu ---------------------------------------------------------------------
def test_mm_relu_missing_relu():
    def mm(A, B, C):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                C[i, j] = sum(A[i, k] * B[k, j] for k in range(A.shape[1]))
    message = zero("01.lnumpy_mm_relu", mm)
    assert "values differ: C[" in message and "C equals A @ B: apply relu" in message


def test_mm_relu_relu_on_each_product():
    def mm(A, B, C):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                C[i, j] = sum(max(A[i, k] * B[k, j], 0) for k in range(A.shape[1]))
    assert "relu was applied to each product" in zero("01.lnumpy_mm_relu", mm)


def test_mm_relu_off_by_one_loop():
    def mm(A, B, C):
        for i in range(A.shape[0] - 1):
            for j in range(B.shape[1]):
                C[i, j] = max(sum(A[i, k] * B[k, j] for k in range(A.shape[1])), 0)
    message = zero("01.lnumpy_mm_relu", mm)
    assert "was never set" in message and "check the ranges of your loops" in message
    assert "on A of shape" in message


# --- 01.lnumpy_bmm -------------------------------------------------------------------------
def _bmm(batch_of_b):
    def bmm(A, B, C):
        for t in range(A.shape[0]):
            for i in range(A.shape[1]):
                for j in range(B.shape[2]):
                    C[t, i, j] = sum(A[t, i, k] * B[batch_of_b(t), k, j]
                                     for k in range(A.shape[2]))
    return bmm


def test_bmm_reference_form_passes():
    assert grading.check("01.lnumpy_bmm", _bmm(lambda t: t)).passed


def test_bmm_uses_first_batch_of_b():
    assert "every batch was multiplied by B[0]" in zero("01.lnumpy_bmm", _bmm(lambda t: 0))


def test_bmm_off_by_one_batch_loop():
    def bmm(A, B, C):
        for t in range(A.shape[0] - 1):
            for i in range(A.shape[1]):
                for j in range(B.shape[2]):
                    C[t, i, j] = sum(A[t, i, k] * B[t, k, j] for k in range(A.shape[2]))
    message = zero("01.lnumpy_bmm", bmm)
    assert "C[" in message and "was never set" in message


def test_bmm_transposed_index_reports_the_line():
    def bmm(A, B, C):
        for t in range(A.shape[0]):
            for i in range(A.shape[1]):
                for j in range(B.shape[2]):
                    C[t, i, j] = sum(A[t, i, k] * B[t, j, k] for k in range(A.shape[2]))
    message = zero("01.lnumpy_bmm", bmm)
    assert message.startswith("lnumpy_bmm raised IndexError: index")
    assert "B[t, j, k]" in message  # the offending source line is quoted


def test_bmm_accumulating_without_reset():
    def bmm(A, B, C):
        for t in range(A.shape[0]):
            for i in range(A.shape[1]):
                for j in range(B.shape[2]):
                    for k in range(A.shape[2]):
                        C[t, i, j] += A[t, i, k] * B[t, k, j]
    assert "+= only adds to the placeholder" in zero("01.lnumpy_bmm", bmm)


# --- 01.lnumpy_softmax ---------------------------------------------------------------------
def _softmax(stable, axis=1, divide=True, exp=math.exp, global_max=False):
    def softmax(X, Y):
        rows, cols = X.shape if axis == 1 else X.shape[::-1]

        def at(i, j):  # (row i, column j) of the axis the softmax runs along
            return (i, j) if axis == 1 else (j, i)

        top = max(X[i, j] for i in range(X.shape[0]) for j in range(X.shape[1]))
        for i in range(rows):
            c = max(X[at(i, j)] for j in range(cols)) if stable else 0.0
            c = top if global_max else c
            for j in range(cols):
                Y[at(i, j)] = exp(X[at(i, j)] - c)
            total = sum(Y[at(i, j)] for j in range(cols)) if divide else 1.0
            for j in range(cols):
                Y[at(i, j)] = Y[at(i, j)] / total
    return softmax


def test_softmax_reference_form_passes():
    assert grading.check("01.lnumpy_softmax", _softmax(stable=True)).passed


def test_softmax_unstable_with_math_exp_overflows():
    message = zero("01.lnumpy_softmax", _softmax(stable=False))
    assert "raised OverflowError" in message and "(large values)" in message
    assert "subtract each row's maximum before exp" in message


def test_softmax_unstable_with_numpy_exp_gives_nan():
    message = zero("01.lnumpy_softmax", _softmax(stable=False, exp=np.exp))
    assert "overflowed or divided by zero" in message
    assert "subtract each row's maximum before exp" in message


def test_softmax_wrong_axis():
    message = zero("01.lnumpy_softmax", _softmax(stable=True, axis=0))
    assert "values differ: Y[" in message and "softmax of each column (axis 0)" in message


def test_softmax_subtracting_the_global_max_scores_zero():
    # exact on every input whose rows lie close together, like the old large test rows
    X = np.array([[1000, 999, 998], [0, 1, 2]], dtype=np.float32)
    Y = np.empty_like(X)
    with np.errstate(all="ignore"):
        _softmax(stable=True, global_max=True, exp=np.exp)(X, Y)
    assert np.isnan(Y[1]).all()  # the row around 0 became 0 / 0
    for exp in (math.exp, np.exp):
        message = zero("01.lnumpy_softmax", _softmax(stable=True, global_max=True, exp=exp))
        assert "subtract each row's own maximum, not the maximum of the whole array" in message


def test_softmax_forgets_to_divide():
    assert "do not sum to 1" in zero("01.lnumpy_softmax", _softmax(stable=True, divide=False))


# --- 01.lnumpy_conv2d ----------------------------------------------------------------------
def _conv(flip=False, channels=None, shrink=0):
    def conv(X, W, Y):
        CO, CI, KH, KW = W.shape
        for n in range(X.shape[0]):
            for o in range(CO):
                for y in range(Y.shape[2] - shrink):
                    for x in range(Y.shape[3]):
                        acc = 0.0
                        for c in range(channels or CI):
                            for dy in range(KH):
                                for dx in range(KW):
                                    wy, wx = (KH - 1 - dy, KW - 1 - dx) if flip else (dy, dx)
                                    acc += X[n, c, y + dy, x + dx] * W[o, c, wy, wx]
                        Y[n, o, y, x] = acc
    return conv


def test_conv2d_reference_form_passes():
    assert grading.check("01.lnumpy_conv2d", _conv()).passed


def test_conv2d_flipped_kernel():
    assert "kernel flipped" in zero("01.lnumpy_conv2d", _conv(flip=True))


def test_conv2d_first_channel_only():
    assert "only input channel 0 was used" in zero("01.lnumpy_conv2d", _conv(channels=1))


def test_conv2d_off_by_one_output_rows():
    message = zero("01.lnumpy_conv2d", _conv(shrink=1))
    assert "was never set" in message and "on X of shape" in message


# --- 01.lnumpy_mlp -------------------------------------------------------------------------
def _linear(X, W, b, relu):
    out = np.empty((X.shape[0], W.shape[0]), dtype=np.float32)
    for i in range(X.shape[0]):
        for j in range(W.shape[0]):
            acc = b[j] + sum(X[i, k] * W[j, k] for k in range(X.shape[1]))
            out[i, j] = max(acc, 0.0) if relu else acc
    return out


def _mlp(relu=True, keep_batch=True, returns=True):
    def mlp(X, W1, b1, W2, b2):
        out = _linear(_linear(X.reshape(X.shape[0], -1), W1, b1, relu), W2, b2, False)
        if not keep_batch:
            out = out[0]
        return out if returns else None
    return mlp


def test_mlp_reference_form_passes():
    assert grading.check("01.lnumpy_mlp", _mlp()).passed


def test_mlp_missing_relu():
    assert "MLP without relu" in zero("01.lnumpy_mlp", _mlp(relu=False))


def test_mlp_wrong_shape():
    message = zero("01.lnumpy_mlp", _mlp(keep_batch=False))
    assert message.startswith("wrong shape: the result has shape (")
    assert "batch dimension is missing" in message


def test_mlp_returns_none():
    assert zero("01.lnumpy_mlp", _mlp(returns=False)).startswith(
        "the result is None: return the result array")


# --- whole-array numpy is refused in every exercise ----------------------------------------
def _mm_relu_whole_array(A, B, C):
    C[...] = np.maximum(A @ B, 0)


def _bmm_with_matmul(A, B, C):
    for t in range(A.shape[0]):
        C[t, :, :] = np.matmul(A[t], B[t])


def _softmax_with_reductions(X, Y):
    for i in range(X.shape[0]):
        e = np.exp(X[i] - X[i].max())
        for j in range(X.shape[1]):
            Y[i, j] = e[j] / e.sum()


def _conv_with_einsum(X, W, Y):
    windows = np.lib.stride_tricks.sliding_window_view(X, W.shape[2:], axis=(2, 3))
    for n in range(X.shape[0]):
        Y[n] = np.einsum("cyxhw,ochw->oyx", windows[n], W)


def _mlp_whole_array(X, W1, b1, W2, b2):
    h = np.maximum(X.reshape(X.shape[0], -1).dot(W1.T) + b1, 0)
    return h.dot(W2.T) + b2


@pytest.mark.parametrize("exercise_id, answer, why", [
    ("01.lnumpy_mm_relu", _mm_relu_whole_array,
     "`C[...] = np.maximum(A @ B, 0)`: `...` stands for whole dimensions"),
    ("01.lnumpy_bmm", _bmm_with_matmul, "a slice (`:`) takes a whole row"),
    ("01.lnumpy_softmax", _softmax_with_reductions, "`.max()` computes over a whole array"),
    ("01.lnumpy_conv2d", _conv_with_einsum, "np.lib computes over whole arrays"),
    ("01.lnumpy_mlp", _mlp_whole_array, "np.maximum is applied to a whole array here"),
], ids=lambda v: v if isinstance(v, str) and v.startswith("01.") else "")
def test_whole_array_numpy_scores_zero_and_says_why(exercise_id, answer, why):
    message = zero(exercise_id, answer)
    name = grading.get(exercise_id).answer
    assert message.startswith(f"{name} uses whole-array numpy, which this exercise does not "
                              "accept: "), message
    assert why in message
    assert "explicit loops that compute one scalar at a time" in message


def test_whole_array_numpy_in_a_helper_is_found():
    def helper(A, B, C):
        C[...] = A @ B

    def mm(A, B, C):
        helper(A, B, C)
        for i in range(C.shape[0]):
            for j in range(C.shape[1]):
                C[i, j] = max(C[i, j], 0.0)

    globals()["helper"] = helper  # a notebook's helper is a global of the same namespace
    try:
        message = zero("01.lnumpy_mm_relu", mm)
    finally:
        del globals()["helper"]
    assert "of helper: `C[...] = A @ B`" in message


def test_numpy_on_scalars_is_fine():
    def mm(A, B, C):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                acc = np.float32(0)
                for k in range(A.shape[1]):
                    acc += A[i, k] * B[k, j]
                C[i, j] = np.maximum(acc, 0)
    assert grading.check("01.lnumpy_mm_relu", mm).passed
