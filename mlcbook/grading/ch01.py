"""Checkers for chapter 1, *Tensors and tensor functions*: low-level numpy programs.

Every exercise is a function written with explicit loops over scalars, in destination-
passing style (the caller allocates the output, the function fills it), except
``lnumpy_mlp``, which allocates its intermediates and returns the result. An answer that
computes with whole-array numpy instead (``C[...] = np.maximum(A @ B, 0)``) earns nothing,
however right its values: the exercise is the loops.
"""

from __future__ import annotations

import inspect
import types

import numpy as np

from .compare import (GLOBAL_MAX_HINT, Fail, call, describe, distinct_dims, empty, expect_array,
                      randn, scaled_atol, softmax_cases, softmax_global_max, softmax_reference,
                      trial)
from .registry import exercise
from .scalar_code import whole_array_use


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def _require_loops(answer: object, name: str) -> None:
    """Fail an answer that computes with whole-array numpy instead of loops over scalars."""
    answer = inspect.unwrap(answer)     # the grader calls answers through a guard
    use = whole_array_use(answer) if isinstance(answer, types.FunctionType) else None
    if use is not None:
        raise Fail(f"{name} uses whole-array numpy, which this exercise does not accept: {use}. "
                   "The exercises of chapter 1 are low-level numpy: explicit loops that compute "
                   "one scalar at a time, so that every step of the computation is written out",
                   "Instead: loop over the indices and write each entry, as in the chapter "
                   "(for i in range(n): for j in range(m): ... C[i, j] = value)",
                   about_inputs=False)


@exercise("01.lnumpy_mm_relu", points=1, answer="lnumpy_mm_relu",
          title="Fused matmul + relu with loops")
def _check_mm_relu(answer, rng):
    _require_loops(answer, "lnumpy_mm_relu")
    shapes = [distinct_dims(rng, 3), distinct_dims(rng, 3), [1, int(rng.integers(2, 6)), 1]]
    for n, k, m in shapes:
        A, B = randn(rng, (n, k)), randn(rng, (k, m))
        C = empty((n, m))
        with trial(describe(A=A, B=B)):
            call(answer, "lnumpy_mm_relu", A, B, C, outputs=1)
            expect_array("C", C, _relu(A.astype(np.float64) @ B), mistakes=[
                (lambda: A @ B, "C equals A @ B: apply relu to each finished sum, "
                                "C[i, j] = max(sum, 0)"),
                (lambda: _relu(A[:, :, None] * B[None, :, :]).sum(axis=1),
                 "relu was applied to each product; apply it once, to the finished sum"),
            ])
    return f"matches relu(A @ B) on {len(shapes)} fresh shapes"


@exercise("01.lnumpy_bmm", points=2, answer="lnumpy_bmm",
          title="Batched matrix multiplication with loops")
def _check_bmm(answer, rng):
    _require_loops(answer, "lnumpy_bmm")
    shapes = [distinct_dims(rng, 4), distinct_dims(rng, 4), [3, 1, int(rng.integers(2, 6)), 2]]
    for b, n, k, m in shapes:
        A, B = randn(rng, (b, n, k)), randn(rng, (b, k, m))
        C = empty((b, n, m))
        with trial(describe(A=A, B=B)):
            call(answer, "lnumpy_bmm", A, B, C, outputs=1)
            expect_array("C", C, np.matmul(A.astype(np.float64), B), mistakes=[
                (lambda: np.matmul(A, B[:1]), "every batch was multiplied by B[0]: index B "
                                              "with the batch variable too"),
                (lambda: np.matmul(A[:1], B), "every batch used A[0]: index A with the batch "
                                              "variable too"),
            ])
    return f"matches A @ B on {len(shapes)} fresh batched shapes"


@exercise("01.lnumpy_softmax", points=2, answer="lnumpy_softmax",
          title="Numerically stable softmax with loops")
