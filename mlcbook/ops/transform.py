"""Injective ops that move data without arithmetic: ``reshape``, ``flatten``, ``squeeze``,
``unsqueeze``, ``transpose``, ``concat``, ``split``, ``slice``, ``gather``, ``pad``,
``expand``, ``tile``, ``trilu``.

Each is declared once (:mod:`.declare`): the views (``reshape``, ``flatten``, ``squeeze``,
``unsqueeze``) by their output shape, the others from their te computes.

Every size they need is a static attribute (the ONNX frontend turns ONNX's shape *inputs*
into attributes at import), so every output shape is known when the call is built.

Indices out of range, one policy everywhere: ``slice`` bounds are attributes and are clamped
to the axis as ONNX specifies (never an error); ``pad`` widths are attributes, checked when
the call is built; ``gather``'s indices are data, so an index outside ``[-n, n)`` is an
:class:`~mlcbook.errors.ArgumentError` at run time, raised alike by the reference here, the
graph interpreter and a compiled model (which checks the indices before the kernel runs, see
:func:`mlcbook.graph.legalize.index_bounds`). Only the loop-level kernel of gather, called
directly, clamps an index to the edge instead, so that it never reads outside its buffer.

    >>> get("reshape").infer_type([TensorType((2, 3, 4))], {"shape": (0, -1)})
    Tensor((2, 12), "float32")
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import OpAttributeError, OpShapeError
from ..te import ops as T
from ..te.ops import transform as TT
from ..te.ops.transform import PAD_MODES
from ..te.ops.transform import slice_ranges as te_slice_ranges
from ..te.ops.util import need_rank
from . import declare
from ._infer import broadcast_shapes, ints, norm_axes, norm_axis, require_dtype, same_dtype
from .registry import REQUIRED, OpKind, get


def resolve_reshape(in_shape, shape, allowzero=0) -> tuple[int, ...]:
    """The concrete target shape: 0 copies the input's dimension (unless ``allowzero``),
    -1 is inferred from the element count."""
    shape = list(ints("reshape", "shape", shape))
    for i, s in enumerate(shape):
        if s == 0 and not allowzero:
            if i >= len(in_shape):
                raise OpAttributeError(
                    f"reshape: shape={tuple(shape)} copies dimension {i} (a 0) but the input "
                    f"{tuple(in_shape)} has only {len(in_shape)} dimensions")
            shape[i] = in_shape[i]
    return TT.reshaped(in_shape, tuple(shape))


def _flatten_shape(shape, axis):
    axis = norm_axis("flatten", axis, len(shape), allow_end=True)
    return (math.prod(shape[:axis]), math.prod(shape[axis:]))


def _squeeze_shape(shape, axes):
    if axes is None:
        return tuple(s for s in shape if s != 1)
    axes = norm_axes("squeeze", ints("squeeze", "axes", axes), len(shape))
    for a in axes:
        if shape[a] != 1:
            raise OpShapeError(f"squeeze: axis {a} of shape {tuple(shape)} has size {shape[a]}, "
                               "not 1; only size-1 axes can be squeezed")
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def _unsqueeze_shape(shape, axes):
    axes = ints("unsqueeze", "axes", axes)
    out_rank = len(shape) + len(axes)
    axes = norm_axes("unsqueeze", axes, out_rank)
    it = iter(shape)
    return tuple(1 if i in axes else next(it) for i in range(out_rank))


# ONNX gives the shape, the axes and the slice's bounds as inputs known at import
declare.view("reshape", lambda x, a: resolve_reshape(x.shape, a["shape"], a["allowzero"]),
             attrs={"shape": REQUIRED, "allowzero": 0}, onnx="Reshape",
             onnx_attrs=declare.OnnxAttrs(inputs={"shape": 1}),
             doc="same elements, new shape; 0 copies a dimension, -1 is inferred")
declare.view("flatten", lambda x, a: _flatten_shape(x.shape, a["axis"]), attrs={"axis": 1},
             onnx="Flatten", doc="2-D view: dimensions before `axis` x dimensions from `axis` on")
declare.view("squeeze", lambda x, a: _squeeze_shape(x.shape, a.get("axes")), attrs={"axes": None},
             onnx="Squeeze", onnx_attrs=declare.OnnxAttrs(inputs={"axes": 1}),
             doc="remove size-1 axes (all of them if `axes` is not given)")
declare.view("unsqueeze", lambda x, a: _unsqueeze_shape(x.shape, a["axes"]),
             attrs={"axes": REQUIRED}, onnx="Unsqueeze",
             onnx_attrs=declare.OnnxAttrs(inputs={"axes": 1}),
             doc="insert size-1 axes at `axes` (positions in the output)")


def _data_op(name, compute, shape_of, attrs, doc, onnx=None, fill=lambda attrs: 0,
             onnx_attrs=None):
    """Declare the injective op ``name`` of one tensor from its te compute. ``shape_of(x_type,
    attrs)``, the output's shape, checks the attributes with the graph's errors; where the
    input or the output has no elements, the op's value is ``fill(attrs)`` in that shape."""
    def empty(types, attrs, arrays):
        shape = shape_of(types[0], attrs)
        if 0 in shape or 0 in types[0].shape:
            return np.full(shape, fill(attrs), types[0].dtype)
        return None

    declare.op(name, compute, kind=OpKind.INJECTIVE, attrs=attrs,
               check=lambda types, attrs: shape_of(types[0], attrs), empty=empty, onnx=onnx,
               onnx_attrs=onnx_attrs, doc=doc)


