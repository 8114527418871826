"""Expressions and memory accesses of lowered loop IR -> LLVM instructions, scalar or SIMD.

Inside a loop marked ``vectorized`` an expression has one value per lane. Each value is a
:class:`Val` of one of three kinds:

* ``scalar`` — the same for every lane (a loop-invariant; broadcast when mixed with vectors),
* ``ramp``   — ``base + stride * lane`` with a constant ``stride``: the vectorized loop
  variable itself and affine index arithmetic on it, so that ``A[i*64 + v]`` is known to
  be contiguous and becomes one vector load,
* ``vector`` — an LLVM vector of ``lanes`` values.

Outside vectorized loops everything is scalar. Accesses whose index is not a stride-1 ramp
become gathers/scatters; accesses under a lane-dependent ``if`` become masked.
"""

from __future__ import annotations

import llvmlite.ir as ir

from ..errors import BuildError
from ..tir.arith import int_bounds
from ..tir.expr import Binary, BufferLoad, Const, Select, bits, is_float, is_int, is_unsigned
from ..tir.scalar import round_bf16
from ..tir.simplify import simplify_assuming
from ..tir.functor import ExprFunctor, Visitor
from .llvm_types import I32, PTR, itemsize, mangle, mem_type, reg_type

S, R, V = "scalar", "ramp", "vector"


class Val:
    """A value of an expression: a scalar, a ramp (``base + stride*lane``) or a vector."""

    __slots__ = ("kind", "value", "stride")

    def __init__(self, kind: str, value: ir.Value, stride: int = 0):
        self.kind, self.value, self.stride = kind, value, stride


_CMP = ("==", "!=", "<", "<=", ">", ">=")


