"""Graph passes: functions from a graph :class:`~mlcbook.graph.Function` to a new one that
computes the same thing with less work. ``mb.compile(mod, opt_level=...)`` runs the
pipeline of :mod:`.pipeline`; each pass can also be run alone.

    >>> func = fold_constants(func)                 # one pass
    >>> func = optimize(func, opt_level=3)          # the pipeline, as mb.compile runs it
    >>> ctx = PassContext(dump_dir="passes/")       # print/save the function after each pass
    >>> func = optimize(func, ctx=ctx); print(ctx.report())
"""

from .fold import fold_batch_norm, fold_constants
from .int8_layout import convert_int8_layout
from .integer_ops import lower_integer_ops
from .layout import convert_layout
from .qdq import lower_qdq
from .pipeline import OPTIONS, PIPELINE, Pass, PassContext, optimize
from .simplify import eliminate_common_subexpressions, simplify_chains
from .weight_layout import pack_weights
from .winograd import winograd_convs

__all__ = ["Pass", "PassContext", "PIPELINE", "OPTIONS", "optimize", "fold_constants",
           "fold_batch_norm", "eliminate_common_subexpressions", "simplify_chains",
           "convert_layout", "convert_int8_layout", "lower_qdq", "lower_integer_ops",
           "winograd_convs", "pack_weights"]
