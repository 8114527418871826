"""Run a notebook headlessly, top to bottom, and say where it stopped if a cell raised.

    >>> run = execute_notebook("chapters/01_tensors_and_tensor_functions.ipynb")
    >>> run.error is None, round(run.seconds) < 60
    (True, True)
"""

from __future__ import annotations

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
class CellFailure:
    """The cell that stopped a notebook: its index (0-based, all cells counted) and error."""

    cell: int
    ename: str
    evalue: str

    def __str__(self) -> str:
        return f"cell {self.cell + 1} raised {self.ename}: {self.evalue}"


@dataclass
class NotebookRun:
    path: Path
    notebook: nbformat.NotebookNode
    seconds: float
    error: CellFailure | None


def read_notebook(path: str | Path) -> nbformat.NotebookNode:
    path = Path(path)
    if not path.is_file():
        raise GradingError(f"notebook {path} does not exist; check the path")
    try:
        return nbformat.read(path, as_version=4)
    except Exception as err:  # noqa: BLE001 - nbformat raises several unrelated types
        raise GradingError(f"{path} is not a readable notebook ({type(err).__name__}: {err})") \
            from None


def execute_notebook(path: str | Path, *, timeout: float = 120,
                     kernel_name: str = CURRENT_ENV) -> NotebookRun:
    """Execute every cell in a fresh kernel started in the notebook's folder.

    The kernel runs this Python environment unless ``kernel_name`` names an installed
    Jupyter kernel (``jupyter kernelspec list``).

    Execution stops at the first cell that raises; the outputs up to there are kept in
    ``run.notebook`` and ``run.error`` names the cell. ``timeout`` is per cell, in seconds.
    """
    path = Path(path).resolve()
    nb = read_notebook(path)
    # Saved outputs must not survive: a cell that is never reached would otherwise keep
    # the results of an earlier run (and a grader would count them).
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
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name,
                            kernel_manager_class=_KernelManager, record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    error = None
    # The kernel process logs start-up chatter on its stderr; keep it out of the grade
    # table, but quote it if the kernel dies, since then it is the only clue.
    with tempfile.TemporaryFile(mode="w+") as kernel_log:
        try:
            client.execute(stderr=kernel_log)
        except CellExecutionError as err:
            error = _failure(nb, err)
        except CellTimeoutError as err:
            error = CellFailure(_last_started(nb), "CellTimeoutError",
                                f"a cell ran longer than {timeout:g} s ({err})")
        except DeadKernelError as err:
            kernel_log.seek(0)
            tail = "\n".join(kernel_log.read().strip().splitlines()[-5:])
            error = CellFailure(_last_started(nb), "DeadKernelError",
                                f"{err}; the kernel's last words:\n{tail}")
    return NotebookRun(path, nb, time.perf_counter() - start, error)


def _failure(nb: nbformat.NotebookNode, err: CellExecutionError) -> CellFailure:
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                return CellFailure(index, out.get("ename", "Error"), out.get("evalue", ""))
    return CellFailure(_last_started(nb), getattr(err, "ename", "Error"),
                       getattr(err, "evalue", str(err)))


def _last_started(nb: nbformat.NotebookNode) -> int:
    started = [i for i, c in enumerate(nb.cells)
               if c.cell_type == "code" and c.get("execution_count") is not None]
    return started[-1] if started else 0
