"""Graph functions as JSON plus arrays: the form a checkpoint stores a model's IR in (no
pickle). Nodes are listed in post order, each naming its operands by position.

    >>> doc, arrays = function_to_json(func)         # json.dumps(doc); np.savez(**arrays)
    >>> same = function_from_json(doc, arrays)       # structurally equal to func
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import GraphError
from ..ops.types import Attrs, TensorType
from .expr import Call, Constant, Expr, Function, Tuple, TupleGetItem, Var, post_order

FORMAT = 1


def function_to_json(func: Function) -> tuple[dict, dict[str, np.ndarray]]:
    """``(document, arrays)``: the document refers to constants as ``arrays`` keys."""
    index: dict[int, int] = {}
    nodes: list[dict] = []
    arrays: dict[str, np.ndarray] = {}
    for n in list(func.params) + post_order(func.body):
        if id(n) in index:
            continue
        if isinstance(n, Var):
            if not isinstance(n.type, TensorType):
                raise GraphError(f"cannot serialize the tuple-typed input {n.name!r}")
            d = {"kind": "var", "name": n.name, "shape": list(n.type.shape),
                 "dtype": n.type.dtype}
        elif isinstance(n, Constant):
            key = f"c{len(arrays)}"
            arrays[key] = np.asarray(n.data)
            d = {"kind": "const", "array": key, "name": n.name, "owner": n.owner}
        elif isinstance(n, Call):
            d = {"kind": "call", "op": n.op, "args": [index[id(a)] for a in n.args],
                 "attrs": _plain(dict(n.attrs)), "name": n.name}
        elif isinstance(n, Tuple):
            d = {"kind": "tuple", "fields": [index[id(f)] for f in n.fields]}
        elif isinstance(n, TupleGetItem):
            d = {"kind": "item", "of": index[id(n.tuple_value)], "index": n.index}
        else:
            raise GraphError(f"cannot serialize {n!r}; serialize graphs before legalization")
        index[id(n)] = len(nodes)
        nodes.append(d)
    doc = {"format": FORMAT, "name": func.name, "nodes": nodes,
           "params": [index[id(p)] for p in func.params], "body": index[id(func.body)],
           "attrs": _plain(dict(func.attrs))}
    return doc, arrays


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def function_from_json(doc: Mapping, arrays: Mapping[str, np.ndarray]) -> Function:
    """The function :func:`function_to_json` wrote."""
    if doc.get("format") != FORMAT:
        raise GraphError(f"graph document format {doc.get('format')!r}; this mlcbook reads "
                         f"format {FORMAT}")
    built: list[Expr] = []
    for d in doc["nodes"]:
        kind = d["kind"]
        if kind == "var":
            built.append(Var(d["name"], TensorType(tuple(d["shape"]), d["dtype"])))
        elif kind == "const":
            built.append(Constant(np.asarray(arrays[d["array"]]), d["name"], d["owner"]))
        elif kind == "call":
            built.append(Call(d["op"], tuple(built[i] for i in d["args"]), Attrs(d["attrs"]),
                              d["name"]))
        elif kind == "tuple":
            built.append(Tuple(tuple(built[i] for i in d["fields"])))
        elif kind == "item":
            built.append(TupleGetItem(built[d["of"]], d["index"]))
        else:
            raise GraphError(f"unknown node kind {kind!r} in a graph document")
    return Function(tuple(built[i] for i in doc["params"]), built[doc["body"]], doc["name"],
                    Attrs(doc["attrs"]))


__all__ = ["function_to_json", "function_from_json"]
