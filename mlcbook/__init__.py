"""mlcbook: a small, real machine-learning compiler, and the course that builds it.

The whole user-facing surface::

    import mlcbook as mb
    mb.tir          # loop IR: expressions, buffers, blocks, PrimFunc, IRModule, interpret
    mb.te           # tensor expressions -> PrimFunc (placeholder, compute, reduce_axis, ...)
    mb.script       # the script dialect: @T.prim_func, parse(text)
    mb.grading      # graded exercises: check(exercise_id, answer)
    mb.Schedule, mb.Trace, mb.ScheduleError   # transform loop IR step by step (mb.schedule)
    mb.lower, mb.build, mb.Target, mb.time_kernel   # native code through LLVM
    mb.from_onnx, mb.compile, mb.load   # whole models: ONNX -> graph IR -> Executable
    mb.rules        # schedule rules: each block's schedule, its decisions knobs the machine sets
    mb.tune         # automatic optimization: search spaces, cost models, tuning records
    mb.to_onnx      # graph IR -> ONNX (e.g. a model trained with mb.train)
    mb.train        # training: grad, losses, optimizers, a compiled step, checkpoints
    mb.models       # a small model shipped inside the package (the tour's)
    mb.MLCError     # base of every error a user can cause
"""

from . import errors, tir
from .errors import MLCError, ScheduleError

__version__ = "0.1.0"

# Everything else loads on first use, so that `import mlcbook` stays light (llvmlite, onnx
# and the grading machinery are imported only by the code that needs them).
# name -> (module, attribute or None for the module itself)
_LAZY = {
    "te": (".te", None), "script": (".script", None), "schedule": (".schedule", None),
    "graph": (".graph", None), "ops": (".ops", None), "frontend": (".frontend", None),
    "codegen": (".codegen", None), "runtime": (".runtime", None), "models": (".models", None),
    "grading": (".grading", None), "train": (".train", None), "tune": (".tune", None),
    "rules": (".rules", None),
    "Schedule": (".schedule", "Schedule"), "Trace": (".schedule", "Trace"),
    "lower": (".tir.transform", "lower"), "build": (".runtime", "build"),
    "time_kernel": (".runtime", "time_kernel"), "Target": (".codegen", "Target"),
    "from_onnx": (".frontend", "from_onnx"), "to_onnx": (".frontend.onnx_export", "to_onnx"),
    "compile": (".graph.compile", "compile"), "load": (".graph.run.executable", "load"),
}

__all__ = ["MLCError", "ScheduleError", "errors", "tir", "__version__", *_LAZY]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'mlcbook' has no attribute {name!r}")
    import importlib
    module, attr = _LAZY[name]
    mod = importlib.import_module(module, __name__)
    return mod if attr is None else getattr(mod, attr)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
