"""``mb.ops``: the operator library. Each op has a fusion kind, attributes with defaults,
shape/dtype inference with clear errors, a reference, and a legalization to loop IR.

    >>> import mlcbook as mb
    >>> mb.ops.get("matmul").kind
    <OpKind.OUT_ELEMWISE_FUSABLE: 4>
    >>> mb.ops.list_ops()[:3]
    ['abs', 'add', 'avg_pool']

Declare an op once with :mod:`mb.ops.declare <mlcbook.ops.declare>` (its compute gives the
rest: ``docs/adding_an_op.md``), or write each part with :func:`register` and
:func:`register_legalization`; the graph IR, the interpreter, the ONNX frontend and the
compiler pick it up by name.
"""

from . import declare  # noqa: F401 - mb.ops.declare.unary(...): an op declared once
from . import unary  # noqa: F401 - declared once each: math, activations, predicates
from . import elementwise, index, linalg, nn, reduce, resize, transform  # noqa: F401 - the ops
from . import lower  # noqa: F401 - and their legalizations
from . import layout  # noqa: F401 - blocked layouts (registers its ops and legalizations)
from . import winograd  # noqa: F401 - the three stages of a Winograd convolution
from . import lrn, shape  # noqa: F401 - LRN; ops folded at compile time
from . import recurrent  # noqa: F401 - RNN, GRU, LSTM
from . import int8_kernels, quant  # noqa: F401 - quantization ops and the int8 kernels
from . import attention  # noqa: F401 - transformer ops: attention, rotary embedding
from . import linear_attention  # noqa: F401 - ONNX's LinearAttention
from . import roi_align  # noqa: F401 - ONNX's RoiAlign
from . import lowbit  # noqa: F401 - conversions of the float8/float4/int4/int2 types
from . import training  # noqa: F401 - batch_norm_train and dropout, the training forms
from .legalize import legalize_call
from .registry import (REQUIRED, Op, OpKind, get, list_ops, register, register_legalization,
                       unregister, view_ops)
from .types import Attrs, TensorType, TupleType, Type, type_of_array

__all__ = ["legalize_call", "REQUIRED", "Op", "OpKind", "get", "list_ops", "register", "register_legalization",
           "unregister", "view_ops", "Attrs", "TensorType", "TupleType", "Type", "type_of_array"]
