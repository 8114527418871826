"""mb.graph.draw: an SVG of a graph function, inputs above the values that use them, each
call's weights listed in its box."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import mlcbook as mb
from mlcbook.errors import ArgumentError
from mlcbook.graph import Constant, TensorType, Var, op

SVG = "{http://www.w3.org/2000/svg}"


def mlp():
    x = Var("x", TensorType((1, 8), "float32"))
    w0, w1 = np.ones((4, 8), "float32"), np.ones((2, 4), "float32")
    h = op.gemm(x, Constant(w0, "fc1.weight"), trans_b=1, name="fc1")
    h = op.relu(h, name="relu")
    h = op.gemm(h, Constant(w1, "fc2.weight"), trans_b=1, name="fc2")
    return mb.graph.Function([x], h)


def boxes(svg: str) -> dict:
    """{first text line: (y, all lines)} of every node in the drawing."""
    root = ET.fromstring(svg)
    out = {}
    for g in root.iter(SVG + "g"):
        rect, texts = g.find(SVG + "rect"), g.findall(SVG + "text")
        out[texts[0].text] = (float(rect.get("y")), [t.text for t in texts])
    return out


def test_draws_every_value_and_every_use_as_valid_svg():
    d = mb.graph.draw(mlp())
    assert d._repr_svg_() is d.svg
    nodes = boxes(d.svg)
    assert set(nodes) == {"x", "fc1: op.gemm", "relu: op.relu", "fc2: op.gemm", "output"}
    assert (d.nodes, d.edges) == (4, 4)  # 3 uses between values, 1 into the output
    assert len(re.findall(r'class="edge"', d.svg)) == 4
    assert nodes["fc1: op.gemm"][1] == ["fc1: op.gemm", "(1, 4) float32",
                                        "W fc1.weight (4, 8) float32"]


def test_each_value_sits_below_the_values_it_uses():
    y = {name: box[0] for name, box in boxes(mb.graph.draw(mlp()).svg).items()}
    assert y["x"] < y["fc1: op.gemm"] < y["relu: op.relu"] < y["fc2: op.gemm"] < y["output"]


def test_branches_share_a_layer():
    x = Var("x", TensorType((1, 4), "float32"))
    a, b = op.relu(x, name="a"), op.neg(x, name="b")
    nodes = boxes(mb.graph.draw(mb.graph.Function([x], op.add(a, b, name="c"))).svg)
    assert nodes["a: op.relu"][0] == nodes["b: op.neg"][0] < nodes["c: op.add"][0]


def test_weights_can_be_left_out_and_types_are_shown():
    d = mb.graph.draw(mlp(), weights=False)
    assert "fc1.weight" not in d.svg and d.nodes == 4
    assert "(1, 4) float32" in d.svg


def test_draws_a_module_main_with_call_tir_and_escapes_text():
    mod = mb.graph.legalize(mb.graph.IRModule({"main": mlp()}))
    d = mb.graph.draw(mod)
    assert "call_tir gemm" in d.svg
    ET.fromstring(d.svg)  # still well-formed XML


def test_refuses_what_is_not_a_graph():
    prim = mb.script.parse('''
@T.prim_func
def f(A: T.Buffer((2,), "float32")):
    for i in range(2):
        with T.block("A"):
            vi = T.axis.spatial(2, i)
            A[vi] = T.float32(0)
''')
    with pytest.raises(ArgumentError, match="Instead: for loop IR"):
        mb.graph.draw(prim)
    with pytest.raises(ArgumentError, match="no graph function 'main'"):
        mb.graph.draw(mb.graph.IRModule({"f": prim}))