def _transposed(x, attrs):
    return tuple(x.shape[p] for p in TT.permutation(attrs.get("perm"), x.shape))


_data_op("transpose", lambda x, *, name, perm=None: T.transpose(x, perm, name=name),
         _transposed, {"perm": None}, "permute axes (reverse them if `perm` is not given)",
         onnx="Transpose")


def _concat_shape(types, attrs):
    same_dtype("concat", types)
    x = types[0]
    return TT.joined_shape([t.shape for t in types], norm_axis("concat", attrs["axis"], x.ndim))


def _concat_empty(types, attrs, arrays):
    """An input with no elements adds nothing: the concat of the others."""
    if not any(0 in t.shape for t in types):
        return None
    shape = _concat_shape(types, attrs)
    kept = [a for a in arrays or () if a.size]
    if not kept:
        return np.empty(shape, types[0].dtype)
    return get("concat").reference(*kept, axis=attrs["axis"])


declare.op("concat", lambda *xs, axis, name: T.concat(xs, axis, name=name),
           kind=OpKind.INJECTIVE, attrs={"axis": REQUIRED}, num_inputs=(1, None),
           check=_concat_shape, empty=_concat_empty, onnx="Concat",
           doc="join tensors along `axis`")


def _split_sizes(x, attrs):
    axis = norm_axis("split", attrs["axis"], x.ndim)
    sizes = ints("split", "sizes", attrs["sizes"])
    TT.check_split(x.shape, sizes, axis, least=0)   # a piece may be empty
    return axis, sizes


def _split_empty(types, attrs, arrays):
    """Pieces of size 0 are empty; the others are the split without them."""
    x = types[0]
    axis, sizes = _split_sizes(x, attrs)
    if 0 not in sizes and 0 not in x.shape:
        return None
    shapes = [x.shape[:axis] + (s,) + x.shape[axis + 1:] for s in sizes]
    if arrays is None or 0 in x.shape:
        return tuple(np.empty(s, x.dtype) for s in shapes)
    pieces = get("split").reference(arrays[0], axis=axis, sizes=[s for s in sizes if s])
    pieces = iter(pieces)
    return tuple(next(pieces) if s else np.empty(shape, x.dtype)
                 for s, shape in zip(sizes, shapes))


