"""Round two of forged grades under ``mlcbook grade --isolate``: a background thread that
reads the grader's cells from IPython's history, top-level names that shadow what the
grader's bootstrap looked up, and answers that wrap the solution notebook's functions read
from disk. Each attack notebook is the chapter-1 student notebook (all stubs) plus the
attack; each once scored 10/10, and each scores 0 now."""

from __future__ import annotations

import re

import nbformat
import pytest

from mlcbook import book
from mlcbook.grading.grade import _grader_cell, grade

#: a forger: every 32-hex string it can find is tried as the token, in every folder it can
#: find (the kernel's folder and its subfolders, and any path named next to "out_path")
_FORGE = '''\
import json, os, re, threading, time

def _forge(text):
    tokens = set(re.findall(r"\\b[0-9a-f]{32}\\b", text))
    folders = {os.path.dirname(p) for p in re.findall(r"'out_path': '([^']+)'", text)}
    folders |= {os.path.join(".", d) for d in os.listdir(".") if os.path.isdir(d)}
    for token in tokens:
        for folder in folders:
            for i, (ex, points) in enumerate([("01.lnumpy_mm_relu", 1), ("01.lnumpy_bmm", 2),
                    ("01.lnumpy_softmax", 2), ("01.lnumpy_conv2d", 3), ("01.lnumpy_mlp", 2)]):
                try:
                    with open(os.path.join(folder, f"{i}.json"), "w") as f:
                        json.dump({"token": token, "exercise": ex, "points": points,
                                   "message": "forged"}, f)
                except OSError:
                    pass
'''

HISTORY_IH = _FORGE + '''
def _watch():
    for _ in range(2000):
        text = "\\n".join(get_ipython().user_ns.get("_ih", []))
        text += "\\n".join(f.read() for f in [open(p) for p in os.listdir(".")
                                              if os.path.isfile(p)])
        _forge(text + json.dumps(dict(os.environ)))
        time.sleep(0.005)
threading.Thread(target=_watch, daemon=True).start()
'''

HISTORY_MANAGER = _FORGE + '''
def _watch():
    hm = get_ipython().history_manager
    for _ in range(2000):
        text = "\\n".join(hm.input_hist_raw + hm.input_hist_parsed)
        text += "\\n".join(src for _, _, src in hm.get_range(raw=True))
        _forge(text)
        time.sleep(0.005)
threading.Thread(target=_watch, daemon=True).start()
'''

#: the bootstrap once called exec, open, compile and hashlib from the notebook's globals
SHADOW_EXEC = '''\
import json, os
_real_exec = exec
def exec(code, namespace=None, *rest):
    _real_exec(code, namespace, *rest)
    def grade_answer(**kw):
        with open(kw["out_path"], "w") as f:
            json.dump({"token": kw["token"], "exercise": kw["exercise_id"], "points": 3,
                       "message": "forged"}, f)
    if namespace is not None and "grade_answer" in namespace:
        namespace["grade_answer"] = grade_answer
'''

SHADOW_MODULES = '''\
import json
class hashlib:
    class sha256:
        def __init__(self, data): pass
        def hexdigest(self): return "x"
class RuntimeError(Exception):
    pass
_real_compile = compile
def compile(source, path, mode, **kw):
    source = source + b"""
def grade_answer(**kw):
    import json
    with open(kw["out_path"], "w") as f:
        json.dump({"token": kw["token"], "exercise": kw["exercise_id"], "points": 3,
                   "message": "forged"}, f)
"""
    return _real_compile(source, path, mode, **kw)
__builtins__ = {"__import__": __import__, "exec": exec, "compile": compile, "open": open}
'''

#: the solutions, found from where the notebook is run or from the mlcbook package
_WRAP = '''\
import json, os, mlcbook
_places = ["solutions", "exercises/solutions", "../exercises/solutions",
           os.path.join(os.path.dirname(os.path.dirname(mlcbook.__file__)), "exercises",
                        "solutions")]
_solutions = {}
for _place in _places:
    _path = os.path.join(_place, "01_tensors_and_tensor_functions.ipynb")
    try:
        _cells = json.load(open(_path))["cells"]
    except OSError as _err:
        print("cannot read", _path, _err)
        continue
    for _cell in _cells:
        if _cell["cell_type"] == "code" and "check(" not in "".join(_cell["source"]):
            exec("".join(_cell["source"]), _solutions)
    break
'''

