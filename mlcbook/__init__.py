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
    mb.models       # a small model shipped inside the package (the tour's)
    mb.MLCError     # base of every error a user can cause
"""

from . import errors, tir
from .errors import MLCError

__version__ = "0.1.0"

__all__ = ["MLCError", "errors", "tir", "te", "script", "schedule", "Schedule", "Trace", "grading",
           "__version__"]


def __getattr__(name):
    # te, script and grading load on first use so `import mlcbook` stays light
    import importlib
    if name in ("te", "script", "grading"):
        return importlib.import_module(f".{name}", __name__)
    if name in ("graph", "ops", "frontend", "models"):
        return importlib.import_module(f".{name}", __name__)
    if name == "schedule":
        return importlib.import_module(".schedule", __name__)
    if name in ("Schedule", "Trace"):
        return getattr(importlib.import_module(".schedule", __name__), name)
    if name == "ScheduleError":
        return errors.ScheduleError
    if name in ("codegen", "runtime"):
        return importlib.import_module(f".{name}", __name__)
    if name in ("build", "time_kernel"):
        return getattr(importlib.import_module(".runtime", __name__), name)
    if name == "lower":
        return importlib.import_module(".tir.transform", __name__).lower
    if name == "Target":
        return importlib.import_module(".codegen", __name__).Target
    if name == "from_onnx":
        return importlib.import_module(".frontend", __name__).from_onnx
    if name in ("compile", "load"):
        return getattr(importlib.import_module(".graph.executable", __name__), name)
    raise AttributeError(f"module 'mlcbook' has no attribute {name!r}")
