"""The script parser: Python-syntax source in mlcbook's dialect -> loop IR, without running it.

Two entry points share one parser: :func:`parse` reads text (what ``print(func)`` shows, a
function or a module), and :func:`parse_python_function` reads a decorated function's source
through :mod:`inspect`, resolving plain int/float/str constants from its globals and closure::

    N = 128

    @T.prim_func
    def copy(A: T.Buffer((N,), "float32"), B: T.Buffer((N,), "float32")):
        for i in range(N):
            with T.block("B"):
                vi = T.axis.spatial(N, i)
                B[vi] = A[vi]

The result is verified. Any construct the parser does not understand raises a
:class:`~mlcbook.errors.ScriptError` pointing at the line and column of the real source.
Where the text is freer than the printer's output, the parser normalizes: a bare number takes
the dtype of the expression it meets (``x + 1`` with ``x`` int64 is ``x + T.int64(1)``), and a
block without ``T.reads``/``T.writes`` gets regions inferred from its body (see :mod:`.infer`).
"""

from __future__ import annotations

import ast
import functools
import inspect
from dataclasses import dataclass, field

from ..errors import ScriptError, TIRError
from ..tir.expr import Buffer, BufferLoad, Const, PrimExpr, Var
from ..tir.function import IRModule, PrimFunc, root_block_realize
from ..tir.stmt import (Allocate, Block, BlockRealize, BufferStore, Evaluate, For, IfThenElse,
                        IterVar, Stmt, seq)
from ..tir.verify import verify
from . import dialect
from .exprs import BINOPS, ExprParser, Source
from ..tir.regions import infer_regions

_LOOP_KINDS = {"serial": "serial", "parallel": "parallel", "vectorized": "vectorized",
               "unroll": "unrolled"}
_HEADERS = {"reads", "writes", "where", "block_attr"}


def _user_facing(fn):
    # a ScriptError already says where the script is wrong; the parser's own frames would
    # only bury that under a long traceback
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ScriptError as e:
            raise e.with_traceback(None) from None
    return wrapper


@_user_facing
def parse(text: str):
    """Parse script text: one ``@T.prim_func`` gives a PrimFunc; an ``@T.ir_module`` class or
    several functions give an IRModule. ``import`` lines are skipped.

    >>> f = parse(str(func))      # structurally equal to func
    """
    src = Source.from_text(text, None, 1)
    tree = src.parse()
    nodes = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))
             and not _is_docstring(n)]
    env = {"T": dialect}.__getitem__
    if len(nodes) == 1 and isinstance(nodes[0], ast.ClassDef):
        return _parse_class(src, env, nodes[0])
    for n in nodes:
        if not isinstance(n, ast.FunctionDef):
            raise src.error(n, "script text holds @T.prim_func functions or one @T.ir_module "
                               "class; this statement is neither")
    if not nodes:
        raise ScriptError("the script text is empty; give a @T.prim_func function")
    funcs = [_Parser(src, env).function(n) for n in nodes]
    if len(funcs) == 1:
        return funcs[0]
    return _module(src, nodes, funcs)


@_user_facing
def parse_python_function(fn, num_outputs: int = 1, root: bool = True) -> PrimFunc:
    """The PrimFunc written as the body of the Python function ``fn`` (its source is read,
    never run)."""
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError):
        raise ScriptError(
            f"cannot read the source of {getattr(fn, '__name__', fn)!r} (defined in an exec'd "
            "string?); parse its text with mb.script.parse(text) instead") from None
    src = Source.from_text("".join(lines), filename, first)
    fndef = src.parse().body[0]
    if not isinstance(fndef, ast.FunctionDef):
        raise src.error(fndef, "@T.prim_func decorates a `def` function")
    env = _python_env(fn)
    annotations = getattr(fn, "__annotations__", {})
    return _Parser(src, env, annotations).function(fndef, num_outputs, root)


def _python_env(fn):
    closure = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # a closure variable not assigned yet
            pass
    glob = fn.__globals__

    def lookup(name):
        if name in closure:
            return closure[name]
        return glob[name]
    return lookup


def _is_docstring(n) -> bool:
    return (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str))


