"""ExprFunctor / StmtFunctor: one method per node class, a clear error for any other node."""

from __future__ import annotations

import pytest

from mlcbook.errors import TIRError
from mlcbook.tir import Buffer, BufferStore, Evaluate, For, Var, cast, seq
from mlcbook.tir.functor import ExprFunctor, StmtFunctor, Visitor, dispatch


class Depth(ExprFunctor):
    def expr_Var(self, e):
        return 1

    def expr_Const(self, e):
        return 1

    def expr_Binary(self, e):
        return 1 + max(self.expr(e.a), self.expr(e.b))


class CountStores(StmtFunctor):
    def stmt_SeqStmt(self, s):
        return sum(self.stmt(x) for x in s.stmts)

    def stmt_For(self, s):
        return self.stmt(s.body)

    def stmt_BufferStore(self, s):
        return 1


def test_expr_functor_returns_each_method_value():
    i = Var("i")
    assert Depth().expr((i + 1) * i) == 3


def test_stmt_functor_returns_each_method_value():
    A, i = Buffer("A", (4,)), Var("i")
    store = BufferStore(A, 0.0, (i,))
    assert CountStores().stmt(For(i, 4, seq(store, store))) == 2


def test_unhandled_expression_names_functor_and_node():
    A = Buffer("A", (4,))
    with pytest.raises(TIRError, match=r"MLC-T000.*Depth has no method for BufferLoad "
                                       r"expressions \(A\[0\]\).*Instead: give it an "
                                       r"expr_BufferLoad method"):
        Depth().expr(A[0] + 1)


def test_unhandled_statement_names_functor_and_node():
    with pytest.raises(TIRError, match=r"CountStores has no method for Evaluate statements.*"
                                       r"stmt_Evaluate"):
        CountStores().stmt(Evaluate(Var("i")))


def test_a_layer_raises_its_own_error_for_unhandled_nodes():
    class Strict(Depth):
        def unhandled_expr(self, e):
            raise ValueError(type(e).__name__)

    with pytest.raises(ValueError, match="Cast"):
        Strict().expr(cast("int64", Var("i")))


def test_dispatch_finds_inherited_methods_and_none_for_others():
    class Deeper(Depth):
        pass

    assert dispatch(Deeper, "expr_", type(Var("i") + 1)) is Depth.expr_Binary
    assert dispatch(Deeper, "expr_", Buffer) is None
    assert dispatch(Visitor, "visit_", Var) is None


def test_a_visitor_class_made_inside_a_function_is_freed_with_it():
    """Dispatch tables live on the functor class: one defined per call (as free_vars does)
    must not be kept alive by them (it once was, thousands per compiled model)."""
    import gc
    import weakref

    def count_vars(node):
        class _Count(Visitor):
            n = 0

            def visit_Var(self, v):
                type(self).n += 1

        _Count().visit(node)
        return _Count.n, weakref.ref(_Count)

    n, ref = count_vars(Var("i") + Var("j") * 2)
    gc.collect()
    assert n == 2 and ref() is None
