"""Every chapter-1 exercise: the solution earns full points, the stub and wrong answers zero."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlcbook.grading as grading

EXERCISES = {
    "01.lnumpy_mm_relu": "lnumpy_mm_relu",
    "01.lnumpy_bmm": "lnumpy_bmm",
    "01.lnumpy_softmax": "lnumpy_softmax",
    "01.lnumpy_conv2d": "lnumpy_conv2d",
    "01.lnumpy_mlp": "lnumpy_mlp",
}


def test_chapter_has_these_exercises():
    assert [e.id for e in grading.exercises("01.")] == list(EXERCISES)
    assert sum(e.points for e in grading.exercises("01.")) == 10


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_solution_earns_full_points(solution1, exercise_id):
    result = grading.check(exercise_id, solution1[EXERCISES[exercise_id]])
    assert result.passed and result.points == result.max_points > 0, str(result)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_solution_passes_on_other_seeds(solution1, exercise_id):
    for seed in (1, 2):
        result = grading.check(exercise_id, solution1[EXERCISES[exercise_id]], seed=seed)
        assert result.passed, str(result)


@pytest.mark.parametrize("exercise_id", EXERCISES)
def test_stub_earns_zero_not_implemented(stub1, exercise_id):
    result = grading.check(exercise_id, stub1[EXERCISES[exercise_id]])
    assert result.points == 0
    assert result.message.startswith("not implemented:")
    assert "NotImplementedError" in result.message


def _score(exercise_id, answer):
    result = grading.check(exercise_id, answer)
    assert result.points == 0, str(result)
    assert "internal error" not in result.message
    return result.message


# --- 01.lnumpy_mm_relu ---------------------------------------------------------------------
def test_mm_relu_missing_relu():
    def mm(A, B, C):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                C[i, j] = sum(A[i, k] * B[k, j] for k in range(A.shape[1]))
    message = _score("01.lnumpy_mm_relu", mm)
    assert "values differ: C[" in message and "C equals A @ B: apply relu" in message


def test_mm_relu_relu_on_each_product():
    def mm(A, B, C):
        for i in range(A.shape[0]):
            for j in range(B.shape[1]):
                C[i, j] = sum(max(A[i, k] * B[k, j], 0) for k in range(A.shape[1]))
    assert "relu was applied to each product" in _score("01.lnumpy_mm_relu", mm)


def test_mm_relu_off_by_one_loop():
    def mm(A, B, C):
        for i in range(A.shape[0] - 1):
            for j in range(B.shape[1]):
                C[i, j] = max(sum(A[i, k] * B[k, j] for k in range(A.shape[1])), 0)
    message = _score("01.lnumpy_mm_relu", mm)
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
    assert "every batch was multiplied by B[0]" in _score("01.lnumpy_bmm", _bmm(lambda t: 0))


def test_bmm_off_by_one_batch_loop():
    def bmm(A, B, C):
        for t in range(A.shape[0] - 1):
            C[t] = A[t] @ B[t]
    message = _score("01.lnumpy_bmm", bmm)
    assert "C[" in message and "was never set" in message


def test_bmm_transposed_index_reports_the_line():
    def bmm(A, B, C):
        for t in range(A.shape[0]):
            for i in range(A.shape[1]):
                for j in range(B.shape[2]):
                    C[t, i, j] = sum(A[t, i, k] * B[t, j, k] for k in range(A.shape[2]))
    message = _score("01.lnumpy_bmm", bmm)
    assert message.startswith("lnumpy_bmm raised IndexError: index")
    assert "B[t, j, k]" in message  # the offending source line is quoted


def test_bmm_accumulating_without_reset():
    def bmm(A, B, C):
        for t in range(A.shape[0]):
            for i in range(A.shape[1]):
                for j in range(B.shape[2]):
                    for k in range(A.shape[2]):
                        C[t, i, j] += A[t, i, k] * B[t, k, j]
    assert "+= only adds to the placeholder" in _score("01.lnumpy_bmm", bmm)


# --- 01.lnumpy_softmax ---------------------------------------------------------------------
def _softmax(stable, axis=1, divide=True, exp=math.exp):
    def softmax(X, Y):
        Z = X if axis == 1 else X.T
        out = np.empty_like(Z)
        for i in range(Z.shape[0]):
            c = max(Z[i, j] for j in range(Z.shape[1])) if stable else 0.0
            for j in range(Z.shape[1]):
                out[i, j] = exp(Z[i, j] - c)
            total = sum(out[i, j] for j in range(Z.shape[1])) if divide else 1.0
            for j in range(Z.shape[1]):
                out[i, j] = out[i, j] / total
        Y[...] = out if axis == 1 else out.T
    return softmax


def test_softmax_reference_form_passes():
    assert grading.check("01.lnumpy_softmax", _softmax(stable=True)).passed


def test_softmax_unstable_with_math_exp_overflows():
    message = _score("01.lnumpy_softmax", _softmax(stable=False))
    assert "raised OverflowError" in message and "(large values)" in message
    assert "subtract each row's maximum before exp" in message


def test_softmax_unstable_with_numpy_exp_gives_nan():
    message = _score("01.lnumpy_softmax", _softmax(stable=False, exp=np.exp))
    assert "overflowed or divided by zero" in message
    assert "subtract each row's maximum before exp" in message


def test_softmax_wrong_axis():
    message = _score("01.lnumpy_softmax", _softmax(stable=True, axis=0))
    assert "values differ: Y[" in message and "softmax of each column (axis 0)" in message


def test_softmax_forgets_to_divide():
    assert "do not sum to 1" in _score("01.lnumpy_softmax", _softmax(stable=True, divide=False))


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
    assert "kernel flipped" in _score("01.lnumpy_conv2d", _conv(flip=True))


def test_conv2d_first_channel_only():
    assert "only input channel 0 was used" in _score("01.lnumpy_conv2d", _conv(channels=1))


def test_conv2d_off_by_one_output_rows():
    message = _score("01.lnumpy_conv2d", _conv(shrink=1))
    assert "was never set" in message and "on X of shape" in message


# --- 01.lnumpy_mlp -------------------------------------------------------------------------
def _mlp(relu=True, keep_batch=True, returns=True):
    def mlp(X, W1, b1, W2, b2):
        h = X.reshape(X.shape[0], -1) @ W1.T + b1
        out = (np.maximum(h, 0) if relu else h) @ W2.T + b2
        out = out if keep_batch else out[0]
        return out if returns else None
    return mlp


def test_mlp_reference_form_passes():
    assert grading.check("01.lnumpy_mlp", _mlp()).passed


def test_mlp_missing_relu():
    assert "MLP without relu" in _score("01.lnumpy_mlp", _mlp(relu=False))


def test_mlp_wrong_shape():
    message = _score("01.lnumpy_mlp", _mlp(keep_batch=False))
    assert message.startswith("wrong shape: the result has shape (")
    assert "batch dimension is missing" in message


def test_mlp_returns_none():
    assert _score("01.lnumpy_mlp", _mlp(returns=False)).startswith(
        "the result is None: return the result array")
