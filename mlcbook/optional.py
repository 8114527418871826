"""Optional dependencies: what a feature beyond compiling and running models imports.

The core install (numpy, llvmlite, onnx, ml_dtypes) compiles, runs, saves and exports
models. Tuning, the course's figures, grading, the web book and the comparisons with
onnxruntime need an extra; each imports it through :func:`require`, which turns a missing
package into a :class:`~mlcbook.errors.MissingDependencyError` naming the extra to install::

    >>> xgb = require("xgboost", "the XGBoost cost model")
    >>> # without it: [MLC-I001] the XGBoost cost model needs xgboost, which is not installed
    >>> #   ... Instead: pip install "mlcbook[tune]"
"""

from __future__ import annotations

import importlib
import importlib.util

from .errors import MissingDependencyError

#: top-level module -> (the distribution that provides it, the smallest extra that installs it)
PROVIDERS = {
    "xgboost": ("xgboost", "tune"),
    "tqdm": ("tqdm", "tune"),
    "matplotlib": ("matplotlib", "course"),
    "onnxruntime": ("onnxruntime", "course"),
    "threadpoolctl": ("threadpoolctl", "course"),
    "sklearn": ("scikit-learn", "course"),
    "nbformat": ("nbformat", "course"),
    "nbclient": ("nbclient", "course"),
    "ipykernel": ("ipykernel", "course"),
    "IPython": ("ipython", "course"),
    "jupyter_client": ("jupyter_client", "course"),
    "traitlets": ("traitlets", "course"),
    "markdown_it": ("markdown-it-py", "course"),
    "pygments": ("pygments", "course"),
    "latex2mathml": ("latex2mathml", "course"),
    "distributed": ("dask[distributed]", "tune-dask"),
    "cloudpickle": ("dask[distributed]", "tune-dask"),
    "dask": ("dask[distributed]", "tune-dask"),
}


def require(module: str, feature: str, extra: str | None = None):
    """The module ``module`` (dotted names too), imported for ``feature`` (what the user asked
    for, e.g. "`mlcbook tune`"); a MissingDependencyError naming the extra when it is missing.

    >>> require("tqdm", "a progress bar").__name__
    'tqdm'
    """
    top = module.split(".")[0]
    if top not in PROVIDERS:
        raise KeyError(f"{top!r} has no entry in mlcbook.optional.PROVIDERS")
    dist, default_extra = PROVIDERS[top]
    try:
        return importlib.import_module(module)
    except ImportError as err:  # missing, or broken (a library it loads is missing): reinstall
        raise MissingDependencyError(
            f"{feature} needs {dist}, which is not installed ({err}). Instead: "
            f'pip install "mlcbook[{extra or default_extra}]"') from None


def available(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (for quiet fallbacks).

    >>> available("xgboost")        # the tune extra is installed
    True
    """
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a None in sys.modules: blocked on purpose
        return False


def progress(iterable=None, *, feature: str, extra: str | None = None, **kwargs):
    """A tqdm progress bar (``tqdm(iterable, **kwargs)``) for ``feature``: a notebook widget
    where ipywidgets is installed, else the text bar, without tqdm's "IProgress not found"
    warning.

    >>> for case in progress(cases, feature="the conformance run", desc="cases"): ...
    """
    if available("ipywidgets"):
        bar = require("tqdm.auto", feature, extra).tqdm
    else:
        bar = require("tqdm.std", feature, extra).tqdm
    return bar(iterable, **kwargs)


__all__ = ["PROVIDERS", "require", "available", "progress"]
