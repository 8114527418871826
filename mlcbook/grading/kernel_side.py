"""The half of ``mlcbook grade`` that runs inside the notebook's kernel.

``mlcbook grade`` never counts the check results a notebook displays: a cell can display
anything. The kernel runs this file (checked against the digest the grader took) *before*
the notebook's first cell, outside the history: it reads the run's secrets (the one-time
token, the verdicts' folder, the exercises, the graders' digests) from a file the grader
wrote, deletes the file and its name from the environment, imports numpy and what the
graders import, takes a snapshot of what the notebook could rebind (:class:`_Guard`), and
hands the secrets to a grading thread as the arguments of functions rebuilt on a private
copy of this file's globals and of the builtins: no object the notebook can reach by name or
attribute (this file's globals, the grader class and its closures, ``threading``) holds a
secret or anything that thread looks up. After the notebook's cells, the grader appends one
cell per exercise that holds no secret and names nothing the notebook can rebind::

    [c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_MLCBookGrader'
     and c.__module__ == 'mlcbook_grader'][0].grade(0)

It finds the class through ``object``'s subclasses (the first one so named was made before
any notebook code ran) and asks the grading thread to check exercise 0, which

1. restores what the notebook rebound: the builtins, ``sys.modules``, the functions and
   classes of every module loaded before it ran (numpy's, mlcbook's, the standard
   library's) and their classes' methods, import hooks, trace and profile functions;
2. imports the graders afresh from the package's files, each verified against its digest,
   in place of whatever the notebook left in ``sys.modules`` (so replacing entries of the
   registry, or editing a checker's file while the notebook runs, changes nothing);
3. refuses an answer that no cell of the graded notebook defined (one defined by running
   another notebook, such as the solutions, or by ``exec`` of text from elsewhere);
4. checks the answer, restoring all of step 1 (and the fresh graders) after each call of
   it, with threads switching rarely, and writes the verdict, with the run's one-time
   token, into the verdicts' folder; the grader accepts no verdict without the token.

This file imports nothing from mlcbook at module level: it is run outside the package.
Everything it uses was bound when it ran, before the notebook's code.
"""

from __future__ import annotations

import _queue
import _thread
import builtins
import ctypes
import hashlib
import importlib
import importlib.abc
import importlib.util
import json
import linecache
import os
import sys
import types
from pathlib import Path

PACKAGE = "mlcbook.grading"
#: the environment variable that names the secrets' file (deleted once read)
SECRET_ENV = "MLCBOOK_GRADER_SECRET"
#: builtins as they were when this file ran, before any notebook code could rebind them
_callable, _isinstance, _KeyboardInterrupt = builtins.callable, builtins.isinstance, \
    builtins.KeyboardInterrupt
_HOOKS: list = []