def _parse_class(src, env, cls: ast.ClassDef) -> IRModule:
    if not any(_Parser(src, env).t_member(d) == "ir_module" for d in cls.decorator_list):
        raise src.error(cls, f"class {cls.name!r} must be decorated with @T.ir_module")
    nodes = []
    for n in cls.body:
        if isinstance(n, ast.FunctionDef):
            nodes.append(n)
        elif not (isinstance(n, ast.Pass) or _is_docstring(n)):
            raise src.error(n, "an @T.ir_module class holds only @T.prim_func methods")
    return _module(src, nodes, [_Parser(src, env).function(n) for n in nodes])


def _module(src, nodes, funcs) -> IRModule:
    out = {}
    for n, f in zip(nodes, funcs):
        if n.name in out:
            raise src.error(n, f"two functions are named {n.name!r}; rename one")
        out[n.name] = f
    return IRModule(out)

@dataclass
class _Ctx:
    """What a list of statements may declare: ``block`` headers, ``root`` (the function body
    wrapped in the implicit root block) allocations and attributes, ``func`` attributes."""

    kind: str
    name: str = ""
    iter_vars: list = field(default_factory=list)
    values: list = field(default_factory=list)
    allocs: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)   # header name -> its AST call
    where: PrimExpr | None = None
    annotations: dict | None = None
    init: Stmt | None = None
    attrs: dict | None = None


