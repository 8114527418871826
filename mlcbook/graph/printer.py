"""Readable, Python-like text for graph functions and modules that mix them with PrimFuncs.

    def main(x: Tensor((1, 784), "float32")) -> Tensor((1, 10), "float32"):
        # W["fc1.weight"]: Tensor((784, 128), "float32")  owner fc1
        fc1: Tensor((1, 128), "float32") = op.matmul(x, W["fc1.weight"])
        relu: Tensor((1, 128), "float32") = op.relu(fc1)
        ...
        return fc2

Every op call and ``call_tir`` is one line named after the call; weights are ``W["name"]``;
small anonymous constants are shown inline.
"""

from __future__ import annotations

import re

from ..optional import available, require
from ..printing import register
from .expr import Call, CallTIR, Constant, Expr, Function, Tuple, TupleGetItem, post_order

_INLINE_LIMIT = 8


def _ident(name: str) -> str:
    s = re.sub(r"\W", "_", name) or "v"
    return "_" + s if s[0].isdigit() else s


def _const_text(c: Constant) -> str:
    if c.name:
        return f'W["{c.name}"]'
    if c.data.size <= _INLINE_LIMIT:
        return f'const({c.data.tolist()!r}, "{c.type.dtype}")'
    return f'const(shape={c.type.shape}, dtype="{c.type.dtype}")'


def _attr_text(v) -> str:
    return f'"{v}"' if isinstance(v, str) else repr(v)


class _Printer:
    def __init__(self):
        self.names: dict[int, str] = {}
        self.used: set[str] = set()

    def fresh(self, base: str) -> str:
        base = _ident(base)
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name

    def ref(self, e: Expr) -> str:
        if id(e) in self.names:
            return self.names[id(e)]
        if isinstance(e, Constant):
            return _const_text(e)
        if isinstance(e, TupleGetItem):
            return f"{self.ref(e.tuple_value)}[{e.index}]"
        if isinstance(e, Tuple):
            items = ", ".join(self.ref(f) for f in e.fields)
            return f"({items},)" if len(e.fields) == 1 else f"({items})"
        return self.rhs(e)

    def rhs(self, e: Expr) -> str:
        args = ", ".join(self.ref(a) for a in e.args)
        if isinstance(e, Call):
            from ..ops import get
            defaults = get(e.op).attrs
            attrs = "".join(f", {k}={_attr_text(v)}" for k, v in e.attrs.items()
                            if defaults.get(k) != v)
            return f"op.{e.op}({args}{attrs})"
        comma = "," if len(e.args) == 1 else ""
        attrs = "".join(f", {k}={_attr_text(v)}" for k, v in e.attrs.items())
        return f'call_tir("{e.func}", ({args}{comma}), {e.out_type}{attrs})'

    def function(self, f: Function) -> str:
        for p in f.params:
            self.names[id(p)] = self.fresh(p.name)
        sig = ", ".join(f"{self.names[id(p)]}: {p.type}" for p in f.params)
        lines = [f"def {_ident(f.name)}({sig}) -> {f.ret_type}:"]
        for w in f.weights.values():
            owner = f"  owner {w.owner}" if w.owner else ""
            lines.append(f'    # W["{w.name}"]: {w.type}{owner}')
        for n in post_order(f.body):
            if isinstance(n, (Call, CallTIR)):
                rhs = self.rhs(n)
                self.names[id(n)] = name = self.fresh(n.name or "lv")
                lines.append(f"    {name}: {n.type} = {rhs}")
        lines.append(f"    return {self.ref(f.body)}")
        return "\n".join(lines)


def function_to_str(f: Function) -> str:
    """The text of one graph function."""
    return _Printer().function(f)


def module_to_str(mod) -> str:
    """The text of a module: graph functions first, then the PrimFuncs they call."""
    parts = []
    graph = [(k, f) for k, f in mod.items() if isinstance(f, Function)]
    other = [(k, f) for k, f in mod.items() if not isinstance(f, Function)]
    for name, f in graph + other:
        text = f.script()
        if isinstance(f, Function) and name != f.name:
            text = f"# as {name!r}\n" + text
        parts.append(text)
    return "\n\n".join(parts)


def to_html(text: str) -> str:
    """Syntax-highlighted HTML for Jupyter."""
    if not available("pygments"):  # the course extra has it; plain text reads fine too
        import html
        return f"<pre>{html.escape(text)}</pre>"
    pygments = require("pygments", "syntax highlighting")
    require("pygments.formatters", "syntax highlighting")
    require("pygments.lexers", "syntax highlighting")
    return pygments.highlight(text, pygments.lexers.PythonLexer(),
                              pygments.formatters.HtmlFormatter(noclasses=True, nobackground=True))


__all__ = ["function_to_str", "module_to_str", "to_html"]


register("graph.function", function_to_str)
register("graph.html", to_html)

