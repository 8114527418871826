"""Operator fusion by kind (the TVM paper, section 3): which op calls of a graph become one
kernel, decided from each op's kind in the registry and the graph's post-dominators.

A *group* is a set of calls computed by one kernel; only its last call (the *output*) is
seen outside it. The rules, applied to each group in the order of the graph:

* an **out-elementwise-fusable** op (conv, matmul, gemm, pooling, softmax) or a
  **reduction** takes in the elementwise/broadcast ops after it, up to its post-dominator,
  when every op on every path there is elementwise or broadcast (conv + bias + relu, and a
  residual ``add`` whose other operand is computed elsewhere);
* a group of **elementwise/broadcast** ops joins its post-dominator when everything on the
  way is elementwise/broadcast and the post-dominator is injective or a reduction
  (``exp`` into the ``sum`` of a softmax-like reduction);
* an **injective** group (transpose, slice, concat, pad) joins its post-dominator when every
  op on the way, the post-dominator included, is injective or simpler, except a concat into
  a transpose (an im2col of a conv's weight gradient), which a select per element would
  read from every input at once;
* **opaque** ops, calls with several outputs and reshapes (which cost nothing: they are views
  of memory) are never fused; neither is anything into a conv or matmul's inputs, which the
  kernel reads many times;
* no group grows past :data:`MAX_GROUP_OPS` calls: a chain of hundreds of elementwise ops
  becomes several kernels, so that compiling stays linear in the chain's length (inlining
  a group costs the square of its size) and the fused expression stays shallow.

The post-dominator of a call is the first call that every path from it to the function's
result passes through. Fusing a call *only* up to its post-dominator is what makes diamonds
safe: a value used twice is fused only when both uses meet again inside the group, so no
value inside a group is needed outside it.

    >>> plan = fuse_ops(func)
    >>> print(explain_fusion(func))
    group conv1 (out_elemwise_fusable): conv1, relu1
    boundary relu1 -> pool1: pool1 is out_elemwise_fusable; elementwise ops are not fused into
        the inputs of a conv, matmul or pooling kernel
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ops import get as get_op
from ..ops.registry import OpKind
from ..ops.types import TensorType
from .expr import Call, Function, children, post_order
from .legalize import index_bounds


#: the most op calls one fused kernel computes (the longest chains of real models, such as
#: an erf GELU or a LayerNorm with its scale and shift, have about a dozen)
MAX_GROUP_OPS = 32


@dataclass
class Group:
    """Calls computed by one kernel, in evaluation order; ``calls[-1]`` is the output."""

    calls: list[Call]
    kind: OpKind

    @property
    def output(self) -> Call:
        return self.calls[-1]

    @property
    def name(self) -> str:
        return self.output.name


@dataclass
class FusionPlan:
    """The groups of a function and, for each producer -> consumer edge that stayed a kernel
    boundary, why."""

    groups: list[Group]
    boundaries: list[tuple[str, str, str]]

    def group_of(self, call: Call) -> Group:
        return self._by_call[id(call)]

    def has(self, call: Call) -> bool:
        return id(call) in self._by_call

    def __post_init__(self):
        self._by_call = {id(c): g for g in self.groups for c in g.calls}


_SINK = None  # the function's result: a post-dominator of everything


def _fusable(n) -> bool:
    # gather's indices are data that a compiled model checks before its kernel runs
    # (legalize.index_bounds): it keeps a kernel of its own
    return (isinstance(n, Call) and isinstance(n.type, TensorType) and not get_op(n.op).is_view
            and get_op(n.op).kind != OpKind.OPAQUE and n.type.size > 0 and not index_bounds(n)
            and all(isinstance(a.type, TensorType) and a.type.size > 0 for a in n.args))


def _never(n: Call) -> str:
    if get_op(n.op).is_view:
        return f"{n.name} ({n.op}) is a view of memory: no kernel, nothing to fuse"
    return f"{n.name} ({n.op}) is never fused (opaque, several outputs, or empty tensors)"


def _kind(n: Call) -> OpKind:
    return get_op(n.op).kind


class _Fuser:
    def __init__(self, func: Function):
        self.order = [n for n in post_order(func.body) if isinstance(n, Call)]
        self.index = {id(n): k for k, n in enumerate(self.order)}
        self.consumers: dict[int, list] = {id(n): [] for n in self.order}
        self.escapes: set[int] = {id(func.body)}  # used by something that is not a Call
        for n in post_order(func.body):
            for c in children(n):
                if id(c) in self.consumers:
                    if isinstance(n, Call):
                        self.consumers[id(c)].append(n)
                    else:
                        self.escapes.add(id(c))
        self.ipdom = self._post_dominators()
        self.parent = {id(n): id(n) for n in self.order}
        self.kind = {id(n): _kind(n) for n in self.order}
        self.size = {id(n): 1 for n in self.order}  # calls in the group, by its root
        self.refusals: dict[str, str] = {}  # call name -> why its group stopped there

    # --- post-dominators (reverse topological order, LCA in the post-dominator tree) ------------
    def _post_dominators(self) -> dict[int, Call | None]:
        ipdom: dict[int, Call | None] = {}
        depth: dict[int, int] = {}

        def lca(a, b):
            while a is not b:
                if a is _SINK or b is _SINK:
                    return _SINK
                if depth[id(a)] < depth[id(b)]:
                    a, b = b, a
                a = ipdom[id(a)]
            return a

        for n in reversed(self.order):
            cons = self.consumers[id(n)]
            if id(n) in self.escapes or not cons:
                p = _SINK
            else:
                p = cons[0]
                for c in cons[1:]:
                    p = lca(p, c)
            ipdom[id(n)] = p
            depth[id(n)] = 0 if p is _SINK else depth[id(p)] + 1
        return ipdom

    # --- groups (union-find; a group's root is its output call) ---------------------------------
    def find(self, k: int) -> int:
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def _path(self, src: Call, dst: Call) -> list[Call] | None:
        """Every call on a path from ``src`` to ``dst`` (``dst`` included, ``src`` not)."""
        seen, stack, out = {id(dst)}, [src], [dst]
        while stack:
            n = stack.pop()
            for c in self.consumers[id(n)]:
                if id(c) in seen:
                    continue
                if self.index[id(c)] > self.index[id(dst)]:
                    return None  # cannot happen below a post-dominator; be safe
                seen.add(id(c))
                out.append(c)
                stack.append(c)
        return out

    def _merge(self, src: Call, path: list[Call]) -> None:
        root = self.find(id(path[0]))  # path[0] is the post-dominator: the new output
        kinds = [self.kind[self.find(id(src))]] + [self.kind[self.find(id(c))] for c in path]
        size = self._merged_size(src, path)
        for c in [src] + path:
            self.parent[self.find(id(c))] = root
        self.kind[root] = max(kinds)
        self.size[root] = size

    def _merged_size(self, src: Call, path: list[Call]) -> int:
        roots = {self.find(id(c)) for c in [src] + path}
        return sum(self.size[r] for r in roots)

    def _try(self, n: Call, phase: int) -> None:
        gkind = self.kind[self.find(id(n))]
        p = self.ipdom[id(n)]
        if p is _SINK:
            return
        why = self._refuse(n, p, gkind, phase)
        if why is None:
            self._merge(n, self._path(n, p))
        elif why:
            self.refusals[n.name] = why

    def _refuse(self, n: Call, p: Call, gkind: OpKind, phase: int) -> str | None:
        """Why ``n``'s group does not join its post-dominator ``p`` (None: it does; "": not
        decided in this phase)."""
        if not _fusable(n):
            return _never(n)
        if not _fusable(p):
            return _never(p)
        path = self._path(n, p)
        if path is None or any(not _fusable(c) for c in path):
            return "a path between them passes an op that is never fused"
        if self._merged_size(n, path) > MAX_GROUP_OPS:
            return (f"the kernel would compute more than {MAX_GROUP_OPS} ops (MAX_GROUP_OPS); "
                    "a long chain is split into several kernels")
        inner = [self.kind[self.find(id(c))] for c in path[1:]]
        pkind = self.kind[self.find(id(p))]
        if gkind in (OpKind.OUT_ELEMWISE_FUSABLE, OpKind.REDUCTION):
            if phase:
                return ""
            bad = [c for c in path if self.kind[self.find(id(c))] > OpKind.BROADCAST]
            if not bad:
                return None
            b = bad[-1]
            where = "" if b is p else f" on the way to {p.name}"
            return (f"{n.name}'s kernel takes only elementwise/broadcast ops after it, and "
                    f"{b.name} ({b.op}){where} is {self.kind[self.find(id(b))].name.lower()}")
        if gkind <= OpKind.BROADCAST:
            if phase:
                return ""
            if pkind == OpKind.OUT_ELEMWISE_FUSABLE:
                return (f"{p.name} is out_elemwise_fusable; elementwise ops are not fused into "
                        "the inputs of a conv, matmul or pooling kernel, which reads them many times")
            if all(k <= OpKind.BROADCAST for k in inner) and pkind <= OpKind.REDUCTION:
                return None
            b = next((c for c in path[1:] if self.kind[self.find(id(c))] > OpKind.BROADCAST), p)
            return (f"{n.name}'s uses meet again at {p.name}, but the way there passes "
                    f"{b.name} ({b.op}), which is {self.kind[self.find(id(b))].name.lower()}; "
                    "an elementwise group joins its post-dominator only through "
                    "elementwise/broadcast ops")
        if gkind == OpKind.INJECTIVE:
            if not phase:
                return ""
            if n.op == "concat" and p.op == "transpose":
                return (f"{p.name} transposes concat {n.name}: fused, each element picks its "
                        "input in a select over all of them (vectorized, a gather from every "
                        "input per lane); apart, the concat copies each element once and "
                        "the transpose gets its tiled schedule")
            if all(k <= OpKind.INJECTIVE for k in inner + [pkind]):
                return None
            return f"{p.name} is {pkind.name.lower()}; injective ops join only injective ones"
        return f"{n.name} is {gkind.name.lower()}"

    def run(self) -> FusionPlan:
        for phase in (0, 1):
            for n in self.order:
                if self.find(id(n)) == id(n):  # only a group's output can join another group
                    self._try(n, phase)
        members: dict[int, list[Call]] = {}
        for n in self.order:
            members.setdefault(self.find(id(n)), []).append(n)
        groups = [Group(calls, self.kind[root]) for root, calls in members.items()]
        groups.sort(key=lambda g: self.index[id(g.output)])
        grouped = {id(c): g for g in groups for c in g.calls}
        boundaries = []
        for n in self.order:
            for c in self.consumers[id(n)]:
                if grouped[id(n)] is not grouped[id(c)]:
                    why = self.refusals.get(n.name) or self._edge_reason(n, c)
                    boundaries.append((n.name, c.name, why))
        return FusionPlan(groups, boundaries)

    def _edge_reason(self, n: Call, c: Call) -> str:
        if not _fusable(n) or not _fusable(c):
            return _never(n if not _fusable(n) else c)
        p = self.ipdom[id(n)]
        if p is _SINK:
            return f"{n.name} is also an output of the function or used by a tuple"
        if p is not c:
            return (f"{n.name} is used by more than one op; its post-dominator is {p.name}, "
                    "and not every path to it could be fused")
        return "their kinds do not fuse"


def fuse_ops(func: Function) -> FusionPlan:
    """Group the op calls of ``func`` into kernels (see the module docstring)."""
    return _Fuser(func).run()


def explain_fusion(func: Function) -> str:
    """The groups of :func:`fuse_ops` and, for each edge left between kernels, why."""
    plan = fuse_ops(func)
    lines = []
    for g in plan.groups:
        if len(g.calls) > 1:
            lines.append(f"group {g.name} ({g.kind.name.lower()}): "
                         + ", ".join(c.name for c in g.calls))
    singles = [g.name for g in plan.groups if len(g.calls) == 1]
    if singles:
        lines.append("alone: " + ", ".join(singles))
    for a, b, why in plan.boundaries:
        lines.append(f"boundary {a} -> {b}: {why}")
    return "\n".join(lines)
