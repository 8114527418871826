"""What runs a plan: an :class:`Executable` holds the plan, the built kernels and the
weights, checks its inputs (:mod:`.signature`) and calls the kernels in order on one arena;
``save``/:func:`load` write and read it as an artifact file (:mod:`.artifact`).

    >>> exe = mb.compile(mod); y = exe(x)
    >>> mb.graph.run.load(exe.save("m.mlcb"))(x)
"""

from .executable import Executable, load

__all__ = ["Executable", "load"]
