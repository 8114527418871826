"""partition_loops: an innermost serial loop is cut where its selects' tests of its variable
change value, each piece simplified; the meaning is kept (interpreter against numpy)."""

from __future__ import annotations

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.tir import For, Select, post_order_visit
from mlcbook.tir.transform.partition_loops import partition_loops

RNG = np.random.default_rng(9)

PAD = '''
@T.prim_func(root=False)
def pad(a: T.Buffer((4, 4, 4), "float32"), p: T.Buffer((6, 6, 4), "float32")):
    for y in T.parallel(6):
        for x in range(6):
            for c in T.vectorized(4):
                p[y, x, c] = T.select(y - 1 >= 0 and y - 1 < 4 and x - 1 >= 0 and x - 1 < 4,
                                      a[T.max(T.min(y - 1, 3), 0), T.max(T.min(x - 1, 3), 0), c],
                                      T.float32(0))
'''


def cut(src: str):
    f = mb.script.parse(src)
    return f, f.with_body(partition_loops(f.body))


def nodes(node, cls):
    out = []
    post_order_visit(node, lambda n: out.append(n) if isinstance(n, cls) else None)
    return out


def test_a_pad_loop_is_cut_into_its_borders_and_an_interior_without_tests_of_x():
    _, g = cut(PAD)
    text = str(g)
    assert [lp.extent.value for lp in nodes(g.body, For) if lp.kind == "serial"] == [4]
    assert "x - 1" not in text and "T.min(x" not in text   # neither the tests nor the clamps
    assert text.count("= T.float32(0)") == 2                 # the border columns: zeros
    a, p = RNG.standard_normal((4, 4, 4)).astype("float32"), np.full((6, 6, 4), 7, "float32")
    mb.tir.interpret(g, a, p)
    np.testing.assert_array_equal(p, np.pad(a, ((1, 1), (1, 1), (0, 0))))


@pytest.mark.parametrize("cond,pieces", [
    ("x < 10", 1),                      # true all along the loop: nothing to cut
    ("x >= 0", 1),
    ("5 - x >= 2", 2),                  # a negative coefficient: true for x <= 3
    ("x >= 1 and x != 3", 2),           # only bounds on x cut; the rest stays a test
    ("x >= 1 and x < 2 or x >= 4", 1),  # not a conjunction of bounds: left alone
    ("x >= 1 and x < 3 and x < 5", 1),  # 4 pieces: more than MAX_PIECES
])
def test_a_loop_is_cut_at_each_bound_that_changes_inside_it(cond, pieces):
    src = f'''
@T.prim_func(root=False)
def f(a: T.Buffer((6,), "float32"), b: T.Buffer((6,), "float32")):
    for x in range(6):
        b[x] = T.select({cond}, a[x], T.float32(-1))
'''
    f, g = cut(src)
    assert str(g).count("b[") == pieces      # one store per piece
    a = RNG.standard_normal(6).astype("float32")
    want, got = np.zeros(6, "float32"), np.zeros(6, "float32")
    mb.tir.interpret(f, a, want)
    mb.tir.interpret(g, a, got)
    np.testing.assert_array_equal(got, want)


def test_a_loop_with_a_serial_loop_inside_is_not_cut():
    src = '''
@T.prim_func(root=False)
def f(a: T.Buffer((6, 3), "float32"), b: T.Buffer((6, 3), "float32")):
    for x in range(6):
        for k in range(3):
            b[x, k] = T.select(x >= 1, a[x, k], T.float32(0))
'''
    f, g = cut(src)
    assert str(g) == str(f)


def test_a_loop_inside_a_vectorized_loop_is_not_cut():
    src = '''
@T.prim_func(root=False)
def f(a: T.Buffer((6, 8), "float32"), b: T.Buffer((6, 8), "float32")):
    for j in T.vectorized(8):
        for x in range(6):
            b[x, j] = T.select(x >= 1, a[x, j], T.float32(0))
'''
    f, g = cut(src)
    assert str(g) == str(f)
