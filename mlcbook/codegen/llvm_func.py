"""Statements of lowered loop IR -> the body of an LLVM function.

Loop kinds become:

* ``serial`` — an ordinary counted loop;
* ``unrolled`` — the body emitted once per iteration with the loop variable a constant;
* ``vectorized`` — the body emitted once for all iterations as SIMD lanes (see
  :mod:`.llvm_expr`), loops inside it running for all lanes at once; if lanes could observe
  each other through memory (:func:`mlcbook.tir.lanes.vectorize_hazard`) it is a
  :class:`~mlcbook.errors.VectorizeError`, never a silent serial loop;
* ``parallel`` — the body is *outlined* into ``void body(i64 begin, i64 end, ptr closure)``
  and handed to the runtime's thread pool through the launcher pointer every kernel gets as
  its last argument; the closure is a struct of the variables and buffers the body uses,
  unpacked into an always-inlined helper whose buffer parameters are ``noalias`` and which
  knows that its chunk lies inside the loop's range. A
  parallel loop inside another one runs serially inside its thread.

``Allocate`` reserves memory in the function's entry block: on the stack when small, with
``aligned_alloc`` (freed on return) when large, always 64-byte aligned. A function with a heap
allocation (:func:`heap_allocations`) returns an ``i32`` status instead of ``void``: 0, or
:data:`ALLOC_FAILED` when an allocation returned NULL, in which case it frees what it did
allocate and runs nothing; a parallel chunk whose allocation fails stores
:data:`ALLOC_FAILED` into its kernel's status word and skips its work.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from ..errors import BuildError, UnrollError, VectorizeError
from ..tir.analysis import free_vars
from ..tir.expr import Buffer, BufferLoad, Const, TensorCall, Var
from ..tir.functor import StmtFunctor, Visitor
from ..tir.stmt import Allocate, BufferStore, For
from .llvm_expr import R, S, ExprEmitter, Val
from .tensor_calls import emit_tensor_call
from .llvm_types import I32, I64, PTR, VOID, itemsize, mem_type, reg_type
from ..tir.lanes import vectorize_hazard

#: allocations up to this many bytes live on the stack; larger ones on the heap
STACK_LIMIT = 256 * 1024
#: the widest vector mlcbook emits for one vectorized loop; longer loops are chunked
MAX_LANES = 64
#: an unrolled loop longer than this is an error (split it first)
MAX_UNROLL = 4096

#: the status a kernel returns when an allocation failed (0: success)
ALLOC_FAILED = 1

LAUNCH_TYPE = ir.FunctionType(VOID, [PTR, I64, PTR])
BODY_TYPE = ir.FunctionType(VOID, [I64, I64, PTR])


def _powers_of_two(n: int) -> list[int]:
    """``n`` as a sum of distinct powers of two, largest first: 14 -> [8, 4, 2]."""
    return [1 << b for b in reversed(range(n.bit_length())) if n >> b & 1]


class FunctionEmitter(ExprEmitter, StmtFunctor):
    """Emit one LLVM function; ``launcher`` is the runtime's parallel-for (None: run serially).
    ``self.stmt(s)`` emits a statement, ``self.expr(e)`` an expression."""

    def __init__(self, cg, fn: ir.Function, name: str, launcher, fast: bool, status=None):
        self.cg, self.fn, self.name, self.launcher, self.fast = cg, fn, name, launcher, fast
        # where a failed allocation is reported: a parallel chunk's pointer to its kernel's
        # status word, or the kernel's own word (made when a parallel loop needs one)
        self.status = status
        self.returns_status = isinstance(fn.function_type.return_type, ir.IntType)
        self.failed: list = []    # per heap allocation: it returned NULL
        entry = fn.append_basic_block("entry")
        self.body_block = fn.append_basic_block("body")
        self.alloca_b = ir.IRBuilder(entry)
        self.b = ir.IRBuilder(self.body_block)
        self.env: dict = {}
        self.buffers: dict = {}
        self.ranges: dict = {}
        self.lanes = None
        self.mask = None
        self._unroll_copies = 1   # product of the extents of the unrolled loops around
        self.heap: list = []

    def finish(self) -> None:
        free = self.cg.declare("free", ir.FunctionType(VOID, [PTR])) if self.heap else None
        for p in self.heap:
            self.b.call(free, [p])
        if self.returns_status:
            self.b.ret(self.b.load(self.status, typ=I32) if self.status is not None
                       else ir.Constant(I32, 0))
        else:
            self.b.ret_void()
        A = self.alloca_b
        if not self.failed:
            A.branch(self.body_block)
            return
        failed = self.failed[0]
        for f in self.failed[1:]:
            failed = A.or_(failed, f)
        fail_bb = self.fn.append_basic_block("alloc.failed")
        A.cbranch(failed, fail_bb, self.body_block)
        F = ir.IRBuilder(fail_bb)
        for p in self.heap:   # free(NULL) does nothing
            F.call(free, [p])
        if self.returns_status:
            F.ret(ir.Constant(I32, ALLOC_FAILED))
            return
        if self.status is None:
            raise BuildError(f"{self.name}: a heap allocation with nowhere to report its "
                             "failure; this is a bug in mlcbook's code generator")
        # chunks on several threads may fail at once: an atomic write, read after the join
        F.atomic_rmw("xchg", self.status, ir.Constant(I32, ALLOC_FAILED), "monotonic")
        F.ret_void()

    def _status_word(self):
        """The kernel's status word (0 until a parallel chunk's allocation fails)."""
        if self.status is None:
            p = self.alloca_b.alloca(I32, name="status")
            p.type = PTR
            self.alloca_b.store(ir.Constant(I32, 0), p)
            self.status = p
        return self.status

    # --- statements -----------------------------------------------------------------------------
    def unhandled_stmt(self, s) -> None:
        raise BuildError(
            f"cannot compile a {type(s).__name__} statement; blocks must be lowered first "
            "(mb.build does that — was the function changed after mb.lower?)")

    def stmt_SeqStmt(self, s) -> None:
        for x in s.stmts:
            self.stmt(x)

    def stmt_Evaluate(self, s) -> None:
        if isinstance(s.value, TensorCall):
            emit_tensor_call(self, s.value)

    def stmt_BufferStore(self, s: BufferStore) -> None:
        self.store(s.buffer, s.indices[0], self.expr(s.value))

    def stmt_IfThenElse(self, s) -> None:
        c = self.expr(s.cond)
        B = self.b
        if c.kind != S:
            # lanes disagree: run both sides under complementary masks
            old, m = self.mask, c.value
            self.mask = m if old is None else B.and_(old, m)
            self.stmt(s.then_case)
            if s.else_case is not None:
                nm = self._not(m)
                self.mask = nm if old is None else B.and_(old, nm)
                self.stmt(s.else_case)
            self.mask = old
            return
        then_bb = B.append_basic_block("if.then")
        end_bb = B.append_basic_block("if.end")
        else_bb = B.append_basic_block("if.else") if s.else_case is not None else end_bb
        B.cbranch(c.value, then_bb, else_bb)
        B.position_at_end(then_bb)
        self.stmt(s.then_case)
        B.branch(end_bb)
        if s.else_case is not None:
            B.position_at_end(else_bb)
            self.stmt(s.else_case)
            B.branch(end_bb)
        B.position_at_end(end_bb)

    def stmt_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        n = math.prod(buf.shape)
        size = n * itemsize(buf.dtype)
        A = self.alloca_b
        if size <= STACK_LIMIT:
            p = A.alloca(ir.ArrayType(mem_type(buf.dtype), n), name=buf.name)
            p.align = 64
            p.type = PTR  # opaque pointers (llvmlite would type it [n x T]*)
        else:
            aligned_alloc = self.cg.declare("aligned_alloc", ir.FunctionType(PTR, [I64, I64]))
            p = A.call(aligned_alloc, [ir.Constant(I64, 64), ir.Constant(I64, -(-size // 64) * 64)],
                       name=buf.name)
            self.heap.append(p)
            self.failed.append(A.icmp_unsigned("==", p, ir.Constant(PTR, None)))
        self.buffers[buf] = p
        self.stmt(s.body)

    def stmt_For(self, s: For) -> None:
        if s.kind == "unrolled" and isinstance(s.extent, Const):
            return self._unrolled(s)
        if self.lanes is None:
            if s.kind == "vectorized":
                return self._vectorized(s)
            if s.kind == "parallel" and self.launcher is not None:
                return self._parallel(s)
        self._serial(s)

    # --- loops -----------------------------------------------------------------------------------
    def _loop(self, var: Var, start: ir.Value, end: ir.Value, body) -> None:
        B = self.b
        pre = B.block
        header = B.append_basic_block(f"{var.name}.header")
        body_bb = B.append_basic_block(f"{var.name}.body")
        latch = B.append_basic_block(f"{var.name}.latch")
        exit_bb = B.append_basic_block(f"{var.name}.end")
        B.branch(header)
        B.position_at_end(header)
        iv = B.phi(start.type, name=var.name)
        iv.add_incoming(start, pre)
        B.cbranch(B.icmp_signed("<", iv, end), body_bb, exit_bb)
        B.position_at_end(body_bb)
        body(iv)
        B.branch(latch)
        B.position_at_end(latch)
        nxt = B.add(iv, ir.Constant(iv.type, 1), flags=("nsw",))
        B.branch(header)
        iv.add_incoming(nxt, latch)
        B.position_at_end(exit_bb)

    def _set_range(self, s: For) -> None:
        if isinstance(s.extent, Const):
            self.ranges[s.loop_var] = (0, s.extent.value - 1)

    def _serial(self, s: For) -> None:
        self._set_range(s)
        ext = self.expr(s.extent)
        if ext.kind != S:
            raise BuildError(f"the extent of loop {s.loop_var.name} differs between the lanes "
                             "of a vectorized loop around it")

        def body(iv):
            self.env[s.loop_var] = Val(S, iv)
            self.stmt(s.body)

        self._loop(s.loop_var, self._const(s.loop_var.dtype, 0), ext.value, body)

    def _unrolled(self, s: For) -> None:
        n = s.extent.value
        if n > MAX_UNROLL:
            raise UnrollError(
                f"loop {s.loop_var.name} is marked unrolled but has {n} iterations (more than "
                f"{MAX_UNROLL}); split it and unroll only the inner part")
        # nested unrolled loops multiply: bound the copies of the innermost body, or LLVM
        # spends minutes on the result
        outer = self._unroll_copies
        if outer * n > MAX_UNROLL:
            raise UnrollError(
                f"loop {s.loop_var.name} is marked unrolled inside unrolled loops: together they "
                f"copy the body {outer * n} times (more than {MAX_UNROLL}); unroll fewer of them")
        self._unroll_copies = outer * n
        try:
            for k in range(n):
                self.env[s.loop_var] = Val(S, self._const(s.loop_var.dtype, k))
                self.ranges[s.loop_var] = (k, k)
                self.stmt(s.body)
        finally:
            self._unroll_copies = outer

    def _vectorized(self, s: For) -> None:
        v = s.loop_var
        reason = vectorize_hazard(s)
        if reason is not None:
            # compiling it serially instead would hide a slow path; Schedule.vectorize
            # applies the same rule, so only hand-marked loops get here
            raise VectorizeError(
                f"loop {v.name} is marked vectorized, but its iterations cannot run as SIMD "
                f"lanes: {reason}. Mark it serial (for {v.name} in range(...)), or vectorize "
                "a loop whose iterations each use their own elements (sch.vectorize checks "
                "this before marking a loop)")
        n = s.extent.value
        self._set_range(s)
        full, tail = divmod(n, MAX_LANES) if n > MAX_LANES else (0, n)
        if full:
            def chunk(c):
                base = self.b.mul(c, ir.Constant(c.type, MAX_LANES), flags=("nsw",))
                self._lanes_body(v, base, MAX_LANES, s.body)

            self._loop(Var(v.name + ".chunk", v.dtype), self._const(v.dtype, 0),
                       self._const(v.dtype, full), chunk)
        # the rest in vectors of powers of two (14 lanes: 8 + 4 + 2): LLVM keeps a local
        # tile of those in registers, but one of 14 lanes in memory, stored every iteration
        start = full * MAX_LANES
        for piece in _powers_of_two(tail):
            self._lanes_body(v, self._const(v.dtype, start), piece, s.body)
            start += piece

    def _lanes_body(self, v: Var, base: ir.Value, lanes: int, body) -> None:
        self.lanes = lanes
        self.env[v] = Val(R, base, 1)
        try:
            self.stmt(body)
        finally:
            self.lanes = None
            self.mask = None

    # --- parallel loops: outline the body and call the runtime's launcher ----------------------------
    def _parallel(self, s: For) -> None:
        ext = self.expr(s.extent)
        vars_, bufs = _captures(s)
        values = [self.env[v].value for v in vars_] + [self._buffer(b) for b in bufs]
        status = self._status_word() if heap_allocations(s.body) else None
        body_fn = ir.Function(self.cg.module, BODY_TYPE, self.cg.fresh(f"{self.name}_parallel"))
        body_fn.linkage = "internal"
        helper = self._parallel_helper(s, vars_, bufs, values, status)
        if status is not None:
            values = values + [status]
        # the body unpacks the closure and calls the helper, which LLVM inlines into it
        bb = ir.IRBuilder(body_fn.append_basic_block("entry"))
        begin, end, closure = body_fn.args
        args = [begin, end]
        if values:
            st = ir.LiteralStructType([x.type for x in values])
            args += [bb.load(_field(bb, closure, st, k), typ=st.elements[k])
                     for k in range(len(values))]
        bb.call(helper, args)
        bb.ret_void()

        B = self.b
        if values:
            cl = self.alloca_b.alloca(st, name="closure")
            cl.type = PTR
            for k, x in enumerate(values):
                B.store(x, _field(B, cl, st, k))
        else:
            cl = ir.Constant(PTR, None)
        if isinstance(ext.value, ir.Constant):
            n = ir.Constant(I64, ext.value.constant)
        else:
            n = ext.value if ext.value.type.width == 64 else B.sext(ext.value, I64)
        B.call(_IndirectCallee(self.launcher, LAUNCH_TYPE), [_AsPtr(body_fn), n, cl])

    def _parallel_helper(self, s: For, vars_, bufs, values, status=None) -> ir.Function:
        """``helper(begin, end, vars..., buffers...)``: the loop over one chunk. Its buffer
        parameters are ``noalias`` (as the kernel's own), and it assumes
        ``0 <= begin <= end <= extent``: without them the chunk's code ran up to 2.5x slower
        than the same loop left serial (signed divisions of the loop variable, loads not
        moved past stores)."""
        types = [I64, I64] + [x.type for x in values] + ([PTR] if status is not None else [])
        fn = ir.Function(self.cg.module, ir.FunctionType(VOID, types),
                         self.cg.fresh(f"{self.name}_chunk"))
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        sub = FunctionEmitter(self.cg, fn, fn.name, None, self.fast,
                              status=fn.args[-1] if status is not None else None)
        begin, end = fn.args[:2]
        for var, arg in zip(vars_, fn.args[2:]):
            sub.env[var] = Val(S, arg)
        ptrs = fn.args[2 + len(vars_):2 + len(values)]
        distinct = len({id(v) for v in values[len(vars_):]}) == len(bufs)
        for buf, arg in zip(bufs, ptrs):
            if distinct:
                arg.add_attribute("noalias")
            sub.buffers[buf] = arg
        sub.ranges = dict(self.ranges)
        sub._set_range(s)
        B = sub.b
        ty = reg_type(s.loop_var.dtype)
        lo, hi = (begin, end) if ty.width == 64 else (B.trunc(begin, ty), B.trunc(end, ty))
        assume = self.cg.declare("llvm.assume", ir.FunctionType(VOID, [ir.IntType(1)]))
        B.call(assume, [B.icmp_signed(">=", lo, ir.Constant(ty, 0))])
        B.call(assume, [B.icmp_signed("<=", lo, hi)])
        if isinstance(s.extent, Const):
            B.call(assume, [B.icmp_signed("<=", hi, ir.Constant(ty, s.extent.value))])

        def body(iv):
            sub.env[s.loop_var] = Val(S, iv)
            sub.stmt(s.body)

        sub._loop(s.loop_var, lo, hi, body)
        sub.finish()
        return fn


class _IndirectCallee:
    """A function pointer as a call target: llvmlite needs the callee's function type, which
    an opaque ``ptr`` value does not carry."""

    def __init__(self, ptr, function_type: ir.FunctionType):
        self.ptr, self.function_type, self.type = ptr, function_type, ptr.type

    def get_reference(self) -> str:
        return self.ptr.get_reference()

    def __str__(self) -> str:
        return str(self.ptr)


class _AsPtr:
    """A function used as a value: an opaque ``ptr`` (llvmlite prints a typed pointer)."""

    type = PTR

    def __init__(self, fn: ir.Function):
        self.fn = fn

    def get_reference(self) -> str:
        return self.fn.get_reference()


def _field(b: ir.IRBuilder, base, st, k: int):
    p = b.gep(base, [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=st)
    p.type = PTR  # opaque pointers: llvmlite would otherwise type it as a typed pointer
    return p


def heap_allocations(stmt) -> bool:
    """Whether ``stmt`` allocates a buffer on the heap (larger than :data:`STACK_LIMIT`)."""
    class _Heap(Visitor):
        found = False

        def visit_Allocate(self, s):
            if math.prod(s.buffer.shape) * itemsize(s.buffer.dtype) > STACK_LIMIT:
                self.found = True
            self.generic_visit(s)

    v = _Heap()
    v.visit(stmt)
    return v.found


def _captures(loop: For) -> tuple[list[Var], list[Buffer]]:
    """Variables and buffers a loop uses but does not define."""
    class _Bufs(Visitor):
        def __init__(self):
            self.used, self.defined = {}, set()

        def visit_Allocate(self, s):
            self.defined.add(s.buffer)
            self.generic_visit(s)

        def visit_BufferLoad(self, e: BufferLoad):
            self.used.setdefault(e.buffer, None)
            self.generic_visit(e)

        def visit_BufferStore(self, s: BufferStore):
            self.used.setdefault(s.buffer, None)
            self.generic_visit(s)

    v = _Bufs()
    v.visit(loop)
    vars_ = [x for x in free_vars(loop) if x is not loop.loop_var]
    return vars_, [b for b in v.used if b not in v.defined]