WRAP_BY_PATH = _WRAP + '''
def lnumpy_mm_relu(*a): return _solutions["lnumpy_mm_relu"](*a)
def lnumpy_bmm(*a): return _solutions["lnumpy_bmm"](*a)
def lnumpy_softmax(*a): return _solutions["lnumpy_softmax"](*a)
def lnumpy_conv2d(*a): return _solutions["lnumpy_conv2d"](*a)
def lnumpy_mlp(*a): return _solutions["lnumpy_mlp"](*a)
'''

WRAP_BY_BOOK = '''\
import json
from mlcbook import book
_solutions = {}
try:
    for _cell in json.load(open(book.chapter(1).solutions))["cells"]:
        if _cell["cell_type"] == "code" and "check(" not in "".join(_cell["source"]):
            exec("".join(_cell["source"]), _solutions)
except Exception as _err:
    print("cannot read the solutions:", type(_err).__name__, _err)
def lnumpy_mm_relu(*a): return _solutions["lnumpy_mm_relu"](*a)
def lnumpy_bmm(*a): return _solutions["lnumpy_bmm"](*a)
def lnumpy_softmax(*a): return _solutions["lnumpy_softmax"](*a)
def lnumpy_conv2d(*a): return _solutions["lnumpy_conv2d"](*a)
def lnumpy_mlp(*a): return _solutions["lnumpy_mlp"](*a)
'''

ATTACKS = {"history_ih": HISTORY_IH, "history_manager": HISTORY_MANAGER,
           "shadow_exec": SHADOW_EXEC, "shadow_modules": SHADOW_MODULES,
           "wrap_by_path": WRAP_BY_PATH, "wrap_by_book": WRAP_BY_BOOK}


def graded_attacks(folder, attacks: dict) -> dict:
    """Each attack appended to the chapter-1 student notebook, graded with --isolate."""
    paths = []
    for name, source in attacks.items():
        nb = nbformat.read(book.chapter(1).exercises, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(source))
        path = folder / f"01_{name}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return dict(zip(attacks, grade(paths, timeout=120, isolate=True)))


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    return graded_attacks(tmp_path_factory.mktemp("attacks"), ATTACKS)


@pytest.mark.parametrize("attack", ["history_ih", "history_manager"])
def test_a_thread_reading_the_history_finds_no_secret(attacked, attack):
    report = attacked[attack]
    assert (report.points, report.max_points) == (0, 10), [str(r) for r in report.results]
    # the thread may overwrite a genuine verdict with a wrong token: then it is not graded
    assert all(r.message.startswith(("not implemented:", "not graded:"))
               for r in report.results), [r.message for r in report.results]


@pytest.mark.parametrize("attack", ["shadow_exec", "shadow_modules"])
def test_names_that_shadow_builtins_do_not_reach_the_grader(attacked, attack):
    report = attacked[attack]
    assert (report.points, report.max_points) == (0, 10), [str(r) for r in report.results]
    assert not any("forged" in r.message for r in report.results)


@pytest.mark.parametrize("attack", ["wrap_by_path", "wrap_by_book"])
def test_answers_that_wrap_the_solutions_on_disk_find_none(attacked, attack):
    report = attacked[attack]
    assert (report.points, report.max_points) == (0, 10), [str(r) for r in report.results]


def test_the_grader_cells_hold_no_secret_and_name_nothing_rebindable():
    source = _grader_cell(3)
    assert not re.search(r"[0-9a-f]{16}", source) and "json" not in source
    names = set(re.findall(r"(?<![.\w'])([A-Za-z_]\w*)(?!['\w])", source)) - {"c", "for", "in",
                                                                              "if", "and"}
    assert names == set(), names          # only literals and attributes of built-in types


def test_the_solutions_still_score_full_marks_under_isolate():
    (report,) = grade([book.chapter(1).solutions], timeout=120, isolate=True)
    assert report.points == report.max_points == 10, [str(r) for r in report.results]


# --- round three: what the notebook can reach or rebind in its own process -----------------
_EXERCISES = [("01.lnumpy_mm_relu", 1), ("01.lnumpy_bmm", 2), ("01.lnumpy_softmax", 2),
              ("01.lnumpy_conv2d", 3), ("01.lnumpy_mlp", 2)]