def _onnx_split_sizes(attrs, types, used):
    """A Split node's sizes where it gives none: ``num_outputs`` pieces of ceil(n / count)
    (the last smaller), or one equal piece per output of the node."""
    if "sizes" in attrs:
        return {}
    dim = types[0].shape[norm_axis("split", attrs.get("axis", 0), types[0].ndim)]
    n = attrs.get("num_outputs", len(used))
    if "num_outputs" in attrs:
        chunk = -(-dim // n)
        return {"sizes": tuple(min(chunk, max(0, dim - chunk * i)) for i in range(n))}
    if dim % n:
        raise OpAttributeError(f"split: cannot split {dim} evenly into {n} outputs; Instead: "
                               "give the node its 'split' input")
    return {"sizes": (dim // n,) * n}


declare.op("split", lambda x, *, axis, sizes, name: T.split(x, sizes, axis, name=name),
           kind=OpKind.INJECTIVE, attrs={"axis": 0, "sizes": REQUIRED},
           check=lambda types, attrs: _split_sizes(types[0], attrs), empty=_split_empty,
           onnx="Split", onnx_attrs=declare.OnnxAttrs(
               names={"sizes": "split"}, inputs={"sizes": 1}, onnx_only=("num_outputs",),
               derive=_onnx_split_sizes, outputs=1 << 20),
           doc="cut along `axis` into pieces of `sizes`")


def slice_ranges(shape, starts, ends, axes=None, steps=None) -> list[tuple[int, int, int]]:
    """(start, step, length) for every axis after ONNX's clamping rules
    (:func:`mlcbook.te.ops.transform.slice_ranges` with the attributes checked)."""
    starts, ends = ints("slice", "starts", starts), ints("slice", "ends", ends)
    axes = norm_axes("slice", ints("slice", "axes", axes), len(shape)) if axes is not None \
        else None
    steps = ints("slice", "steps", steps) if steps is not None else None
    return te_slice_ranges(shape, starts, ends, axes, steps, error=OpAttributeError)


def _sliced(x, attrs):
    return tuple(n for _, _, n in slice_ranges(x.shape, attrs["starts"], attrs["ends"],
                                               attrs.get("axes"), attrs.get("steps")))


_data_op("slice", T.slice, _sliced,
         {"starts": REQUIRED, "ends": REQUIRED, "axes": None, "steps": None},
         "x[starts:ends:steps] along `axes` (ONNX's clamping of out-of-range bounds)",
         onnx="Slice", onnx_attrs=declare.OnnxAttrs(
             inputs={"starts": 1, "ends": 2, "axes": 3, "steps": 4}))


def _gathered(types, attrs):
    data, idx = types
    require_dtype("gather", idx, ("int32", "int64"), "indices")
    axis = norm_axis("gather", attrs["axis"], data.ndim)
    return data.shape[:axis] + idx.shape + data.shape[axis + 1:]


declare.op("gather", T.gather, kind=OpKind.INJECTIVE, attrs={"axis": 0}, num_inputs=(2, 2),
           check=_gathered, empty=declare.empty_output(_gathered),
           indices=declare.indices_on_axis("gather"), onnx="Gather",
           doc="pick slices along `axis` by integer indices (negative counts from the end)")


def _padded(x, attrs):
    pads = ints("pad", "pads", attrs["pads"], 2 * x.ndim)
    # cropping an axis to nothing makes an empty tensor, which the graph computes
    shape = TT.padded_shape(x.shape, [(pads[d], pads[x.ndim + d]) for d in range(x.ndim)],
                            attrs["mode"], least=0)
    if attrs["mode"] != "constant" and 0 in x.shape and sum(pads):
        raise OpShapeError(f"pad: mode {attrs['mode']!r} cannot pad an empty tensor {x.shape}")
    if attrs["mode"] == "reflect":
        # a mirror reflects at most the axis once, without its edge (as onnxruntime requires)
        for i, d in enumerate(x.shape):
            for side, p in (("before", pads[i]), ("after", pads[x.ndim + i])):
                if p > d - 1:
                    raise OpShapeError(
                        f"pad: mode 'reflect' pads axis {i} (length {d}) by {p} {side}, more "
                        f"than the {d - 1} a reflection without the edge can give; Instead: "
                        "pad by at most length - 1, or use mode 'edge' or 'wrap'")
    return shape


def _pad(x, *, pads, mode, value, name):
    return T.pad(x, [(pads[d], pads[x.ndim + d]) for d in range(x.ndim)], value, mode,
                 name=name)


def _onnx_pad_axes(attrs, types, used):
    """A Pad node's pads over every axis, where its ``axes`` input names some of them."""
    if attrs.get("axes") is None:
        return {}
    ndim, axes, pads = types[0].ndim, attrs["axes"], attrs["pads"]
    full = [0] * (2 * ndim)
    for i, a in enumerate(axes):
        full[a % ndim], full[ndim + a % ndim] = pads[i], pads[len(axes) + i]
    return {"pads": tuple(full)}


_data_op("pad", _pad, _padded, {"pads": REQUIRED, "mode": "constant", "value": 0.0},
         "pad (or crop, with negative pads) every axis; pads = all befores, then all afters",
         fill=lambda attrs: attrs["value"] if attrs["mode"] == "constant" else 0,
         onnx="Pad", onnx_attrs=declare.OnnxAttrs(
             names={"value": "constant_value"}, onnx_only=("axes",), derive=_onnx_pad_axes,
             inputs={"pads": 1, "value": declare.OnnxInput(2, "scalar", "like"), "axes": 3},
             check=lambda attrs: [] if attrs.get("mode", "constant") in PAD_MODES else
             [f"mode={attrs['mode']!r} is not one of {PAD_MODES}"]))


def _expanded(x, attrs):
    return broadcast_shapes("expand", x.shape, ints("expand", "shape", attrs["shape"]))


_data_op("expand", T.expand, _expanded, {"shape": REQUIRED},
         "x broadcast with `shape` (numpy rules)", onnx="Expand",
         onnx_attrs=declare.OnnxAttrs(inputs={"shape": 1}))


_data_op("tile", T.tile, lambda x, attrs: TT.tiled_shape(x.shape, attrs["repeats"]),
         {"repeats": REQUIRED},
         "numpy.tile(x, repeats), one count per dimension", onnx="Tile",
         onnx_attrs=declare.OnnxAttrs(inputs={"repeats": 1}))


def _trilu_shape(x, attrs):
    need_rank("trilu", x.shape, 2)   # an empty input never reaches the compute's check
    return x.shape


_data_op("trilu", T.trilu, _trilu_shape, {"upper": 1, "k": 0},
         "the upper (numpy.triu) or lower (numpy.tril) triangle of the last two axes",
         onnx="Trilu", onnx_attrs=declare.OnnxAttrs(inputs={"k": declare.OnnxInput(1, "scalar")}))
