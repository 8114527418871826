"""Every error a user can cause is an :class:`MLCError` subclass with a stable code.

The code (``MLC-T001`` ...) is part of the message so that a learner can search for it,
and it never changes once published. A message names the offending thing and says
what to do about it::

    >>> raise UndefinedVariableError("variable 'k' is used but never defined; ...")
    Traceback (most recent call last):
    mlcbook.errors.UndefinedVariableError: [MLC-T001] variable 'k' is used but ...
"""

from __future__ import annotations


class MLCError(Exception):
    """Base of every error a user of mlcbook can cause."""

    code = "MLC-E000"

    def __init__(self, message: str):
        self.message = message
        super().__init__(f"[{self.code}] {message}")


# --- loop IR construction and verification (T) ---------------------------------------
class TIRError(MLCError):
    """A loop-IR program is malformed."""

    code = "MLC-T000"


class UndefinedVariableError(TIRError):
    code = "MLC-T001"


class BindingMismatchError(TIRError):
    """A block's binding does not fit the block's iteration domain."""

    code = "MLC-T002"


class ReadOnlyStoreError(TIRError):
    """A store writes to an input parameter."""

    code = "MLC-T003"


class DTypeMismatchError(TIRError):
    code = "MLC-T004"


class IndexOutOfBoundsError(TIRError):
    code = "MLC-T005"


class ShapeError(TIRError):
    """Wrong number of indices, a non-positive extent, a malformed shape."""

    code = "MLC-T006"


class DuplicateNameError(TIRError):
    code = "MLC-T007"


class StructuralMismatchError(TIRError):
    """Raised by ``assert_structural_equal``; the message shows where the programs differ."""

    code = "MLC-T008"


# --- script parser (P) ------------------------------------------------------------------
class ScriptError(MLCError):
    """Script source that cannot be parsed; the message points at line and column."""

    code = "MLC-P001"

    def __init__(self, message: str, lineno: int | None = None, col: int | None = None,
                 source_line: str | None = None):
        self.lineno, self.col = lineno, col
        where = ""
        if lineno is not None:
            where = f" (line {lineno}, column {(col or 0) + 1})"
            if source_line is not None:
                caret = " " * (col or 0) + "^"
                where += f"\n    {source_line}\n    {caret}"
        super().__init__(message + where)


# --- tensor expressions (X) ---------------------------------------------------------------
class TEError(MLCError):
    code = "MLC-X001"


class TEShapeError(TEError):
    """Tensor shapes an operator cannot combine: broadcasting, matmul, conv, reshape."""

    code = "MLC-X002"


class TEAttributeError(TEError):
    """An operator argument that is not a tensor has a bad value: a permutation, a mode,
    repeat counts (a graph op reports it as an :class:`OpAttributeError`)."""

    code = "MLC-X003"


class TEDTypeError(TEError):
    """Tensors of dtypes an operator cannot take, or dtypes that disagree (a graph op reports
    it as an :class:`OpDTypeError`)."""

    code = "MLC-X004"


# --- interpreter and kernel arguments (A) -------------------------------------------------
class ArgumentError(MLCError):
    """A kernel or interpreter was called with the wrong arguments (count, shape, dtype)."""

    code = "MLC-A001"


class ExecutionError(MLCError):
    """A program faulted while it ran: NaN or inf cast to an integer."""

    code = "MLC-A002"


# --- schedules (S); subclasses, one per violated fact, live in mlcbook.schedule ------------
class ScheduleError(MLCError):
    code = "MLC-S000"


class SpaceError(ScheduleError):
    """A schedule the rules reject before it is built or measured: a register tile larger
    than the vector registers can hold, a decision no candidate of its knob matches."""

    code = "MLC-U001"


# --- automatic tuning (U); subclasses live in mlcbook.tune.errors ----------------------------
class TuneError(MLCError):
    """Tuning was asked something it cannot do (a bad budget, a database it cannot read)."""

    code = "MLC-U000"