class ExprEmitter(ExprFunctor):
    """Expression half of the function emitter (see :mod:`.llvm_func`): ``self.expr(e)``
    emits the instructions computing ``e`` and returns its :class:`Val`.

    The subclass provides ``b`` (IRBuilder), ``cg`` (module context), ``env``
    (Var -> Val), ``buffers`` (Buffer -> pointer), ``lanes`` (None outside vector loops),
    ``mask`` (lane mask or None), ``ranges`` (Var -> inclusive bounds) and ``fast``.
    """

    _index_depth = 0

    def unhandled_expr(self, e) -> Val:
        raise BuildError(f"cannot compile the expression {e} ({type(e).__name__})")

    # --- small helpers ------------------------------------------------------------------------
    @property
    def fflags(self) -> tuple:
        # `contract` lets LLVM fuse a*b + c into one FMA, as C compilers do by default
        return ("fast",) if self.fast else ("contract",)

    def _const(self, dtype: str, value, lanes=None) -> ir.Constant:
        t = reg_type(dtype)
        if dtype == "bool":
            value = int(bool(value))
        elif dtype == "bfloat16":
            value = round_bf16(float(value))
        c = ir.Constant(t, value)
        if lanes:
            return ir.Constant(ir.VectorType(t, lanes), [c] * lanes)
        return c

    def like(self, x: ir.Value, value) -> ir.Constant:
        """A constant of ``x``'s type (splat for vectors)."""
        t = x.type
        if isinstance(t, ir.VectorType):
            return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
        return ir.Constant(t, value)

    def _splat(self, x: ir.Value) -> ir.Value:
        n = self.lanes
        if isinstance(x, ir.Constant):
            return ir.Constant(ir.VectorType(x.type, n), [x] * n)
        vt = ir.VectorType(x.type, n)
        v = self.b.insert_element(ir.Constant(vt, ir.Undefined), x, ir.Constant(I32, 0))
        zeros = ir.Constant(ir.VectorType(I32, n), [ir.Constant(I32, 0)] * n)
        return self.b.shuffle_vector(v, ir.Constant(vt, ir.Undefined), zeros)

    def _vec(self, v: Val) -> ir.Value:
        """``v`` as an LLVM vector of ``self.lanes`` values."""
        if v.kind == V:
            return v.value
        if v.kind == S:
            return self._splat(v.value)
        t = v.value.type
        steps = ir.Constant(ir.VectorType(t, self.lanes),
                            [ir.Constant(t, v.stride * k) for k in range(self.lanes)])
        return self.b.add(self._splat(v.value), steps)

    def _lift(self, fn, *vals: Val) -> Val:
        """Apply ``fn`` to LLVM values: scalars if all are scalar, else vectors."""
        if all(v.kind == S for v in vals):
            return Val(S, fn(*(v.value for v in vals)))
        return Val(V, fn(*(self._vec(v) for v in vals)))

    def _not(self, x: ir.Value) -> ir.Value:
        return self.b.xor(x, self.like(x, 1))

    def intrinsic(self, name: str, args, ret=None) -> ir.Value:
        t = args[0].type
        ret = ret or t
        fn = self.cg.declare(f"{name}.{mangle(t)}", ir.FunctionType(ret, [a.type for a in args]))
        return self.b.call(fn, args)

    # --- leaves -------------------------------------------------------------------------------
    def expr_Const(self, e: Const) -> Val:
        return Val(S, self._const(e.dtype, e.value))

    def expr_Var(self, e) -> Val:
        try:
            return self.env[e]
        except KeyError:
            raise BuildError(f"variable {e.name!r} is used but not defined where it is used; "
                             "run mb.tir.verify on the function to see why") from None

    # --- arithmetic ---------------------------------------------------------------------------
    def expr_Binary(self, e) -> Val:
        op, dt = e.op, e.a.dtype
        if op in ("and", "or") and _has_load(e.b):
            # `i < n and A[i] > 0` must not load A[i] when i >= n: evaluate like a select
            false = Const(False, "bool")
            true = Const(True, "bool")
            return self.expr_Select(Select(e.a, e.b, false) if op == "and"
                                     else Select(e.a, true, e.b))
        a, b = self.expr(e.a), self.expr(e.b)
        B = self.b
        if op == "and":
            return self._lift(B.and_, a, b)
        if op == "or":
            return self._lift(B.or_, a, b)
        if op in _CMP:
            return self._lift(lambda x, y: self._cmp(op, dt, x, y), a, b)
        if is_int(dt) and R in (a.kind, b.kind) and V not in (a.kind, b.kind):
            r = self._ramp_arith(op, a, b, e)
            if r is not None:
                return r
        if op in ("//", "%"):
            bounds = int_bounds(e.a, self.ranges)
            nonneg = bounds is not None and bounds[0] >= 0
            cb = e.b.value if isinstance(e.b, Const) else None
            return self._lift(lambda x, y: self._divmod(op, dt, x, y, nonneg, cb), a, b)
        return self._lift(lambda x, y: self._arith(op, dt, x, y), a, b)

    def _ramp_arith(self, op, a: Val, b: Val, e):
        B, fl = self.b, self._iflags
        if op in ("+", "-"):
            f = B.add if op == "+" else B.sub
            stride = a.stride + b.stride if op == "+" else a.stride - b.stride
            base = f(a.value, b.value, flags=fl)
        elif op == "*" and (isinstance(e.a, Const) or isinstance(e.b, Const)):
            c = e.a.value if isinstance(e.a, Const) else e.b.value
            ramp = a if a.kind == R else b
            base, stride = B.mul(ramp.value, self.like(ramp.value, c), flags=fl), ramp.stride * c
        else:
            return None
        return Val(R, base, stride) if stride else Val(S, base)

    @property
    def _iflags(self) -> tuple:
        # index arithmetic never overflows (buffer sizes are checked), which lets LLVM
        # widen and strength-reduce address computations
        return ("nsw",) if self._index_depth else ()

    def _arith(self, op, dt, x, y) -> ir.Value:
        B = self.b
        if is_float(dt):
            fl = self.fflags
            if op in ("min", "max"):
                # numpy's minimum/maximum propagate NaN, as llvm.minimum/maximum do
                name = ("llvm.minnum" if op == "min" else "llvm.maxnum") if self.fast else \
                       ("llvm.minimum" if op == "min" else "llvm.maximum")
                return self.intrinsic(name, [x, y])
            return {"+": B.fadd, "-": B.fsub, "*": B.fmul, "/": B.fdiv}[op](x, y, flags=fl)
        if op in ("min", "max"):
            lt = self._cmp("<", dt, x, y)
            return B.select(lt, x, y) if op == "min" else B.select(lt, y, x)
        f = {"+": B.add, "-": B.sub, "*": B.mul}[op]
        return f(x, y, flags=self._iflags)

    def _cmp(self, op, dt, x, y) -> ir.Value:
        B = self.b
        if is_float(dt):
            # != is true for NaN operands, as in numpy
            return B.fcmp_unordered(op, x, y) if op == "!=" else B.fcmp_ordered(op, x, y)
        if is_unsigned(dt) or dt == "bool":
            return B.icmp_unsigned(op, x, y)
        return B.icmp_signed(op, x, y)

    def _divmod(self, op, dt, x, y, nonneg: bool, cb) -> ir.Value:
        """Floor division / modulo; ``x // 0`` and ``x % 0`` are 0, as numpy gives."""
        B = self.b
        zero, one = self.like(x, 0), self.like(x, 1)
        if is_unsigned(dt):
            if cb is not None and cb != 0:
                return B.udiv(x, y) if op == "//" else B.urem(x, y)
            is0 = B.icmp_unsigned("==", y, zero)
            ys = B.select(is0, one, y)
            r = B.udiv(x, ys) if op == "//" else B.urem(x, ys)
            return B.select(is0, zero, r)
        if cb is not None and cb > 0 and nonneg:
            return B.sdiv(x, y) if op == "//" else B.srem(x, y)
        guard = cb is None or cb in (0, -1)
        ys = y
        if guard:
            # sdiv traps on x/0 and INT_MIN/-1: divide by 1 there and patch the result
            is0 = B.icmp_signed("==", y, zero)
            ism1 = B.icmp_signed("==", y, self.like(y, -1))
            ys = B.select(B.or_(is0, ism1), one, y)
        q, r = B.sdiv(x, ys), B.srem(x, ys)
        need = B.and_(B.icmp_signed("!=", r, zero), B.icmp_signed("<", B.xor(r, ys), zero))
        if op == "//":
            out = B.select(need, B.sub(q, one), q)
            if guard:
                out = B.select(ism1, B.sub(zero, x), out)
                out = B.select(is0, zero, out)
            return out
        out = B.select(need, B.add(r, ys), r)
        return B.select(is0, zero, out) if guard else out

    def expr_Unary(self, e) -> Val:
        a = self.expr(e.a)
        B = self.b
        if e.op == "not":
            return self._lift(self._not, a)
        if is_float(e.dtype):
            return self._lift(lambda x: B.fneg(x, flags=self.fflags), a)
        if a.kind == R:
            return Val(R, B.sub(self.like(a.value, 0), a.value, flags=self._iflags), -a.stride)
        return self._lift(lambda x: B.sub(self.like(x, 0), x, flags=self._iflags), a)

    def expr_Reinterpret(self, e) -> Val:
        return self._lift(lambda x: self.b.bitcast(x, reg_type(e.dtype, self.lanes_of(x))),
                          self.expr(e.value))

    def expr_Cast(self, e) -> Val:
        src, dst = e.value.dtype, e.dtype
        v = self.expr(e.value)
        if v.kind == R and is_int(dst) and reg_type(dst).width >= reg_type(src).width:
            return Val(R, self._convert(v.value, src, dst, None), v.stride)
        return self._lift(lambda x: self._convert(x, src, dst, self.lanes_of(x)), v)

    def lanes_of(self, x) -> int | None:
        return x.type.count if isinstance(x.type, ir.VectorType) else None

    def _convert(self, x, src: str, dst: str, lanes) -> ir.Value:
        B = self.b
        if src == dst:
            return x
        ty = reg_type(dst, lanes)
        if dst == "bool":
            if is_float(src):
                return B.fcmp_unordered("!=", x, self.like(x, 0.0))
            return B.icmp_unsigned("!=", x, self.like(x, 0))
        if src == "bool":
            return B.zext(x, ty) if is_int(dst) else B.uitofp(x, ty)
        if is_int(src) and is_int(dst):
            ws, wd = reg_type(src).width, reg_type(dst).width
            if wd > ws:
                return B.zext(x, ty) if is_unsigned(src) else B.sext(x, ty)
            return B.trunc(x, ty) if wd < ws else x
        if dst == "bfloat16":
            # through float32, rounded to bfloat16 there (float64 rounds twice, rarely off)
            return self.round_bf16(self._convert(x, src, "float32", lanes))
        if src == "bfloat16":
            return self._convert(x, "float32", dst, lanes)  # its register holds a float32
        if is_int(src):
            return B.uitofp(x, ty) if is_unsigned(src) else B.sitofp(x, ty)
        if is_unsigned(dst):
            return self._float_to_unsigned(x, dst, lanes)
        if is_int(dst):
            return B.fptosi(x, ty)
        if itemsize(dst) > itemsize(src):
            return B.fpext(x, ty)
        if src == "float64" and dst == "float16":
            # LLVM lowers double -> half to a runtime-library call (__truncdfhf2) that the JIT
            # cannot resolve, and the kernel would jump to a null address. Going through float
            # rounds twice, which differs from direct rounding only in rare ties.
            x = B.fptrunc(x, reg_type("float32", lanes))
        return B.fptrunc(x, ty)

    def _float_to_unsigned(self, x, dst: str, lanes) -> ir.Value:
        """float -> unsigned as the interpreter does it: truncate, then wrap (-1.0 -> 255 for
        uint8). ``fptoui`` of a negative value is poison, so narrow types convert through a
        wider signed type; uint64 picks ``fptoui`` from 2**63 up, ``fptosi`` below."""
        B = self.b
        if bits(dst) < 64:
            wide = "int32" if bits(dst) < 32 else "int64"
            return B.trunc(B.fptosi(x, reg_type(wide, lanes)), reg_type(dst, lanes))
        big = B.fcmp_ordered(">=", x, self.like(x, 2.0 ** 63))
        ty = reg_type(dst, lanes)
        return B.select(big, B.fptoui(x, ty), B.fptosi(x, ty))

    def round_bf16(self, x: ir.Value) -> ir.Value:
        """A float32 value (or vector) rounded to the nearest bfloat16, ties to even, still as a
        float32: add ``0x7FFF`` plus the lowest kept bit to the bit pattern and clear the low 16
        bits. A NaN keeps its sign and becomes quiet (it could otherwise round to inf)."""
        B = self.b
        i32 = reg_type("int32", self.lanes_of(x))
        b = B.bitcast(x, i32)
        odd = B.and_(B.lshr(b, self.like(b, 16)), self.like(b, 1))
        rounded = B.add(b, B.add(odd, self.like(b, 0x7FFF)))
        nan = B.or_(b, self.like(b, 0x00400000))
        b = B.select(B.fcmp_unordered("uno", x, x), nan, rounded)
        return B.bitcast(B.and_(b, self.like(b, -0x10000)), x.type)

    def expr_Select(self, e) -> Val:
        fixed = self._decided(e.cond)
        if fixed is not None:
            # an unrolled loop's position picks the arm (a Winograd transform's matrix row):
            # emit only that one, not a select between every arm's code
            return self.expr(e.true_value if fixed else e.false_value)
        c = self.expr(e.cond)
        if _has_load(e.true_value) or _has_load(e.false_value):
            return self._lazy_select(c, e)
        t, f = self.expr(e.true_value), self.expr(e.false_value)
        if c.kind == S and t.kind == S and f.kind == S:
            return Val(S, self.b.select(c.value, t.value, f.value))
        cond = c.value if c.kind == S else self._vec(c)
        return Val(V, self.b.select(cond, self._vec(t), self._vec(f)))

    def _decided(self, cond) -> bool | None:
        """The value of an integer comparison (or ``and``/``or`` of them) that the ranges of
        the loop variables fix, e.g. ``p // 4 == 1`` in the copy of an unrolled loop where
        ``p`` is 5; None when it is not fixed."""
        if not isinstance(cond, Binary):
            return None
        if cond.op in ("and", "or"):
            a, b = self._decided(cond.a), self._decided(cond.b)
            if cond.op == "and":
                return False if False in (a, b) else (True if a and b else None)
            return True if True in (a, b) else (False if a is False and b is False else None)
        if cond.op not in _CMP or not is_int(cond.a.dtype):
            return None
        a, b = int_bounds(cond.a, self.ranges), int_bounds(cond.b, self.ranges)
        if a is None or b is None:
            return None
        lo, hi = a[0] - b[1], a[1] - b[0]          # the range of a - b
        holds = {"==": lo == hi == 0, "!=": lo > 0 or hi < 0, "<": hi < 0, "<=": hi <= 0,
                 ">": lo > 0, ">=": lo >= 0}[cond.op]
        fails = {"==": lo > 0 or hi < 0, "!=": lo == hi == 0, "<": lo >= 0, "<=": lo > 0,
                 ">": hi <= 0, ">=": hi < 0}[cond.op]
        return True if holds else (False if fails else None)

    def _lazy_select(self, c: Val, e) -> Val:
        """A select whose branches load memory evaluates only the branch it takes, so that
        e.g. ``select(i > 0, A[i - 1], 0)`` never reads before ``A``."""
        B = self.b
        # the taken branch runs only where the condition holds: a padded read's clamped
        # index (max(min(i - 1, 55), 0) under 1 <= i <= 56) is then its plain, contiguous
        # index, one masked vector load instead of a gather
        taken = simplify_assuming(e.true_value, e.cond, self.ranges)
        if c.kind != S:
            old = self.mask
            m = self._vec(c)
            self.mask = m if old is None else B.and_(old, m)
            t = self._vec(self.expr(taken))
            nm = self._not(m)
            self.mask = nm if old is None else B.and_(old, nm)
            f = self._vec(self.expr(e.false_value))
            self.mask = old
            return Val(V, B.select(m, t, f))
        as_vector = self.lanes is not None
        then_bb, else_bb = B.append_basic_block("sel.then"), B.append_basic_block("sel.else")
        merge = B.append_basic_block("sel.end")
        B.cbranch(c.value, then_bb, else_bb)
        out = []
        for bb, sub in ((then_bb, taken), (else_bb, e.false_value)):
            B.position_at_end(bb)
            v = self.expr(sub)
            out.append((self._vec(v) if as_vector else v.value, B.block))
            B.branch(merge)
        B.position_at_end(merge)
        phi = B.phi(out[0][0].type)
        for value, block in out:
            phi.add_incoming(value, block)
        return Val(V if as_vector else S, phi)

    def expr_Call(self, e) -> Val:
        from .intrinsics import emit_math
        args = [self.expr(a) for a in e.args]
        dt = "float32" if e.dtype == "bfloat16" else e.dtype  # computed in its register type
        return self._lift(lambda *xs: emit_math(self, e.name, dt, list(xs)), *args)

    # --- memory -------------------------------------------------------------------------------
    def _index(self, e) -> Val:
        self._index_depth += 1
        try:
            return self.expr(e)
        finally:
            self._index_depth -= 1

    def _ptrs(self, base, idx: Val, ety) -> ir.Value:
        """A vector of element pointers for the lanes of ``idx``."""
        p = self.b.gep(base, [self._vec(idx)], source_etype=ety, inbounds=True)
        p.type = ir.VectorType(PTR, self.lanes)  # llvmlite does not type vector GEPs itself
        return p

    def _all_lanes(self) -> ir.Value:
        return self.mask if self.mask is not None else self._const("bool", 1, self.lanes)

    def expr_BufferLoad(self, e: BufferLoad) -> Val:
        buf, dt = e.buffer, e.buffer.dtype
        base = self._buffer(buf)
        idx = self._index(e.indices[0])
        ety, align = mem_type(dt), itemsize(dt)
        B = self.b
        if self.lanes is None or (idx.kind == S and self.mask is None):
            p = B.gep(base, [idx.value], source_etype=ety, inbounds=True)
            x, kind = B.load(p, typ=ety, align=align), S
        elif idx.kind == R and idx.stride == 1:
            p = B.gep(base, [idx.value], source_etype=ety, inbounds=True)
            vty = mem_type(dt, self.lanes)
            if self.mask is None:
                x = B.load(p, typ=vty, align=align)
            else:
                x = self._masked("llvm.masked.load", vty, p.type, [
                    p, ir.Constant(I32, align), self.mask, ir.Constant(vty, ir.Undefined)], True)
            kind = V
        elif idx.kind == R and 1 < idx.stride <= MAX_SHUFFLED_STRIDE and (
                self.mask is None or _two_vectors(self.lanes, idx.stride)):
            # one load of the span the lanes cover, then pick every stride-th element (a
            # gather fetches element by element, several times slower)
            x, kind = self._strided_load(base, idx, dt, ety, align), V
        else:
            vty = mem_type(dt, self.lanes)
            ptrs = self._ptrs(base, idx, ety)
            x = self._masked("llvm.masked.gather", vty, ptrs.type, [
                ptrs, ir.Constant(I32, align), self._all_lanes(), ir.Constant(vty, ir.Undefined)],
                True)
            kind = V
        if dt == "bool":
            x = B.icmp_unsigned("!=", x, self.like(x, 0))
        elif dt == "bfloat16":  # the 16 bits are the upper half of a float32
            lanes = self.lanes_of(x)
            wide = B.zext(x, reg_type("int32", lanes))
            x = B.bitcast(B.shl(wide, self.like(wide, 16)), reg_type("float32", lanes))
        return Val(kind, x)

    def _strided_load(self, base, idx: Val, dt: str, ety, align: int) -> ir.Value:
        """The lanes of ``idx``, a ramp of a small stride, from one load of the span they cover
        and a shuffle that picks every stride-th element. A span of at most two vectors is
        loaded as two vectors (the second ending at its last element) and picked by one
        two-source shuffle, which x86 does in one instruction (``vpermt2ps``); a load of an
        odd-sized span was split by LLVM into inserts of single elements."""
        B, lanes, s = self.b, self.lanes, idx.stride
        span = (lanes - 1) * s + 1
        p = B.gep(base, [idx.value], source_etype=ety, inbounds=True)
        if _two_vectors(lanes, s):
            vty = mem_type(dt, lanes)
            last = span - lanes
            q = B.gep(base, [B.add(idx.value, self.like(idx.value, last), flags=self._iflags)],
                      source_etype=ety, inbounds=True)
            lo, hi = (self._load_picked(ptr, vty, align, start, s) for ptr, start in
                      ((p, 0), (q, last)))
            picks = [k * s if k * s < lanes else k * s - last + lanes for k in range(lanes)]
            return B.shuffle_vector(lo, hi, ir.Constant(ir.VectorType(I32, lanes), picks))
        whole = B.load(p, typ=mem_type(dt, span), align=align)
        picks = ir.Constant(ir.VectorType(I32, lanes), [k * s for k in range(lanes)])
        return B.shuffle_vector(whole, ir.Constant(whole.type, ir.Undefined), picks)

    def _load_picked(self, ptr, vty, align: int, start: int, stride: int) -> ir.Value:
        """One vector of a strided span from ``ptr`` (element ``start`` of the span); under a
        mask, a masked load that reads only the elements the active lanes pick (element
        ``j`` is lane ``j / stride``'s when ``stride`` divides it), so a padded read never
        touches memory outside its buffer."""
        if self.mask is None:
            return self.b.load(ptr, typ=vty, align=align)
        lanes = self.lanes
        spread = [(start + j) // stride if (start + j) % stride == 0 else lanes
                  for j in range(lanes)]
        off = self._const("bool", 0, lanes)
        m = self.b.shuffle_vector(self.mask, off, ir.Constant(ir.VectorType(I32, lanes), spread))
        return self._masked("llvm.masked.load", vty, ptr.type, [
            ptr, ir.Constant(I32, align), m, ir.Constant(vty, ir.Undefined)], True)

    def _masked(self, name: str, data_type, ptr_type, args, returns: bool) -> ir.Value:
        """Call ``llvm.masked.{load,store,gather,scatter}`` mangled for the given types."""
        fnty = ir.FunctionType(data_type if returns else ir.VoidType(), [a.type for a in args])
        fn = self.cg.declare(f"{name}.{mangle(data_type)}.{mangle(ptr_type)}", fnty)
        return self.b.call(fn, args)

    def store(self, buf, index, value: Val) -> None:
        dt = buf.dtype
        base = self._buffer(buf)
        idx = self._index(index)
        ety, align = mem_type(dt), itemsize(dt)
        B = self.b
        if dt == "bool":
            value = self._lift(lambda x: B.zext(x, mem_type(dt, self.lanes_of(x))), value)
        elif dt == "bfloat16":
            value = self._lift(self._bf16_bits, value)
        if self.lanes is None or (idx.kind == S and value.kind == S and self.mask is None):
            p = B.gep(base, [idx.value], source_etype=ety, inbounds=True)
            B.store(value.value, p, align=align)
            return
        data = self._vec(value)
        if idx.kind == R and idx.stride == 1:
            p = B.gep(base, [idx.value], source_etype=ety, inbounds=True)
            if self.mask is None:
                B.store(data, p, align=align)
            else:
                self._masked("llvm.masked.store", data.type, p.type,
                             [data, p, ir.Constant(I32, align), self.mask], False)
            return
        # scatter writes lanes in order, so with a repeated address the last lane wins,
        # as it would in the sequential loop
        ptrs = self._ptrs(base, idx, ety)
        self._masked("llvm.masked.scatter", data.type, ptrs.type,
                     [data, ptrs, ir.Constant(I32, align), self._all_lanes()], False)

    def _bf16_bits(self, x: ir.Value) -> ir.Value:
        """The bfloat16 bit pattern (``i16``) of a float32 register value, rounded."""
        B, lanes = self.b, self.lanes_of(x)
        b = B.bitcast(self.round_bf16(x), reg_type("int32", lanes))
        return B.trunc(B.lshr(b, self.like(b, 16)), mem_type("bfloat16", lanes))

    def _buffer(self, buf):
        try:
            return self.buffers[buf]
        except KeyError:
            raise BuildError(f"buffer {buf.name!r} is used but neither a parameter nor "
                             "allocated where it is used") from None


def _two_vectors(lanes: int, stride: int) -> bool:
    """Whether a load of ``lanes`` elements ``stride`` apart spans more than one vector of
    ``lanes`` and at most two (stride 2; lanes a power of two)."""
    span = (lanes - 1) * stride + 1
    return lanes < span <= 2 * lanes and lanes & (lanes - 1) == 0


#: a vector load with a constant stride up to this one reads the whole span and shuffles
MAX_SHUFFLED_STRIDE = 4


class _LoadFinder(Visitor):
    found = False

    def visit_BufferLoad(self, e):
        self.found = True


def _has_load(e) -> bool:
    f = _LoadFinder()
    f.visit(e)
    return f.found
