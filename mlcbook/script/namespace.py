"""``T``, the namespace script programs are written in (``from mlcbook.script import T``):
every name of the dialect (:mod:`.dialect`) and the two decorators that parse what they
decorate (:func:`.parser.prim_func`, :func:`.parser.ir_module`).

The dialect's names and the parser live apart so that the parser can read the dialect
without the dialect importing the parser.
"""

from .dialect import *  # noqa: F401,F403 - the namespace is the dialect's names
from .dialect import DIALECT, __getattr__  # noqa: F401 - "did you mean" for unknown names
from .parser import ir_module, prim_func  # noqa: F401