class _VerifiedSources(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the grading modules from source bytes already checked against their digests,
    and refuses any other module under the grading package."""

    def __init__(self, sources: dict[str, tuple[Path, bytes]]):
        self.sources = sources

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources:
            if name.startswith(PACKAGE + "."):
                raise ImportError(f"{name} is not one of the grader's verified modules")
            return None
        file, _ = self.sources[name]
        return importlib.util.spec_from_file_location(
            name, file, loader=self,
            submodule_search_locations=[str(file.parent)] if name == PACKAGE else None)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        file, source = self.sources[module.__name__]
        exec(compile(source, str(file), "exec", dont_inherit=True), module.__dict__)


def fresh_grading(package_dir: str, digests: dict[str, str]) -> types.ModuleType:
    """Import ``mlcbook.grading`` anew from ``package_dir``, every file verified by sha256."""
    sources = {}
    for filename, digest in digests.items():
        file = Path(package_dir) / filename
        source = file.read_bytes()
        if hashlib.sha256(source).hexdigest() != digest:
            raise RuntimeError(f"the grader's file {file} changed while the notebook ran")
        name = PACKAGE if filename == "__init__.py" else f"{PACKAGE}.{filename[:-3]}"
        sources[name] = (file, source)
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    finder = _VerifiedSources(sources)
    sys.meta_path.insert(0, finder)
    try:
        return importlib.import_module(PACKAGE)
    finally:
        sys.meta_path.remove(finder)


def _normalized(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def defined_elsewhere(answer: object, name: str, cells: list[str]) -> str | None:
    """Why ``answer`` does not count as written in the graded notebook, or None if it does.

    A function counts if the cell its code was compiled from is one of ``cells``; values
    that are not callable are left to the checker (which says what it expected).
    """
    if not _callable(answer):
        return None
    if not _isinstance(answer, types.FunctionType):
        return (f"{name} is a {type(answer).__name__}, not a function defined with def; "
                f"write {name} with def in its exercise cell")
    lines = linecache.getlines(answer.__code__.co_filename)
    if lines:
        source = _normalized("".join(lines))
        shell = _ipython()
        for cell in cells:
            if source == _normalized(cell) or (
                    shell is not None and source == _normalized(shell.transform_cell(cell))):
                return None
    return (f"{name} was not defined by a cell of this notebook (its code comes from "
            f"{answer.__code__.co_filename}): only answers written in the notebook being "
            f"graded count; write {name} in its exercise cell")


def _ipython():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def arm() -> None:
    """Read the secrets' file named by ``$MLCBOOK_GRADER_SECRET``, delete it and the variable,
    and make the class ``_MLCBookGrader`` whose ``grade(index)`` checks exercise ``index``."""
    path = os.environ.pop(SECRET_ENV, None)
    if not path:
        return
    secret = json.loads(Path(path).read_text(encoding="utf-8"))
    os.unlink(path)
    exercises, run = secret.pop("exercises"), dict(secret)
    private = _private_globals(globals())
    guard = private["_Guard"](private["_graders_dependencies"](run["digests"]))
    requests = _queue.SimpleQueue()
    # the secrets go to a thread of their own, as arguments of a function rebuilt on private
    # globals: no object the notebook can reach (the class below, this file's globals, a
    # threading.Thread) holds them or anything the thread looks up
    ident = _thread.start_new_thread(private["_serve"], (requests, exercises, run, guard))
    wait = private["_wait"]

    class _MLCBookGrader:
        @staticmethod
        def grade(index: int) -> None:
            wait(requests, ident, index)

    # object.__subclasses__() holds classes weakly: keep this one alive from a root, or it
    # is collected once the start-up line is done
    holder = types.ModuleType("mlcbook_grader")
    holder.grader = _MLCBookGrader
    sys.modules.setdefault("mlcbook_grader", holder)
    _HOOKS.append(_MLCBookGrader)


def _private_globals(public: dict) -> dict:
    """A copy of this file's globals, with the builtins as they are now, in which every
    function and class of this file is rebuilt: what the grading thread calls looks nothing
    up where the notebook could rebind it (this file's globals are reachable from the grader
    class, ``builtins`` from anywhere)."""
    private = {**vars(builtins), **public}

    def rebuild(f):
        g = types.FunctionType(f.__code__, private, f.__name__, f.__defaults__, f.__closure__)
        g.__kwdefaults__ = f.__kwdefaults__
        return g

    def ours(v):
        return isinstance(v, types.FunctionType) and v.__globals__ is public
    for name, value in public.items():
        if ours(value):
            private[name] = rebuild(value)
        elif isinstance(value, type) and value.__module__ == public["__name__"]:
            body = {}
            for k, v in vars(value).items():
                if isinstance(v, staticmethod) and ours(v.__func__):
                    v = staticmethod(rebuild(v.__func__))
                body[k] = rebuild(v) if ours(v) else v
            body.pop("__dict__", None)
            body.pop("__weakref__", None)
            private[name] = type(value)(value.__name__, value.__bases__, body)
    return private


def _graders_dependencies(digests: dict[str, str]) -> list:
    """numpy, and everything the graders import (mlcbook's layers), imported now, before the
    notebook runs, so that the guard's snapshot holds them as they are."""
    import numpy  # noqa: F401
    for filename in digests:
        if filename.endswith(".py") and filename not in ("__init__.py", "kernel_side.py"):
            try:
                importlib.import_module(f"{PACKAGE}.{filename[:-3]}")
            except Exception:  # noqa: BLE001 - an optional extra missing: its checks say so
                pass
    return list(sys.modules.items())


class _Guard:
    """What the notebook could rebind to change a check, as it was before the notebook ran:
    the builtins, ``sys.modules``, the functions, classes and submodules of every module
    loaded then, and the methods of their classes. :meth:`restore` puts back what the
    notebook rebound (data such as caches is left alone) and removes names it added to a
    module that would shadow a builtin or to a class that would override a method. The
    graders' own modules, imported afresh for each check, are added by :meth:`add_fresh`."""

    def __init__(self, modules: list):
        sys_space = sys.__dict__
        self.sys_space, self.sys_modules = sys_space, sys_space["modules"]
        self.meta_path, self.path_hooks = sys_space["meta_path"], sys_space["path_hooks"]
        self.hooks = list(self.meta_path), list(self.path_hooks)
        self.builtin_names = set(vars(builtins))
        self.interval = sys.getswitchinterval()
        self.loaded = self._take([(n, m) for n, m in modules if not _is_grader(n)])
        self.fresh = self._take([])

    @staticmethod
    def _take(modules: list) -> tuple:
        saved, classes = [], []
        for name, module in modules:
            space = getattr(module, "__dict__", None)
            if not isinstance(space, dict):
                continue
            saved.append((name, module, space, {k: v for k, v in space.items() if _kept(v)},
                          set(space)))
            for value in list(space.values()):
                if isinstance(value, type) and getattr(value, "__module__", None) == name \
                        and not value.__flags__ & _IMMUTABLE_TYPE:
                    classes.append((value, {k: v for k, v in vars(value).items() if _kept(v)}))
        return saved, classes

    def add_fresh(self) -> None:
        """Take the graders' modules as they are now, just imported afresh."""
        self.fresh = self._take([(n, m) for n, m in list(self.sys_modules.items())
                                 if n == PACKAGE or n.startswith(PACKAGE + ".")])

    def restore(self) -> None:
        space = self.sys_space
        space["modules"], space["meta_path"], space["path_hooks"] = \
            self.sys_modules, self.meta_path, self.path_hooks
        self.meta_path[:], self.path_hooks[:] = self.hooks
        for saved, classes in (self.loaded, self.fresh):
            self._restore(saved, classes)
        sys.settrace(None)     # a trace or profile function would run the notebook's code
        sys.setprofile(None)   # between the check's steps

    def _restore(self, saved: list, classes: list) -> None:
        for name, module, space, kept, names in saved:
            if self.sys_modules.get(name) is not module:
                self.sys_modules[name] = module
            for key, value in kept.items():
                if space.get(key, _MISSING) is not value:
                    space[key] = value
            for key in [k for k in space if k not in names and k in self.builtin_names
                        and not k.startswith("__")]:
                del space[key]
        for cls, kept in classes:
            now = vars(cls)
            for key, value in kept.items():
                if now.get(key, _MISSING) is not value:
                    type.__setattr__(cls, key, value)
            for key in [k for k, v in now.items() if k not in kept
                        and isinstance(v, types.FunctionType)]:
                type.__delattr__(cls, key)

    def guarded(self, answer):
        """``answer`` wrapped so that the guard restores everything after each call (the
        answer may rebind a comparison the check makes next); ``__wrapped__`` is the
        answer, for checks that read its code."""
        if not isinstance(answer, types.FunctionType):
            return answer

        def call(*args, **kwargs):
            try:
                return answer(*args, **kwargs)
            finally:
                self.restore()
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(call, attr, getattr(answer, attr))
        call.__wrapped__ = answer
        return call


def _is_grader(name: str) -> bool:
    """Modules the guard leaves to :meth:`_Guard.add_fresh`, or never restores: the graders,
    and ``__main__``, the notebook's own namespace."""
    return name == PACKAGE or name.startswith(PACKAGE + ".") or \
        name in ("mlcbook_grader", "__main__")


_MISSING = object()
#: Py_TPFLAGS_IMMUTABLETYPE: a type whose attributes cannot be set (numpy's, the builtins')
_IMMUTABLE_TYPE = 1 << 8


def _kept(value) -> bool:
    """Whether the guard keeps ``value`` of a namespace: code and modules, not data."""
    return callable(value) or isinstance(value, (types.ModuleType, staticmethod, classmethod,
                                                 property))


def _wait(requests, ident: int, index) -> None:
    """Ask the grading thread to check exercise ``index`` and wait for it; on the grader's
    timeout (a KeyboardInterrupt here) stop the check and wait for its verdict."""
    if type(index) is not int:
        return
    done = _queue.SimpleQueue()
    requests.put((index, done))
    try:
        while True:
            try:
                return done.get(timeout=0.05)
            except _queue.Empty:
                pass
    except KeyboardInterrupt:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident),
                                                   ctypes.py_object(KeyboardInterrupt))
        try:
            done.get(timeout=10)
        except _queue.Empty:
            pass