class DatabaseError(TuneError):
    """A tuning database that cannot be read or written."""

    code = "MLC-U003"


# --- codegen and build (C) -----------------------------------------------------------------
class BuildError(MLCError):
    code = "MLC-C001"


class TargetError(BuildError):
    """A target string mlcbook cannot compile for (unknown kind, option or triple)."""

    code = "MLC-C002"


class ForeignTargetError(BuildError):
    """A kernel compiled for another CPU architecture was called here."""

    code = "MLC-C003"


class UnrollError(BuildError):
    """A loop marked unrolled is too long to unroll."""

    code = "MLC-C004"


class KernelLoadError(BuildError):
    """A file given to load_kernel is missing or was not written by Kernel.export_object."""

    code = "MLC-C005"


class VectorizeError(BuildError):
    """A loop marked vectorized whose iterations cannot run as SIMD lanes (they share memory)."""

    code = "MLC-C006"


class ArtifactError(BuildError):
    """A saved model (``.mlcb``) is damaged, inconsistent, for another machine, or not the
    file its pinned hash names; the message names the member at fault."""

    code = "MLC-C007"


class ExportError(BuildError):
    """A model cannot be exported as a C library (bad name, no C compiler, foreign target)."""

    code = "MLC-C008"


class MissingFeatureError(TargetError):
    """The program uses an instruction (a tensor intrinsic) the target CPU does not have."""

    code = "MLC-C009"


# --- graph IR, operators, frontends (G) ----------------------------------------------------
class GraphError(MLCError):
    code = "MLC-G001"


class OpShapeError(GraphError):
    """An op's inputs have shapes it cannot take (e.g. a matmul whose inner dims differ)."""

    code = "MLC-G002"


class OpDTypeError(GraphError):
    """An op's inputs have dtypes it cannot take, or dtypes that disagree."""

    code = "MLC-G003"


class UnknownOpError(GraphError):
    code = "MLC-G004"


class OpAttributeError(GraphError):
    """An op attribute is missing, unknown, or has a bad value."""

    code = "MLC-G005"


class UnsupportedModelError(GraphError):
    """An imported model uses ops or attributes mlcbook does not support; lists all of them."""

    code = "MLC-G006"


class InvalidModelError(GraphError):
    """An imported model is malformed (the message carries onnx's checker message)."""

    code = "MLC-G007"


class UnboundVarError(GraphError):
    """A graph function uses a variable that is not one of its parameters."""

    code = "MLC-G008"


class LegalizeError(GraphError):
    """An op cannot be lowered to loop IR."""

    code = "MLC-G009"


class DynamicShapeError(GraphError):
    """A dimension that is not known at compile time where mlcbook needs it static: a
    symbolic dimension other than the batch, or a symbolic-batch model saved or exported."""

    code = "MLC-G010"


# --- training: gradients, optimizers, checkpoints (D) ---------------------------------------
class TrainingError(MLCError):
    """A training graph, optimizer, trainer or checkpoint is used wrongly."""

    code = "MLC-D001"


class NoGradientError(TrainingError):
    """A gradient is asked for through an op that has no gradient rule."""

    code = "MLC-D002"


class RewriteError(TrainingError):
    """A structural rewrite of a training model cannot be applied as asked."""

    code = "MLC-D003"


class InductionError(TrainingError):
    """Structural induction (a corpus of runs, a structure model, a proposal) is used wrongly."""

    code = "MLC-D004"


# --- installation (I) ----------------------------------------------------------------------
class MissingDependencyError(MLCError):
    """A feature needs a package of an extra (``pip install "mlcbook[tune]"``) that is not
    installed; the core install compiles and runs models only."""

    code = "MLC-I001"


# --- grading and the book (B) --------------------------------------------------------------
class GradingError(MLCError):
    code = "MLC-B001"


class BookError(MLCError):
    code = "MLC-B002"


def all_error_classes() -> list[type[MLCError]]:
    """Every MLCError subclass currently imported, for the uniqueness test of codes."""
    seen, todo = [], [MLCError]
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    return seen
