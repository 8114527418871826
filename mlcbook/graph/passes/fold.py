"""Folding: work whose inputs are known at compile time is done at compile time.

* :func:`fold_constants` evaluates every op call whose inputs are all constants (with the
  op's numpy reference, the same semantics a compiled kernel must have) and puts the result
  in its place. A result larger than :data:`FOLD_LIMIT_BYTES` is an error, not an attempt
  to allocate it (``ConstantOfShape`` of 2^33 elements). A weight stored transposed, a shape computed by ``shape``/``concat``
  arithmetic, a scale multiplied into a bias: all become plain constants. An op that reads
  only its input's type (``shape``, ``size``: ``Op.reads_type_only``) folds whatever its
  input is, and an op without inputs (``constant_of_shape``, ``range``) always folds.
* :func:`fold_batch_norm` rewrites inference BatchNormalization, whose statistics are
  constants, as a per-channel scale and shift, and moves both into the weights and bias of
  the convolution before it when nothing else reads that convolution.

    >>> func = fold_batch_norm(func)   # conv -> batch_norm  becomes  conv (new W, b)
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedModelError
from ...ops import get as get_op
from ...ops.types import Attrs, TensorType, TupleType
from ..expr import Call, Constant, Expr, Function, Tuple, children, post_order
from ..functor import ExprMutator
from ..interpret import evaluate


#: the largest value constant folding makes (and so the largest computed weight): 1 GiB
FOLD_LIMIT_BYTES = 1 << 30


def _nbytes(t) -> int:
    if isinstance(t, TupleType):
        return sum(_nbytes(f) for f in t.fields)
    if isinstance(t, TensorType):
        try:
            itemsize = np.dtype(t.dtype).itemsize
        except TypeError:  # a graph-level low-bit type: at most a byte an element
            itemsize = 1
        return t.size * itemsize
    return 0


def _too_big(call: Call, nbytes: int) -> UnsupportedModelError:
    what = f"{call.op} {call.name!r}" if call.name else call.op
    return UnsupportedModelError(
        f"{what} computes a constant of type {call.type} ({nbytes / 2**30:.1f} GiB), more than "
        f"constant folding makes (FOLD_LIMIT_BYTES = {FOLD_LIMIT_BYTES >> 20} MiB); such a "
        "value cannot be a weight either. Instead: check the shape that the model computes "
        "for it, or compute the value from the model's inputs")


def use_counts(func: Function) -> dict[int, int]:
    """How many times each node of ``func`` is used as an argument (the output counts once)."""
    uses: dict[int, int] = {}
    for n in post_order(func.body):
        for c in children(n):
            uses[id(c)] = uses.get(id(c), 0) + 1
    uses[id(func.body)] = uses.get(id(func.body), 0) + 1
    return uses


class _FoldConstants(ExprMutator):
    def __init__(self, uses: dict[int, int]):
        super().__init__()
        self.uses = uses

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        op = get_op(new.op)
        if op.reads_type_only:
            # a zero-strided stand-in of the input's shape and dtype: the values are never read
            args = [np.broadcast_to(np.zeros((), a.type.dtype), a.type.shape) for a in new.args]
            return Constant(op.reference(*args, **dict(new.attrs)))
        if not all(isinstance(a, Constant) for a in new.args):
            return new
        nbytes = _nbytes(new.type)
        if nbytes > FOLD_LIMIT_BYTES:
            raise _too_big(new, nbytes)
        try:
            value = evaluate(Function((), new, "fold"), [])
        except MemoryError:
            raise _too_big(new, nbytes) from None
        if isinstance(new.type, TupleType):
            return Tuple([Constant(v) for v in value])
        return Constant(value, self._name(call, new))

    def _name(self, orig: Call, new: Call) -> str:
        """A weight rewritten in place keeps its name (and so its owner): the folded value
        replaces a named weight that nothing else uses."""
        named = [(o, n) for o, n in zip(orig.args, new.args) if n.name]
        if len(named) == 1 and self.uses.get(id(named[0][0]), 1) <= 1:
            return named[0][1].name
        return ""


def fold_constants(func: Function) -> Function:
    """``func`` with every op call whose arguments are all constants replaced by its value."""
    return _FoldConstants(use_counts(func)).visit_function(func)


def fold_expr(expr: Expr) -> Expr:
    """:func:`fold_constants` on one expression (a graph being built, say by an importer)::

        fold_expr(Call("shape", (x,)))     # Constant([2, 3, 4]) when x is (2, 3, 4)
    """
    return _FoldConstants({}).visit(expr)


def _bn_scale_shift(bn: Call) -> tuple[np.ndarray, np.ndarray]:
    """(s, t) with batch_norm(x) == x * s + t per channel, computed in float64."""
    scale, bias, mean, var = (a.data.astype(np.float64) for a in bn.args[1:])
    s = scale / np.sqrt(var + bn.attrs["epsilon"])
    return s, bias - mean * s


def _per_channel(v: np.ndarray, ndim: int, dtype) -> Constant:
    return Constant(v.reshape((-1,) + (1,) * (ndim - 2)).astype(dtype))


class _FoldBatchNorm(ExprMutator):
    def __init__(self, uses: dict[int, int]):
        super().__init__()
        self.uses = uses

    def visit_Call(self, call: Call):
        new = self.generic_visit(call)
        if new.op != "batch_norm" or not all(isinstance(a, Constant) for a in new.args[1:]):
            return new
        s, t = _bn_scale_shift(new)
        x = new.args[0]
        src = call.args[0]  # the original producer, for its use count
        if (isinstance(x, Call) and x.op == "conv" and isinstance(x.args[1], Constant)
                and (len(x.args) < 3 or isinstance(x.args[2], Constant))
                and self.uses.get(id(src), 0) == 1):
            w = x.args[1]
            dtype = w.data.dtype
            w_new = w.data.astype(np.float64) * s.reshape((-1,) + (1,) * (w.data.ndim - 1))
            b_old = x.args[2].data.astype(np.float64) if len(x.args) == 3 else 0.0
            b_new = b_old * s + t
            bias_name = x.args[2].name if len(x.args) == 3 else (f"{w.name}_bias" if w.name else "")
            return Call("conv", (x.args[0], Constant(w_new.astype(dtype), w.name, w.owner),
                                 Constant(b_new.astype(dtype), bias_name)),
                        x.attrs, x.name)
        dtype = x.type.dtype
        nd = len(x.shape)
        scaled = Call("mul", (x, _per_channel(s, nd, dtype)), Attrs(), f"{new.name}_scale")
        return Call("add", (scaled, _per_channel(t, nd, dtype)), Attrs(), new.name)


def fold_batch_norm(func: Function) -> Function:
    """``func`` with inference batch_norm folded into the conv before it (its weight scaled
    per output channel, its bias shifted), or else rewritten as ``x * s + t``."""
    return _FoldBatchNorm(use_counts(func)).visit_function(func)