def _check_softmax(answer, rng):
    _require_loops(answer, "lnumpy_softmax")
    cases = softmax_cases(rng, "")
    for X, note, hint in cases:
        Y = empty(X.shape)
        with trial(describe(X=X) + note, hint=hint):
            call(answer, "lnumpy_softmax", X, Y, outputs=1)
            expect_array("Y", Y, softmax_reference(X, axis=1), rtol=1e-4, atol=1e-6, mistakes=[
                (lambda: softmax_reference(X, axis=0), "Y is the softmax of each column (axis 0); "
                                              "softmax here runs along each row (axis 1)"),
                (lambda: np.exp(X - X.max(axis=1, keepdims=True)),
                 "the rows of Y do not sum to 1: divide by the row's sum of exponentials"),
                (lambda: softmax_global_max(X), GLOBAL_MAX_HINT),
                (lambda: softmax_global_max(X, np.float32), GLOBAL_MAX_HINT),
            ])
    return (f"matches softmax along the last axis on {len(cases)} inputs, including large "
            "values and rows far apart")


def _conv2d(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    kh, kw = W.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(X.astype(np.float64), (kh, kw),
                                                       axis=(2, 3))
    return np.einsum("ncyxhw,ochw->noyx", windows, W.astype(np.float64))


@exercise("01.lnumpy_conv2d", points=3, answer="lnumpy_conv2d",
          title="2-D convolution (NCHW, valid) with loops")
def _check_conv2d(answer, rng):
    _require_loops(answer, "lnumpy_conv2d")
    shapes = [  # (N, CI, H, W, CO, KH, KW)
        (1, 2, 6, 7, 3, 3, 2),
        (2, 3, int(rng.integers(5, 9)), int(rng.integers(5, 9)), 2, 3, 3),
        (1, 1, 4, 5, 1, 1, 1),
    ]
    for N, CI, H, W_, CO, KH, KW in shapes:
        X, Wt = randn(rng, (N, CI, H, W_)), randn(rng, (CO, CI, KH, KW))
        Y = empty((N, CO, H - KH + 1, W_ - KW + 1))
        with trial(describe(X=X, W=Wt)):
            call(answer, "lnumpy_conv2d", X, Wt, Y, outputs=1)
            expect_array("Y", Y, _conv2d(X, Wt), mistakes=[
                (lambda: _conv2d(X, Wt[:, :, ::-1, ::-1]),
                 "Y is a convolution with the kernel flipped; deep-learning conv2d does not "
                 "flip: Y[n, co, y, x] sums X[n, ci, y + dy, x + dx] * W[co, ci, dy, dx]"),
                (lambda: _conv2d(X[:, :1], Wt[:, :1]),
                 "only input channel 0 was used: sum over every input channel ci too"),
            ])
    return f"matches the reference conv2d on {len(shapes)} fresh shapes"


def _mlp(X, W1, b1, W2, b2, relu=True):
    h = X.reshape(X.shape[0], -1).astype(np.float64) @ W1.T + b1
    return (_relu(h) if relu else h) @ W2.T + b2


@exercise("01.lnumpy_mlp", points=2, answer="lnumpy_mlp",
          title="The two-layer MLP from low-level parts")
def _check_mlp(answer, rng):
    _require_loops(answer, "lnumpy_mlp")
    shapes = [(1, 3, 4, 5, 3), (3, 2, 5, 4, 2), (2, 4, 4, 7, 6)]  # batch, h, w, hidden, out
    for batch, h, w, hidden, out in shapes:
        X = randn(rng, (batch, h, w))
        W1, b1 = randn(rng, (hidden, h * w)), randn(rng, (hidden,))
        W2, b2 = randn(rng, (out, hidden)), randn(rng, (out,))
        with trial(describe(X=X, W1=W1, W2=W2)):
            got = call(answer, "lnumpy_mlp", X, W1, b1, W2, b2)
            want = _mlp(X, W1, b1, W2, b2)
            # two float32 layers of sums of products: rounding on the outputs' scale
            expect_array("the result", got, want, atol=scaled_atol(want), mistakes=[
                (lambda: _mlp(X, W1, b1, W2, b2, relu=False),
                 "the result is the MLP without relu: apply relu after the first linear layer"),
                (lambda: _mlp(X, W1, b1, W2, b2)[0], "the batch dimension is missing: return "
                                                     "shape (batch, out)"),
            ])
    return f"matches the numpy MLP on {len(shapes)} fresh sizes"
