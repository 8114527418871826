"""Whole-array numpy in an answer that should loop over scalars, found by reading its source.

Chapter 1's exercises ask for *low-level numpy*: explicit loops and one scalar at a time,
so that every step of the computation is written out (the loop nests later chapters turn
into loop IR). :func:`whole_array_use` reads a function's source, and that of the helper
functions it calls from the same notebook, and names the first whole-array operation::

    def lnumpy_mm_relu(A, B, C):
        C[...] = np.maximum(A @ B, 0)

    whole_array_use(lnumpy_mm_relu)
    -> "line 2: `C[...] = np.maximum(A @ B, 0)`: `@` multiplies whole matrices at once"

What counts as whole-array: the ``@`` operator; a slice or ``...`` as an index (``A[i, :]``);
``.T``; numpy's reductions and products (``np.sum``, ``A.max()``, ``np.dot`` ...); and an
element-wise numpy function (``np.maximum``, ``np.exp`` ...) applied to a whole array (a
parameter, or an array made in the function) rather than to a scalar. Allocating arrays
(``np.empty``) and ``reshape`` are fine. This reads the code as written; it is a guard
against shortcuts, not a proof.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

import numpy as np

#: numpy functions that compute over whole arrays whatever their arguments are.
_WHOLE_ARRAY_FUNCS = frozenset({
    "matmul", "dot", "vdot", "inner", "outer", "einsum", "tensordot", "kron", "sum", "nansum",
    "prod", "mean", "average", "max", "min", "amax", "amin", "nanmax", "nanmin", "argmax",
    "argmin", "cumsum", "cumprod", "convolve", "correlate", "where", "clip", "transpose",
    "softmax", "linalg", "lib", "fft", "diff", "sort", "dstack", "stack", "concatenate",
    "broadcast_to", "tile", "repeat", "pad", "flip", "sliding_window_view", "apply_along_axis",
})
#: Array methods that compute over the whole array.
_WHOLE_ARRAY_METHODS = frozenset({
    "sum", "prod", "mean", "max", "min", "argmax", "argmin", "cumsum", "cumprod", "dot", "clip",
    "transpose", "swapaxes", "fill", "sort", "std", "var", "all", "any", "round",
})
#: numpy functions that make new arrays (fine: the caller fills them one scalar at a time).
_ALLOCATORS = frozenset({"empty", "zeros", "ones", "full", "empty_like", "zeros_like",
                         "ones_like", "full_like"})
_SHAPE_ATTRS = frozenset({"shape", "ndim", "size", "dtype", "strides"})
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def whole_array_use(func: types.FunctionType) -> str | None:
    """Where ``func`` (or a helper it calls from its own module) uses whole-array numpy, as
    ``"line N: `source`: why"``; None if it does not, or if its source cannot be read."""
    seen: set[types.CodeType] = set()
    todo = [func]
    while todo:
        fn = todo.pop()
        if fn.__code__ in seen:
            continue
        seen.add(fn.__code__)
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError):
            continue
        source = textwrap.dedent("".join(lines))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        finder = _Finder(fn.__globals__)
        finder.visit(tree)
        if finder.found is not None:
            node, why = finder.found
            text = source.splitlines()[node.lineno - 1].strip()
            where = f"line {first + node.lineno - 1}" + (
                f" of {fn.__name__}" if fn is not func else "")
            return f"{where}: `{text}`: {why}"
        todo.extend(g for g in finder.helpers if isinstance(g, types.FunctionType)
                    and g.__globals__ is func.__globals__)
    return None


class _Finder(ast.NodeVisitor):
    def __init__(self, scope: dict):
        self.scope = scope
        self.arrays: set[str] = set()
        self.helpers: list[object] = []
        self.found: tuple[ast.AST, str] | None = None

    def _report(self, node: ast.AST, why: str) -> None:
        if self.found is None:
            self.found = (node, why)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.arrays.update(a.arg for a in node.args.args + node.args.kwonlyargs)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        if self._is_array(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.arrays.add(target.id)
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult):
            self._report(node, "`@` multiplies whole matrices at once")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult):
            self._report(node, "`@=` multiplies whole matrices at once")
        elif isinstance(node.target, ast.Name) and node.target.id in self.arrays:
            self._report(node, f"`{node.target.id} {_OPS.get(type(node.op), 'op')}= ...` "
                               "changes a whole array at once")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        on_shape = isinstance(node.value, ast.Attribute) and node.value.attr in _SHAPE_ATTRS
        if not on_shape:
            for part in index:
                if isinstance(part, ast.Slice):
                    self._report(node, "a slice (`:`) takes a whole row, column or block at "
                                       "once")
                elif isinstance(part, ast.Constant) and part.value is Ellipsis:
                    self._report(node, "`...` stands for whole dimensions at once")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ("T", "mT"):
            self._report(node, f"`.{node.attr}` transposes a whole array")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self._numpy_name(node.func)
        if name is not None:
            if name in _WHOLE_ARRAY_FUNCS:
                self._report(node, f"np.{name} computes over whole arrays")
            elif name not in _ALLOCATORS and any(self._is_array(a) for a in node.args):
                self._report(node, f"np.{name} is applied to a whole array here, not to one "
                                   "scalar")
        elif isinstance(node.func, ast.Attribute) and node.func.attr in _WHOLE_ARRAY_METHODS \
                and not (isinstance(node.func.value, ast.Name)
                         and isinstance(self.scope.get(node.func.value.id), types.ModuleType)):
            self._report(node, f"`.{node.func.attr}()` computes over a whole array")
        elif isinstance(node.func, ast.Name) and node.func.id in self.scope:
            self.helpers.append(self.scope[node.func.id])
        self.generic_visit(node)

    def _numpy_name(self, func: ast.expr) -> str | None:
        """``name`` if ``func`` is ``np.name`` (or ``np.sub.name``) or a numpy function."""
        if isinstance(func, ast.Attribute):
            root = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and self.scope.get(root.id) is np:
                inner = func
                while isinstance(inner.value, ast.Attribute):
                    inner = inner.value
                return inner.attr if inner is not func else func.attr
            return None
        if isinstance(func, ast.Name):
            value = self.scope.get(func.id)
            module = getattr(value, "__module__", None) or ""
            if callable(value) and module.split(".")[0] == "numpy":
                return getattr(value, "__name__", func.id)
        return None

    def _is_array(self, node: ast.expr) -> bool:
        """True if ``node`` is a whole array: a parameter or array variable, an allocation,
        or arithmetic/reshape on one (indexing it, or reading its shape, is not)."""
        if isinstance(node, ast.Name):
            return node.id in self.arrays
        if isinstance(node, ast.BinOp):
            return self._is_array(node.left) or self._is_array(node.right)
        if isinstance(node, ast.UnaryOp):
            return self._is_array(node.operand)
        if isinstance(node, ast.Call):
            if self._numpy_name(node.func) in _ALLOCATORS:
                return True
            return (isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("reshape", "astype", "copy", "ravel", "flatten")
                    and self._is_array(node.func.value))
        return False

