"""Run a notebook headlessly, top to bottom, and say which cells raised.

    >>> run = execute_notebook("chapters/01_tensors_and_tensor_functions.ipynb")
    >>> run.error is None, round(run.seconds) < 60
    (True, True)

Cells are named the way Jupyter shows them to the person who wrote the notebook: ``In [5]``
(the code cell's number when the notebook runs top to bottom) and the section it sits in
(``Exercise 1 — fused matmul + relu``), never by an index that counts markdown cells.

``keep_going=True`` runs every cell even after one raised (a cell that runs longer than
``timeout`` is interrupted and counted as raising), so one broken exercise cannot stop the
ones after it; ``limits`` runs the kernel under resource limits (:class:`Limits`), and a
:class:`~mlcbook.grading.sandbox.Confinement` confines what files it can open.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import ipykernel.kernelspec
import nbformat
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
from traitlets import default

from ..errors import GradingError

#: The kernel name meaning "a Python kernel running the interpreter that runs mlcbook": the
#: environment where mlcbook is installed, whatever kernels Jupyter has registered elsewhere.
CURRENT_ENV = ":current-env"

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)
_POINTS = re.compile(r"\s*\(\d+ points?\)$")


class _SpecManager(KernelSpecManager):
    def get_kernel_spec(self, kernel_name):
        if kernel_name == CURRENT_ENV:
            return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                          **ipykernel.kernelspec.get_kernel_dict())
        return super().get_kernel_spec(kernel_name)


class _KernelManager(AsyncKernelManager):
    @default("kernel_spec_manager")
    def _default_spec_manager(self):
        return _SpecManager(data_dir=self.data_dir)


@dataclass(frozen=True)
class Limits:
    """Resource limits for the kernel process (POSIX ``setrlimit``): total CPU seconds, address
    space in bytes, and the size of any file it writes. Exceeding the CPU limit kills the
    kernel; exceeding memory makes the allocation fail (``MemoryError`` in the cell)."""

    cpu_seconds: int = 600
    memory_bytes: int = 4 << 30
    file_bytes: int = 256 << 20

    def apply(self) -> None:
        """Set the limits on the calling process (run in the kernel process before it starts)."""
        import resource  # POSIX only; grading without --isolate works everywhere

        for what, value in ((resource.RLIMIT_CPU, self.cpu_seconds),
                            (resource.RLIMIT_AS, self.memory_bytes),
                            (resource.RLIMIT_FSIZE, self.file_bytes),
                            (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(what, (value, value))


@dataclass(frozen=True)
class CellFailure:
    """A cell that raised: its index among all cells, how Jupyter labels it, and the error."""

    index: int
    label: str
    ename: str
    evalue: str

    @property
    def error(self) -> str:
        """``ename: evalue``, or just ``ename`` when the exception has no message."""
        return f"{self.ename}: {self.evalue}" if self.evalue else self.ename

    def __str__(self) -> str:
        return f"{self.label} raised {self.error}"


@dataclass
class NotebookRun:
    path: Path
    notebook: nbformat.NotebookNode
    seconds: float
    failures: list[CellFailure]
    #: The failure that stopped execution (a dead kernel, or any error without keep_going).
    stopped: CellFailure | None = None

    @property
    def error(self) -> CellFailure | None:
        """The first cell that raised, if any."""
        return self.failures[0] if self.failures else None


def read_notebook(path: str | Path) -> nbformat.NotebookNode:
    path = Path(path)
    if not path.is_file():
        raise GradingError(f"notebook {path} does not exist; check the path")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as err:  # noqa: BLE001 - nbformat raises several unrelated types
        raise GradingError(f"{path} is not a readable notebook ({type(err).__name__}: {err})") \
            from None


def cell_label(nb: nbformat.NotebookNode, index: int) -> str:
    """``In [n] (section)`` for cell ``index``: n counts code cells from 1, as Jupyter numbers
    them when the notebook runs top to bottom; the section is the last heading above it."""
    number = sum(1 for c in nb.cells[:index + 1] if c.cell_type == "code")
    label = f"In [{number}]"
    section = section_of(nb, index)
    return f"{label} ({section})" if section else label


def section_of(nb: nbformat.NotebookNode, index: int) -> str:
    """The text of the last markdown heading above cell ``index``, without "(N points)"."""
    for cell in reversed(nb.cells[:index]):
        if cell.cell_type == "markdown":
            headings = _HEADING.findall(cell.source)
            if headings:
                return _POINTS.sub("", headings[-1])
    return ""


def execute_notebook(path: str | Path, *, timeout: float = 120,
                     kernel_name: str = CURRENT_ENV, notebook: nbformat.NotebookNode | None = None,
                     keep_going: bool = False, limits: Limits | None = None,
                     cwd: str | Path | None = None, env: dict | None = None,
                     startup: str | None = None, confinement=None) -> NotebookRun:
    """Execute every cell in a fresh kernel started in the notebook's folder (or ``cwd``).

    ``env`` is the kernel's whole environment; ``startup`` a line of Python the kernel runs
    before the first cell, outside the history; ``confinement`` (a
    :class:`~mlcbook.grading.sandbox.Confinement`) is applied to the kernel's process before
    it starts, like ``limits``.

    The kernel runs this Python environment unless ``kernel_name`` names an installed
    Jupyter kernel (``jupyter kernelspec list``). ``notebook`` executes that notebook object
    instead of the file (still in the file's folder). ``timeout`` is per cell, in seconds.

    Without ``keep_going``, execution stops at the first cell that raises; with it, every
    cell runs and ``run.failures`` lists each one that raised. A kernel that dies stops
    execution either way (``run.stopped``).
    """
    if not timeout > 0:
        raise GradingError(f"the timeout must be a positive number of seconds, got {timeout!r}")
    path = Path(path).resolve()
    nb = read_notebook(path) if notebook is None else notebook
    # Saved outputs must not survive: a cell that is never reached would otherwise keep
    # the results of an earlier run.
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    if kernel_name != CURRENT_ENV:
        try:
            _SpecManager().get_kernel_spec(kernel_name)
        except NoSuchKernel:
            known = ", ".join(sorted(_SpecManager().find_kernel_specs())) or "(none)"
            raise GradingError(f"there is no Jupyter kernel named {kernel_name!r} (installed: "
                               f"{known}); leave out --kernel to use this Python") from None
    manager = _KernelManager
    if cwd is not None:
        class manager(_KernelManager):  # noqa: N801 - the connection file in the kernel's folder
            @default("connection_file")
            def _connection_file_in_cwd(self):
                # a confined kernel may read only its own folder (and Python, the system)
                return str(Path(cwd) / f".kernel-{os.getpid()}-{id(self):x}.json")
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name,
                            kernel_manager_class=manager, record_timing=False,
                            allow_errors=keep_going, interrupt_on_timeout=keep_going,
                            error_on_timeout={
                                "ename": "CellTimeoutError",
                                "evalue": f"the cell ran longer than {timeout:g} s and was "
                                          "interrupted", "traceback": []},
                            resources={"metadata": {"path": str(cwd or path.parent)}},
                            extra_arguments=[f"--IPKernelApp.exec_lines={startup}"]
                            if startup else [])
    start = time.perf_counter()
    stopped = None
    launch = {} if env is None else {"env": env}
    if limits is not None or confinement is not None:
        if os.name != "posix":
            raise GradingError("--isolate sets POSIX resource limits and works on Linux and "
                               "macOS only; on this system, grade in a container instead")

        def prepare() -> None:  # in the kernel's process, before it runs Python
            if limits is not None:
                limits.apply()
            if confinement is not None:
                confinement.apply()
        launch["preexec_fn"] = prepare
    # The kernel process logs start-up chatter on its stderr; keep it out of the grade
    # table, but quote it if the kernel dies, since then it is the only clue.
    with tempfile.TemporaryFile(mode="w+") as kernel_log:
        try:
            client.execute(stderr=kernel_log, **launch)
        except CellExecutionError:
            pass  # the failing cell's error output is read below
        except CellTimeoutError as err:
            index = _last_started(nb)
            stopped = CellFailure(index, cell_label(nb, index), "CellTimeoutError",
                                  f"the cell ran longer than {timeout:g} s ({err})")
        except DeadKernelError as err:
            kernel_log.seek(0)
            tail = "\n".join(kernel_log.read().strip().splitlines()[-5:])
            index = _last_started(nb)
            stopped = CellFailure(index, cell_label(nb, index), "DeadKernelError",
                                  f"{err}; the kernel's last words:\n{tail}" if tail else str(err))
    failures = [f for f in _failures(nb) if stopped is None or f.index != stopped.index]
    if stopped is not None:
        failures.append(stopped)
    elif not keep_going and failures:
        stopped = failures[0]
    return NotebookRun(path, nb, time.perf_counter() - start, failures, stopped)


def _failures(nb: nbformat.NotebookNode) -> list[CellFailure]:
    found = []
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                found.append(CellFailure(index, cell_label(nb, index), out.get("ename", "Error"),
                                         out.get("evalue", "")))
                break
    return found


def _last_started(nb: nbformat.NotebookNode) -> int:
    started = [i for i, c in enumerate(nb.cells)
               if c.cell_type == "code" and c.get("execution_count") is not None]
    return started[-1] if started else 0
