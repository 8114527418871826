"""Optional imports: a feature whose extra is missing raises MissingDependencyError naming
the extra; tqdm's bar falls back to text quietly where ipywidgets is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mlcbook.errors import MissingDependencyError
from mlcbook.optional import available, progress, require


def test_require_returns_the_module():
    assert require("tqdm.std", "anything").__name__ == "tqdm.std"


def test_a_missing_package_names_its_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "xgboost", None)
    with pytest.raises(MissingDependencyError) as err:
        require("xgboost", "the XGBoost cost model")
    assert str(err.value).startswith("[MLC-I001] the XGBoost cost model needs xgboost, which "
                                     "is not installed")
    assert str(err.value).endswith('Instead: pip install "mlcbook[tune]"')


def test_a_feature_may_name_another_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match=r'pip install "mlcbook\[fuzz\]"'):
        require("onnxruntime", "the fuzzer", extra="fuzz")


def test_a_module_of_no_extra_is_a_programming_error():
    with pytest.raises(KeyError, match="no entry in mlcbook.optional.PROVIDERS"):
        require("torch", "nothing")


def test_available_says_no_for_a_blocked_module(monkeypatch):
    assert available("numpy")
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert not available("tqdm")


def test_progress_without_ipywidgets_is_the_text_bar(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipywidgets", None)
    import tqdm.std
    bar = progress(range(3), feature="a test", disable=True)
    assert type(bar) is tqdm.std.tqdm and list(bar) == [0, 1, 2]


#: a Jupyter kernel without ipywidgets, as tqdm.auto detects one; prints the warnings' kinds
_FAKE_KERNEL = """
import sys, types, warnings
sys.modules["ipywidgets"] = None
sys.modules["ipykernel.zmqshell"] = types.ModuleType("ipykernel.zmqshell")
class ZMQInteractiveShell:
    pass
import IPython
IPython.get_ipython = lambda: ZMQInteractiveShell()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    if sys.argv[1] == "mlcbook":
        from mlcbook.optional import progress
        total = sum(progress(range(3), feature="a test", file=sys.stderr))
    else:
        from tqdm.auto import tqdm
        total = sum(tqdm(range(3), file=sys.stderr))
print(total, sorted({w.category.__name__ for w in caught}))
"""


@pytest.mark.parametrize("how, warnings", [("tqdm.auto", "['TqdmWarning']"), ("mlcbook", "[]")])
def test_progress_in_a_kernel_without_ipywidgets_does_not_warn(how, warnings):
    proc = subprocess.run([sys.executable, "-c", _FAKE_KERNEL, how], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"3 {warnings}"