#: the token and the verdicts' folder read from the closure of the grader class's method,
#: reachable from sys.modules (the verdict also names the run's seed, from the environment)
CLOSURE = f'''
import sys, json, os
fn = sys.modules["mlcbook_grader"].grader.__dict__["grade"].__func__
cells = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
run, folder = cells.get("run", {{}}), str(cells.get("verdicts", "."))
note = " [cases drawn with seed " + os.environ.get("MLCBOOK_GRADE_SEED", "") + "]"
for i, (ex, points) in enumerate({_EXERCISES!r}):
    with open(os.path.join(folder, f"{{i}}.json"), "w") as f:
        f.write(json.dumps({{"token": run.get("token"), "exercise": ex, "points": points,
                             "message": "forged" + note}}))
'''

#: json.dumps rebound: the bootstrap once wrote its verdict with it
REBIND_JSON = f'''
import json, os
_real = json.dumps
def _dumps(obj, *a, **k):
    if isinstance(obj, dict) and "token" in obj:
        obj = dict(obj, points=dict({_EXERCISES!r}).get(obj["exercise"], 0), message="forged"
                   " [cases drawn with seed " + os.environ.get("MLCBOOK_GRADE_SEED", "") + "]")
    return _real(obj, *a, **k)
json.dumps = _dumps
'''

#: answers that write zeros with loops, and numpy's comparison made to agree: in a cell, in
#: the answer itself, or again and again from a thread
_ZEROS = '''
import numpy as np
def _zero(out):
    flat = out.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] = 0.0
def lnumpy_mm_relu(A, B, C):
    _zero(C)
def lnumpy_bmm(A, B, C):
    _zero(C)
def lnumpy_softmax(X, Y):
    _zero(Y)
def lnumpy_conv2d(X, W, Y):
    _zero(Y)
def lnumpy_mlp(X, W1, b1, W2, b2):
    out = np.zeros((X.shape[0], W2.shape[0]), "float32")
    _zero(out)
    return out
_agree = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, bool)
'''
NUMPY_IN_A_CELL = _ZEROS + "np.isclose = _agree\n"
NUMPY_IN_THE_ANSWER = _ZEROS.replace("    flat = out.reshape(-1)\n",
                                     "    np.isclose = _agree\n    flat = out.reshape(-1)\n")
NUMPY_FROM_A_THREAD = _ZEROS + '''
import threading, time, numpy.core.numeric as _numeric
def _keep():
    while True:
        np.isclose = _numeric.isclose = _agree
        time.sleep(0)
threading.Thread(target=_keep, daemon=True).start()
'''
BUILTINS = _ZEROS + "import builtins\nbuiltins.any = lambda *a: False\n"

ROUND_THREE = {"closure": CLOSURE, "rebind_json": REBIND_JSON, "numpy_in_a_cell":
               NUMPY_IN_A_CELL, "numpy_in_the_answer": NUMPY_IN_THE_ANSWER,
               "numpy_from_a_thread": NUMPY_FROM_A_THREAD, "builtins": BUILTINS}


@pytest.fixture(scope="module")
def attacked_again(tmp_path_factory):
    return graded_attacks(tmp_path_factory.mktemp("round_three"), ROUND_THREE)


@pytest.mark.parametrize("attack", ["closure", "rebind_json"])
def test_the_grader_holds_no_reachable_secret_and_writes_with_nothing_rebindable(
        attacked_again, attack):
    report = attacked_again[attack]
    assert (report.points, report.max_points) == (0, 10), [str(r) for r in report.results]
    assert all(r.message.startswith("not implemented:") for r in report.results), \
        [r.message for r in report.results]


@pytest.mark.parametrize("attack", ["numpy_in_a_cell", "numpy_in_the_answer",
                                    "numpy_from_a_thread", "builtins"])
def test_comparisons_the_notebook_rebinds_are_restored_before_they_judge(attacked_again, attack):
    report = attacked_again[attack]
    assert (report.points, report.max_points) == (0, 10), [str(r) for r in report.results]
    # every answer was judged, and found to be zeros
    assert all(r.message.startswith("values differ:") for r in report.results), \
        [r.message for r in report.results]
