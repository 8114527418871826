"""Small programs for codegen tests, built with the IR constructors."""

from __future__ import annotations

import numpy as np

import mlcbook as mb
from mlcbook.tir import Buffer, BufferStore, For, PrimFunc, Var


def map_func(fn, in_dtypes, out_dtype, n=64, lanes=None, name="map"):
    """``Out[i] = fn(X0[i], X1[i], ...)``; with ``lanes``, the loop is split and the inner
    part of ``lanes`` iterations vectorized."""
    ins = [Buffer(f"X{k}", (n,), dt) for k, dt in enumerate(in_dtypes)]
    out = Buffer("Out", (n,), out_dtype)
    if lanes is None:
        i = Var("i")
        body = For(i, n, BufferStore(out, fn(*[b[i] for b in ins]), (i,)))
    else:
        io, ii = Var("io"), Var("ii")
        idx = io * lanes + ii
        body = For(io, n // lanes, For(ii, lanes, BufferStore(out, fn(*[b[idx] for b in ins]),
                                                              (idx,)), "vectorized"))
    return PrimFunc(name, (*ins, out), body)


def native_and_interpreted(fn, in_dtypes, out_dtype, *arrays, lanes=None):
    """The compiled result of :func:`map_func`, after checking that the interpreter gives
    the same bytes."""
    n = arrays[0].shape[0]
    func = map_func(fn, in_dtypes, out_dtype, n=n, lanes=lanes)
    native = mb.build(func)(*arrays)
    interpreted = np.empty(n, out_dtype)
    mb.tir.interpret(func, *arrays, interpreted)
    np.testing.assert_array_equal(interpreted.view(np.uint8), native.view(np.uint8),
                                  err_msg="interpreter vs native")
    return native