def _serve(requests, exercises, run, guard) -> None:
    """The grading thread: check each requested exercise, write its verdict."""
    verdicts = Path(run.pop("verdicts"))
    while True:
        # the thread serves until the kernel ends: whatever a check raises, or a stop that
        # arrives late, ends one request, never the loop
        try:
            index, done = requests.get()
            try:
                exercise_id, answer_name = exercises[index]
                grade_answer(exercise_id=exercise_id, answer_name=answer_name, guard=guard,
                             out_path=str(verdicts / f"{index}.json"), **run)
            finally:
                done.put(True)
        except BaseException:  # noqa: BLE001
            pass


def grade_answer(*, exercise_id: str, answer_name: str, package_dir: str,
                 digests: dict[str, str], cells: list[str], token: str, out_path: str,
                 timeout: float, guard: _Guard | None = None) -> None:
    """Check the notebook's ``answer_name`` for ``exercise_id``; write the verdict as JSON.
    With a ``guard``, what the notebook rebound is restored before the check, after each call
    of the answer and before the verdict is written, and threads switch rarely meanwhile."""
    verdict = {"token": token, "exercise": exercise_id}
    try:
        if guard is not None:
            guard.restore()
            sys.setswitchinterval(_CHECK_SWITCH_SECONDS)
        grading = fresh_grading(package_dir, digests)
        if guard is not None:
            guard.add_fresh()
        namespace = _ipython().user_ns
        if answer_name not in namespace:
            verdict.update(points=0, message=f"the notebook defines no {answer_name}; keep the "
                           f"exercise's `def {answer_name}(...)` cell and its name")
        else:
            answer = namespace[answer_name]
            problem = defined_elsewhere(answer, answer_name, cells)
            if problem is not None:
                verdict.update(points=0, message=problem)
            else:
                result = grading.check(exercise_id,
                                       guard.guarded(answer) if guard is not None else answer)
                verdict.update(points=result.points, message=result.message)
    except _KeyboardInterrupt:
        verdict.update(points=0, message=f"the check of {answer_name} ran longer than "
                       f"{timeout:g} s and was stopped; look for a loop that never ends")
    finally:
        if guard is not None:
            guard.restore()
            sys.setswitchinterval(guard.interval)
    Path(out_path).parent.mkdir(exist_ok=True)
    Path(out_path).write_text(json.dumps(verdict), encoding="utf-8")


#: how often threads may take turns while a check runs (seconds): the notebook's threads run
#: only when the check waits or releases the interpreter, not at any instruction
_CHECK_SWITCH_SECONDS = 0.5


if __name__ == "mlcbook_grader":   # run by the kernel's start-up line, not imported
    arm()
