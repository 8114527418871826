"""The converter of ONNX's ``Einsum`` for the equations that are transposes, sums and
(batched) matrix products of one or two operands: ``"ij->ji"``, ``"ij->i"``,
``"bij,bjk->bik"``, ``"i,i"``, ``"...ij,...jk"``. It builds them from the graph ops
``sum``, ``transpose``, ``reshape`` and ``matmul``, so they compile like any graph.

    >>> parse_equation("bij, bjk -> bik", [3, 3])
    (['bij', 'bjk'], 'bik')

An equation outside that subset (a letter repeated in one operand, which takes a diagonal;
three operands or more; a batch letter whose lengths differ between the operands) is
reported as unsupported, naming the equation.
"""

from __future__ import annotations

import math

from .onnx_context import Unsupported
from .onnx_ops import CONVERTERS, converter, guard_dtype

#: letters that stand for the axes an ellipsis covers (ONNX's equations use a-z and A-Z)
_ELLIPSIS_LETTERS = "0123456789"


def parse_equation(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' axis letters and the output's, with ``...`` spelled out as digits and
    the implicit output (no ``->``) made explicit: numpy's rules."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Unsupported(f"equation {equation!r} names {len(terms)} operand(s) for "
                          f"{len(ranks)} input(s)")
    width = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t),
                default=0)
    dots = _ELLIPSIS_LETTERS[:width]
    spelled = []
    for t, r in zip(terms, ranks):
        if "..." in t:
            t = t.replace("...", dots[width - (r - len(t.replace("...", ""))):])
        if len(t) != r:
            raise Unsupported(f"equation {equation!r}: operand {t!r} does not match an input "
                              f"of rank {r}")
        spelled.append(t)
    if arrow:
        out = out.replace("...", dots)
    else:
        letters = "".join(spelled)
        out = dots + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                    and c not in dots))
    return spelled, out


def _sum_out(cx, x, term, keep, tag):
    """``x`` with the letters of ``term`` outside ``keep`` summed away."""
    axes = tuple(k for k, c in enumerate(term) if c not in keep)
    if not axes:
        return x, term
    return (cx.call("sum", x, axes=axes, keepdims=0, suffix=f"_{tag}sum"),
            "".join(c for c in term if c in keep))


def _arrange(cx, x, term, order, tag):
    """``x`` (letters ``term``) transposed to the letter order ``order``."""
    if term == order:
        return x
    return cx.call("transpose", x, perm=tuple(term.index(c) for c in order),
                   suffix=f"_{tag}transpose")


def _reshape(cx, x, shape, tag):
    if tuple(x.shape) == tuple(shape):
        return x
    return cx.call("reshape", x, shape=tuple(shape), suffix=f"_{tag}reshape")


@converter("Einsum", attrs=("equation",))
@guard_dtype
def _einsum(cx, ins, attrs):
    equation = attrs["equation"]
    eq = equation.decode() if isinstance(equation, bytes) else equation
    terms, out = parse_equation(eq, [len(x.shape) for x in ins])
    for t, written in zip(terms, eq.replace(" ", "").partition("->")[0].split(",")):
        if len(set(t)) != len(t):
            raise Unsupported(f"equation {eq!r} repeats a letter in operand {written!r} (a "
                              "diagonal); mlcbook's Einsum maps only onto transposes, sums and "
                              "matrix products")
    if len(ins) == 1:
        x, term = _sum_out(cx, ins[0], terms[0], out, "")
        return _arrange(cx, x, term, out, "")
    if len(ins) != 2:
        raise Unsupported(f"equation {eq!r} has {len(ins)} operands; mlcbook's Einsum takes one "
                          "or two")
    (a, b), (ta, tb) = ins, terms
    a, ta = _sum_out(cx, a, ta, out + tb, "a_")
    b, tb = _sum_out(cx, b, tb, out + ta, "b_")
    size = {}
    for x, t in ((a, ta), (b, tb)):
        for c, n in zip(t, x.shape):
            if size.setdefault(c, n) != n:
                raise Unsupported(f"equation {eq!r}: letter {c!r} has lengths {size[c]} and {n}"
                                  " (mlcbook's Einsum does not broadcast)")
    batch = [c for c in out if c in ta and c in tb]
    left = [c for c in out if c in ta and c not in tb]
    right = [c for c in out if c in tb and c not in ta]
    contract = [c for c in ta if c in tb and c not in out]

    def dims(letters):
        return math.prod(size[c] for c in letters)

    bdims = [size[c] for c in batch]
    a = _reshape(cx, _arrange(cx, a, ta, "".join(batch + left + contract), "a_"),
                 bdims + [dims(left), dims(contract)], "a_")
    b = _reshape(cx, _arrange(cx, b, tb, "".join(batch + contract + right), "b_"),
                 bdims + [dims(contract), dims(right)], "b_")
    y = cx.call("matmul", a, b, suffix="_matmul")
    y = _reshape(cx, y, [size[c] for c in batch + left + right], "y_")
    return _arrange(cx, y, "".join(batch + left + right), out, "y_")


__all__ = ["CONVERTERS", "parse_equation"]
