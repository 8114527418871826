import numpy as np

from mlcbook.graph import (Call, ExprMutator, ExprVisitor, Function, TensorType, Var, interpret,
                           op)


def chain(n):
    x = Var("x", TensorType((3,)))
    h = x
    for _ in range(n):
        h = op.relu(h)
    return Function([x], h)


def test_visitor_sees_each_node_once_children_first():
    seen = []

    class V(ExprVisitor):
        def visit_Call(self, c):
            seen.append(c.name)

    f = chain(3)
    V().visit(f.body)
    assert seen == ["relu", "relu_1", "relu_2"]


def test_deep_graphs_do_not_hit_the_recursion_limit():
    f = chain(5000)
    assert interpret(f, np.array([-1, 0, 2], "float32")).tolist() == [0, 0, 2]


def test_mutator_rewrites_and_keeps_unchanged_nodes():
    class ReluToAbs(ExprMutator):
        def visit_Call(self, c):
            new = self.generic_visit(c)
            return Call("abs", new.args, name=c.name) if c.op == "relu" else new

    x = Var("x", TensorType((2,)))
    f = Function([x], op.neg(op.relu(x)))
    g = ReluToAbs().visit_function(f)
    assert interpret(g, np.array([-2, 1], "float32")).tolist() == [-2, -1]
    unchanged = ExprMutator().visit_function(f)
    assert unchanged is f
