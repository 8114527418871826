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


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    """Each attack appended to the student notebook, graded with --isolate."""
    tmp = tmp_path_factory.mktemp("attacks")
    paths = []
    for name, source in ATTACKS.items():
        nb = nbformat.read(book.chapter(1).exercises, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(source))
        path = tmp / f"01_{name}.ipynb"
        nbformat.write(nb, path)
        paths.append(path)
    return dict(zip(ATTACKS, grade(paths, timeout=120, isolate=True)))


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
