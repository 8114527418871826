"""A run of a whole plan as one native call: a function, generated for the plan, that calls
its kernels one after the other with their arguments read from an array.

An executable calls its kernels through ctypes, and each such call costs about half a
microsecond (on Zen 5): over the 7 kernels of a small quantized CNN that is 3 of its 23 us.
The runner makes it one ctypes call a run, whatever the number of kernels::

    >>> run = plan_runner([(kernel.native_address(), 3, False), ...])
    >>> args = (ctypes.c_void_p * 3)(a, b, launcher)      # each call's arguments, in order
    >>> run(args)                                         # 0, or 1 + the call that failed

Each call ``k`` takes ``n_k`` pointer arguments, the next ``n_k`` entries of the array; a
kernel that allocates returns a status, and the run stops at the first that fails.
"""

from __future__ import annotations

import ctypes
from typing import Callable, Sequence

from ..codegen.target import Target


def runner_ir(calls: Sequence[tuple[int, int, bool]]) -> str:
    """The LLVM IR of ``i32 @mlcb_run_plan(ptr %args)`` for ``calls``: ``(function address,
    number of arguments, whether it returns an i32 status)`` each."""
    lines = ["define i32 @mlcb_run_plan(ptr noalias %args) {", "entry:"]
    at = 0
    for k, (address, n, status) in enumerate(calls):
        values = []
        for j in range(n):
            lines += [f"  %p{k}_{j} = getelementptr inbounds ptr, ptr %args, i64 {at + j}",
                      f"  %a{k}_{j} = load ptr, ptr %p{k}_{j}, align 8"]
            values.append(f"ptr %a{k}_{j}")
        at += n
        fnty = f"{'i32' if status else 'void'} ({', '.join(['ptr'] * n)})"
        callee = f"inttoptr (i64 {address} to ptr)"
        if not status:
            lines.append(f"  call {fnty} {callee}({', '.join(values)})")
            continue
        lines += [f"  %r{k} = call {fnty} {callee}({', '.join(values)})",
                  f"  %f{k} = icmp ne i32 %r{k}, 0",
                  f"  br i1 %f{k}, label %fail{k}, label %next{k}",
                  f"fail{k}:", f"  ret i32 {k + 1}", f"next{k}:"]
    lines += ["  ret i32 0", "}"]
    return "\n".join(lines) + "\n"


def plan_runner(calls: Sequence[tuple[int, int, bool]],
                target: Target | None = None) -> Callable:
    """The compiled runner of ``calls`` (see :func:`runner_ir`), as a ctypes function of the
    arguments' array: ``run(args) -> 0``, or ``1 + k`` when call ``k`` reported a failure."""
    from ..codegen.jit import compile_ir
    lib = compile_ir(runner_ir(calls), [], target or Target())
    run = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)(lib.address("mlcb_run_plan"))
    run.module = lib          # the code lives as long as the function that calls it
    return run


__all__ = ["plan_runner", "runner_ir"]