class _Parser(ExprParser):
    """Statements and functions; expressions come from :class:`ExprParser`."""

    def __init__(self, src: Source, env, annotations=None):
        super().__init__(src, env)
        self.annotations = annotations or {}
        self.loop_extents: dict[int, PrimExpr] = {}

    # --- statements ------------------------------------------------------------------------
    def stmts(self, nodes, ctx: _Ctx | None) -> Stmt:
        out = []
        for n in nodes:
            s = self.stmt(n, ctx)
            if s is not None:
                out.append(s)
        return seq(*out)

    def scoped(self, nodes) -> Stmt:
        self.push()
        body = self.stmts(nodes, None)
        self.pop()
        return body

    def stmt(self, node, ctx):
        try:
            return self._stmt(node, ctx)
        except TIRError as e:
            raise self.err(node, e.message) from None

    def _stmt(self, node, ctx):
        if isinstance(node, ast.For):
            return self._for(node)
        if isinstance(node, ast.With):
            return self._with(node, ctx)
        if isinstance(node, ast.If):
            cond = self.expr(node.test)
            return IfThenElse(cond, self.scoped(node.body),
                              self.scoped(node.orelse) if node.orelse else None)
        if isinstance(node, ast.Assign):
            return self._assign(node, ctx)
        if isinstance(node, ast.AugAssign):
            op = BINOPS.get(type(node.op))
            if op is None or not isinstance(node.target, ast.Subscript):
                raise self.err(node, "augmented assignment stores into a buffer, e.g. "
                                     "C[vi] += A[vi]")
            return self._store(node.target, node.value, op)
        if isinstance(node, ast.Expr):
            return self._expr_stmt(node, ctx)
        if isinstance(node, ast.Pass):
            return None
        raise self.err(node, f"{type(node).__name__} statements are not part of the script "
                             "dialect (it has for, with T.block/T.init/T.allocate, if, stores "
                             "and T.* calls)")

    def _store(self, target: ast.Subscript, value_node, op: str | None = None) -> BufferStore:
        buf = self.buffer(target.value)
        indices = tuple(self.expr(i) for i in self.index_nodes(target.slice, loads=True))
        value = self.expr(value_node)
        if op is not None:
            value = self.binary(op, BufferLoad(buf, indices), value)
        return BufferStore(buf, self.retype(value, buf.dtype), indices)

    def _assign(self, node: ast.Assign, ctx):
        if len(node.targets) != 1:
            raise self.err(node, "assign to one target at a time")
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Subscript):
            return self._store(target, value)
        name = self.t_member(value.func) if isinstance(value, ast.Call) else None
        if name in ("axis.spatial", "axis.reduce", "axis.remap"):
            if ctx is None or ctx.kind != "block":
                raise self.err(node, f"T.{name} binds iteration variables directly inside a "
                                     "`with T.block(...):`")
            self._axis(node, value, name, ctx)
            return None
        if name == "alloc_buffer":
            if ctx is None or ctx.kind == "func":
                raise self.err(node, "T.alloc_buffer belongs directly inside a block or at "
                                     "the top of a function with a root block; elsewhere "
                                     "use `with T.allocate(shape, dtype) as X:`")
            if not isinstance(target, ast.Name):
                raise self.err(target, "T.alloc_buffer is assigned to one name")
            shape, dtype, scope = self.buffer_args(value, name)
            buf = Buffer(target.id, shape, dtype, scope)
            self.define(target.id, buf)
            ctx.allocs.append(buf)
            return None
        if name is not None and name not in dialect.NAMES:
            raise self.unknown_t(value.func, name)
        raise self.err(node, "a script assigns only buffer elements (A[i] = ...), iteration "
                             "variables (vi = T.axis.spatial(...)) and allocations "
                             "(X = T.alloc_buffer(...)); it has no local variables")

    def _axis(self, node: ast.Assign, call: ast.Call, name: str, ctx: _Ctx) -> None:
        target = node.targets[0]
        if name == "axis.remap":
            a = self.args(call, name, ["kinds", "bindings"], 2)
            kinds = self.py_value(a["kinds"], "the kinds of T.axis.remap")
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            bind_nodes = a["bindings"]
            if not isinstance(bind_nodes, (ast.List, ast.Tuple)):
                raise self.err(bind_nodes, "T.axis.remap takes a list of loop variables")
            if (not isinstance(kinds, str) or set(kinds) - {"S", "R"}
                    or not len(kinds) == len(names) == len(bind_nodes.elts)):
                raise self.err(call, "T.axis.remap(kinds, [loop vars]) needs one kind letter "
                                     "(S spatial, R reduce) per loop variable and per target")
            for t, kind, b in zip(names, kinds, bind_nodes.elts):
                v = self.expr(b)
                if not isinstance(v, Var) or id(v) not in self.loop_extents:
                    raise self.err(b, "T.axis.remap binds loop variables of enclosing loops; "
                                      "bind other expressions with T.axis.spatial(extent, expr)")
                self._iter_var(t, self.loop_extents[id(v)], v, v.dtype,
                               "spatial" if kind == "S" else "reduce", ctx)
            return
        a = self.args(call, name, ["extent", "binding", "dtype"], 2)
        extent, value = self.expr(a["extent"]), self.expr(a["binding"])
        self._iter_var(target, extent, value, self.dtype(a.get("dtype"), extent.dtype),
                       name.split(".")[1], ctx)

    def _iter_var(self, target, extent, value, dtype, kind, ctx: _Ctx) -> None:
        if not isinstance(target, ast.Name):
            raise self.err(target, "an iteration variable is bound to a plain name")
        var = Var(target.id, dtype)
        self.define(target.id, var)
        ctx.iter_vars.append(IterVar(var, extent, kind))
        ctx.values.append(value)

    def _expr_stmt(self, node: ast.Expr, ctx):
        call = node.value
        name = self.t_member(call.func) if isinstance(call, ast.Call) else None
        if name == "evaluate":
            a = self.args(call, name, ["value"], 1)
            return Evaluate(self.expr(a["value"]))
        if name in _HEADERS:
            if ctx is None or ctx.kind != "block":
                raise self.err(node, f"T.{name}(...) belongs directly inside a "
                                     "`with T.block(...):`")
            if name in ctx.seen:
                raise self.err(node, f"T.{name} is given twice in block {ctx.name!r}")
            ctx.seen[name] = call
            if name == "where":
                ctx.where = self.expr(self.args(call, name, ["predicate"], 1)["predicate"])
            elif name == "block_attr":
                ctx.annotations = self._attr_dict(self.args(call, name, ["attrs"], 1)["attrs"],
                                                  name)
            return None
        if name == "func_attr":
            if ctx is None or ctx.kind not in ("root", "func") or ctx.attrs is not None:
                raise self.err(node, "T.func_attr({...}) appears once, directly in the body "
                                     "of the function")
            ctx.attrs = self._attr_dict(self.args(call, name, ["attrs"], 1)["attrs"], name)
            return None
        if _is_docstring(node):
            return None
        if name is not None:
            raise self.unknown_t(call.func, name, " as a statement")
        raise self.err(node, "this expression statement does nothing; use T.evaluate(...) "
                             "for a no-op")

    def _attr_dict(self, node, name) -> dict:
        d = self.py_value(node, f"the annotations of T.{name}")
        if not isinstance(d, dict) or not all(isinstance(k, str) for k in d):
            raise self.err(node, f"T.{name} takes a dict with string keys")
        return d

    def _with(self, node: ast.With, ctx):
        if len(node.items) != 1 or not isinstance(node.items[0].context_expr, ast.Call):
            raise self.err(node, "a with statement takes one T.block(...), T.init() or "
                                 "T.allocate(...)")
        item = node.items[0]
        call = item.context_expr
        name = self.t_member(call.func)
        if name == "block":
            return self._block(node, call)
        if name == "init":
            if ctx is None or ctx.kind != "block" or ctx.init is not None:
                raise self.err(node, "`with T.init():` appears once, directly inside a "
                                     "`with T.block(...):`")
            self.args(call, name, [], 0)
            ctx.init = self.scoped(node.body)
            return None
        if name == "allocate":
            if not isinstance(item.optional_vars, ast.Name):
                raise self.err(node, "write `with T.allocate(shape, dtype) as X:`")
            shape, dtype, scope = self.buffer_args(call, name)
            buf = Buffer(item.optional_vars.id, shape, dtype, scope)
            self.push()
            self.define(buf.name, buf)
            body = self.scoped(node.body)
            self.pop()
            return Allocate(buf, body)
        if name is None:
            raise self.err(call, "a with statement takes T.block(...), T.init() or "
                                 "T.allocate(...)")
        raise self.unknown_t(call.func, name, " in a with statement")

    def _block(self, node: ast.With, call: ast.Call) -> BlockRealize:
        name = self.py_value(self.args(call, "block", ["name"], 1)["name"], "a block name")
        if not isinstance(name, str):
            raise self.err(call, "T.block takes the block's name, a string")
        ctx = _Ctx("block", name)
        self.push()
        body = self.stmts(node.body, ctx)
        # regions are read at the end, so they may mention the block's allocations
        reads = self.regions(ctx.seen["reads"], "reads") if "reads" in ctx.seen else None
        writes = self.regions(ctx.seen["writes"], "writes") if "writes" in ctx.seen else None
        self.pop()
        if reads is None or writes is None:
            inferred = infer_regions(body, ctx.init, tuple(ctx.iter_vars), tuple(ctx.allocs))
            reads = inferred[0] if reads is None else reads
            writes = inferred[1] if writes is None else writes
        block = Block(name, tuple(ctx.iter_vars), reads, writes, body, ctx.init,
                      tuple(ctx.allocs), ctx.annotations or ())
        pred = Const(True, "bool") if ctx.where is None else ctx.where
        return BlockRealize(tuple(ctx.values), pred, block)

    def _for(self, node: ast.For) -> For:
        if node.orelse:
            raise self.err(node.orelse[0], "a for loop of the script has no else branch")
        it = node.iter
        if not isinstance(it, ast.Call):
            raise self.err(it, "a loop runs over range(n), T.grid(...), T.serial(n), "
                               "T.parallel(n), T.vectorized(n) or T.unroll(n)")
        kind, ann, dtype = "serial", {}, None
        if isinstance(it.func, ast.Name) and it.func.id == "range" and self.local("range") is None:
            if it.keywords or not 1 <= len(it.args) <= 2:
                raise self.err(it, "write range(n); loops start at 0")
            if len(it.args) == 2 and self.py_value(it.args[0], "a loop start") != 0:
                raise self.err(it.args[0], "loops start at 0; write range(n) and add the "
                                           "offset to the loop variable where it is used")
            extents = [self.expr(it.args[-1])]
        else:
            name = self.t_member(it.func)
            if name == "grid":
                if it.keywords or not it.args:
                    raise self.err(it, "T.grid takes the loop extents, e.g. T.grid(128, 128)")
                extents = [self.expr(a) for a in it.args]
            elif name in _LOOP_KINDS:
                a = self.args(it, name, ["extent", "annotations", "dtype"], 1)
                extents, kind = [self.expr(a["extent"])], _LOOP_KINDS[name]
                if "annotations" in a:
                    ann = self._attr_dict(a["annotations"], name)
                dtype = self.dtype(a.get("dtype"))
            elif name is None:
                raise self.err(it, "a loop runs over range(n), T.grid(...), T.serial(n), "
                                   "T.parallel(n), T.vectorized(n) or T.unroll(n)")
            else:
                raise self.unknown_t(it.func, name, " as a loop")
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        if len(targets) != len(extents) or not all(isinstance(t, ast.Name) for t in targets):
            raise self.err(node.target, f"the loop defines {len(extents)} variable(s); "
                                        "name each one")
        self.push()
        loop_vars = []
        for t, ext in zip(targets, extents):
            v = Var(t.id, dtype or ext.dtype)
            self.define(t.id, v)
            self.loop_extents[id(v)] = ext
            loop_vars.append(v)
        body = self.stmts(node.body, None)
        self.pop()
        for v in loop_vars:
            del self.loop_extents[id(v)]
        for v, ext in reversed(list(zip(loop_vars, extents))):
            body = For(v, ext, body, kind, ann)
        return body

    # --- functions -------------------------------------------------------------------------
    def function(self, fndef: ast.FunctionDef, num_outputs=None, root=None) -> PrimFunc:
        if num_outputs is None:
            num_outputs, root = self._decorator(fndef)
        a = fndef.args
        if a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults:
            raise self.err(fndef, "a @T.prim_func takes plain buffer parameters "
                                  "A: T.Buffer(shape, dtype)")
        params = []
        for arg in a.args:
            params.append(self._param(arg))
            self.define(arg.arg, params[-1])
        ctx = _Ctx("root" if root else "func", "root")
        body_nodes = fndef.body[1:] if _is_docstring(fndef.body[0]) else fndef.body
        body = self.stmts(body_nodes, ctx)
        if root:
            body = root_block_realize(body, tuple(ctx.allocs))
        try:
            func = PrimFunc(fndef.name, tuple(params), body, num_outputs, ctx.attrs or ())
        except TIRError as e:
            raise self.err(fndef, e.message) from None
        verify(func)
        return func

    def _param(self, arg: ast.arg) -> Buffer:
        given = self.annotations.get(arg.arg)
        if isinstance(given, dialect.BufferType):  # already evaluated by Python
            try:
                return Buffer(arg.arg, given.shape, given.dtype, given.scope)
            except TIRError as e:
                raise self.err(arg, e.message) from None
        ann = arg.annotation
        if not (isinstance(ann, ast.Call) and self.t_member(ann.func) == "Buffer"):
            raise self.err(arg, f"parameter {arg.arg!r} needs a buffer annotation, e.g. "
                                f"{arg.arg}: T.Buffer((128, 128), \"float32\")")
        shape, dtype, scope = self.buffer_args(ann, "Buffer")
        return Buffer(arg.arg, shape, dtype, scope)

    def _decorator(self, fndef) -> tuple[int, bool]:
        for d in fndef.decorator_list:
            func = d.func if isinstance(d, ast.Call) else d
            name = self.t_member(func)
            if name == "prim_func":
                if not isinstance(d, ast.Call):
                    return 1, True
                a = self.args(d, name, ["num_outputs", "root"], 0)
                if d.args:
                    raise self.err(d, "write @T.prim_func(num_outputs=..., root=...)")
                n = self.py_value(a["num_outputs"], "num_outputs") if "num_outputs" in a else 1
                root = self.py_value(a["root"], "root") if "root" in a else True
                if not isinstance(n, int) or isinstance(n, bool) or not isinstance(root, bool):
                    raise self.err(d, "num_outputs is an int and root is True or False")
                return n, root
            if name is not None:
                raise self.unknown_t(func, name, " as a function decorator")
        raise self.err(fndef, f"function {fndef.name!r} needs the @T.prim_func decorator")


def prim_func(fn=None, *, num_outputs: int = 1, root: bool = True):
    """Decorator: parse the decorated function's source into a :class:`~mlcbook.tir.PrimFunc`.

    ``@T.prim_func(num_outputs=2)`` marks the last two parameters as outputs;
    ``root=False`` takes the body as is instead of wrapping it in the root block.
    """
    def decorate(f):
        return parse_python_function(f, num_outputs=num_outputs, root=root)

    return decorate if fn is None else decorate(fn)


def ir_module(cls):
    """Class decorator: an :class:`~mlcbook.tir.IRModule` of the class's ``@T.prim_func`` methods."""
    funcs = {}
    for name, f in vars(cls).items():
        if name.startswith("__"):
            continue
        if not isinstance(f, PrimFunc):
            raise ScriptError(f"{cls.__name__}.{name} in an @T.ir_module class is not a "
                              "@T.prim_func; decorate it with @T.prim_func or move it out")
        funcs[name] = f
    if not funcs:
        raise ScriptError(f"class {cls.__name__!r} decorated with @T.ir_module has no "
                          "@T.prim_func methods; decorate each function with @T.prim_func")
    return IRModule(funcs)
