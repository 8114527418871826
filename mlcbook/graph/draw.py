"""A picture of a graph function: ``mb.graph.draw(mod)``, an SVG drawn in pure Python.

No graphviz binary is needed. Values are laid out in layers, top to bottom: each value sits
one layer below the lowest value it uses (inputs on top), and each layer is ordered by where
its inputs are, so that edges cross little. Weights are listed inside the box of the call
that uses them (their owner), which keeps the model's own data flow in view::

    >>> d = mb.graph.draw(mod)          # an IRModule (its "main") or a Function
    >>> d                               # a notebook shows it as a picture (``_repr_svg_``)
    >>> open("model.svg", "w").write(d.svg)
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from ..errors import ArgumentError
from ..ops.types import TensorType
from ..tir.function import IRModule
from .expr import Call, CallTIR, Constant, Expr, Function, Tuple, TupleGetItem, Var, children, \
    post_order

__all__ = ["draw", "GraphDrawing"]

# pixel sizes of the layout
_CHAR, _LINE, _PAD, _GAP_X, _GAP_Y, _MARGIN = 7.0, 15.0, 8.0, 18.0, 34.0, 12.0

_STYLE = {  # node kind -> (fill, stroke)
    "input": ("#dbe8f6", "#4c72b0"),
    "op": ("#fbe3cf", "#dd8452"), "call_tir": ("#d9eed9", "#55a868"),
    "tuple": ("#f2f2f2", "#777777"), "output": ("#f6dada", "#c44e52"),
}


@dataclass(frozen=True)
class GraphDrawing:
    """An SVG picture of a graph function; notebooks display it, ``.svg`` is its text."""

    svg: str
    nodes: int
    edges: int

    def _repr_svg_(self) -> str:
        return self.svg

    def __repr__(self) -> str:
        return f"<GraphDrawing: {self.nodes} values, {self.edges} edges>"


@dataclass
class _Node:
    expr: Expr | None
    kind: str
    lines: list
    inputs: list
    layer: int = 0
    x: float = 0.0
    y: float = 0.0

    @property
    def width(self) -> float:
        return max(len(line) for line in self.lines) * _CHAR + 2 * _PAD

    @property
    def height(self) -> float:
        return len(self.lines) * _LINE + _PAD


def _type_text(t) -> str:
    if isinstance(t, TensorType):
        return f"{tuple(t.shape)} {t.dtype}"
    return str(t)


def _describe(e: Expr) -> tuple[str, list]:
    if isinstance(e, Var):
        return "input", [e.name, _type_text(e.type)]
    if isinstance(e, Call):
        head = f"{e.name}: op.{e.op}" if e.name else f"op.{e.op}"
        return "op", [head, _type_text(e.type)]
    if isinstance(e, CallTIR):
        head = f"{e.name}: call_tir {e.func}" if e.name else f"call_tir {e.func}"
        return "call_tir", [head, _type_text(e.type)]
    if isinstance(e, Tuple):
        return "tuple", ["tuple"]
    if isinstance(e, TupleGetItem):
        return "tuple", [f"[{e.index}]", _type_text(e.type)]
    raise ArgumentError(f"cannot draw a graph node of type {type(e).__name__}")


def _nodes(func: Function, weights: bool) -> list[_Node]:
    order = [e for e in post_order(func.body) if not isinstance(e, Constant)]
    for p in func.params:  # an unused input is still an input
        if all(p is not e for e in order):
            order.insert(0, p)
    index = {id(e): k for k, e in enumerate(order)}
    nodes = []
    for e in order:
        kind, lines = _describe(e)
        if weights:
            lines += [f"W {c.name or 'constant'} {_type_text(c.type)}" for c in children(e)
                      if isinstance(c, Constant)]
        nodes.append(_Node(e, kind, lines, [index[id(c)] for c in children(e) if id(c) in index]))
    nodes.append(_Node(None, "output", ["output"], [index[id(func.body)]]))
    return nodes


def _layers(nodes: list[_Node]) -> list[list[int]]:
    for n in nodes:  # post order: every input comes before its user
        n.layer = 1 + max((nodes[i].layer for i in n.inputs), default=-1)
    rows: list[list[int]] = [[] for _ in range(1 + max(n.layer for n in nodes))]
    for k, n in enumerate(nodes):
        rows[n.layer].append(k)
    return rows


def _place(nodes: list[_Node], rows: list[list[int]]) -> tuple[float, float]:
    position = {}  # rank of each node inside its row, refined row by row
    for r, row in enumerate(rows):
        before = {k: rank for rank, k in enumerate(row)}

        def key(k, before=before):
            ins = [position[i] for i in nodes[k].inputs if i in position]
            return sum(ins) / len(ins) if ins else before[k]
        row = rows[r] = sorted(row, key=key)
        for rank, k in enumerate(row):
            position[k] = rank + 0.5 * (1 - len(row)) if len(row) > 1 else 0.0
    widths = [sum(nodes[k].width for k in row) + _GAP_X * (len(row) - 1) for row in rows]
    total_w = max(widths) + 2 * _MARGIN
    y = _MARGIN
    for row, w in zip(rows, widths):
        x = (total_w - w) / 2
        h = max(nodes[k].height for k in row)
        for k in row:
            n = nodes[k]
            n.x, n.y = x + n.width / 2, y + h / 2
            x += n.width + _GAP_X
        y += h + _GAP_Y
    return total_w, y - _GAP_Y + _MARGIN


def _svg(nodes: list[_Node], width: float, height: float) -> tuple[str, int]:
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="monospace" font-size="11">',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
           'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker>'
           '</defs>']
    edges = 0
    for n in nodes:
        for i in n.inputs:
            src = nodes[i]
            y0, y1 = src.y + src.height / 2, n.y - n.height / 2
            mid = (y0 + y1) / 2
            out.append(f'<path class="edge" d="M{src.x:.1f},{y0:.1f} C{src.x:.1f},{mid:.1f} '
                       f'{n.x:.1f},{mid:.1f} {n.x:.1f},{y1:.1f}" fill="none" stroke="#555" '
                       f'marker-end="url(#arrow)"/>')
            edges += 1
    for n in nodes:
        fill, stroke = _STYLE[n.kind]
        rx = n.height / 2 if n.kind in ("input", "output") else 4
        x0, y0 = n.x - n.width / 2, n.y - n.height / 2
        out.append(f'<g class="node {n.kind}"><rect x="{x0:.1f}" y="{y0:.1f}" '
                   f'width="{n.width:.1f}" height="{n.height:.1f}" rx="{rx:.1f}" fill="{fill}" '
                   f'stroke="{stroke}"/>')
        for j, line in enumerate(n.lines):
            weight = ' font-weight="bold"' if j == 0 else (
                ' fill="#666"' if line.startswith("W ") else "")
            ty = y0 + _PAD / 2 + _LINE * (j + 0.75)
            out.append(f'<text x="{n.x:.1f}" y="{ty:.1f}" text-anchor="middle"{weight}>'
                       f'{escape(line)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out), edges


def draw(graph, weights: bool = True) -> GraphDrawing:
    """Draw a graph function (or an IRModule's ``main``) as SVG: inputs in blue, op calls in
    orange, ``call_tir`` in green, each call listing its weights (``weights=False``: not).

        >>> mb.graph.draw(mb.from_onnx("mlp.onnx", batch_size=1))
        <GraphDrawing: 5 values, 5 edges>
    """
    if isinstance(graph, IRModule):
        if "main" not in graph or not isinstance(graph["main"], Function):
            raise ArgumentError("this IRModule has no graph function 'main' to draw.\n"
                                "Instead: pass the graph function itself, mb.graph.draw(mod['name'])")
        graph = graph["main"]
    if not isinstance(graph, Function):
        raise ArgumentError(f"mb.graph.draw draws a graph Function or an IRModule, got "
                            f"{type(graph).__name__}.\nInstead: for loop IR, print the PrimFunc")
    nodes = _nodes(graph, weights)
    rows = _layers(nodes)
    width, height = _place(nodes, rows)
    svg, edges = _svg(nodes, width, height)
    return GraphDrawing(svg, len(nodes) - 1, edges)
