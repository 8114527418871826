"""``mlcbook run``: a compiled model on inputs from .npy files (or random ones), its outputs by
their ONNX names, timed over repeats, with a per-kernel profile.

    $ mlcbook run model.mlcb -i x.npy -o y.npy       # probs: shape (1, 10), float32 ...
    $ mlcbook run model.mlcb --repeat 50 --profile   # random inputs; time and kernel table
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from .errors import ArgumentError


def add_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("artifact", metavar="MODEL.mlcb")
    run.add_argument("-i", "--input", action="append", default=[], metavar="[NAME=]X.npy",
                     help="an input array; by position, or NAME=X.npy by input name (repeat "
                     "for several inputs); inputs not given are random (see --seed)")
    run.add_argument("-o", "--output", metavar="Y.npy",
                     help="save the output (several outputs: an .npz archive keyed by their "
                     "names)")
    run.add_argument("--sha256", metavar="HEX",
                     help="refuse to run unless the file's sha256 is HEX (as printed by "
                     "`mlcbook compile`): an artifact holds native code, run only ones you trust")
    run.add_argument("--repeat", type=int, default=1, metavar="N",
                     help="run N times and print the median and fastest time")
    run.add_argument("--profile", action="store_true",
                     help="also time every kernel call (median of the repeats) and print a "
                     "table of the kernels by their share of the run")
    run.add_argument("--seed", type=int, default=0,
                     help="seed of the random inputs made for inputs not given")


def load_npy(path: str) -> np.ndarray:
    """The array in the .npy file ``path``; an ArgumentError saying what is wrong otherwise."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
        if magic != b"\x93NUMPY" and not magic.startswith(b"PK"):
            raise ValueError("it is not a .npy file")
        value = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise ArgumentError(f"no input file {path!r}") from None
    except (OSError, ValueError) as err:
        raise ArgumentError(f"cannot read {path!r} as a numpy array ({err}); write inputs "
                            "with numpy.save(path, array)") from None
    if not isinstance(value, np.ndarray):
        value.close()
        raise ArgumentError(f"{path!r} is an .npz archive of several arrays; pass one .npy "
                            "file per input, e.g. --input NAME=X.npy")
    return value


def random_input(shape: tuple, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """A random array for an input not given: normal floats, random booleans, and zeros for
    integers (integer inputs are mostly indices, and 0 is valid for every axis).

    >>> random_input((2,), "int64", np.random.default_rng(0))
    array([0, 0])
    """
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return np.zeros(shape, dt)
    return rng.standard_normal(shape).astype(dt)


def _gather_inputs(args, exe) -> dict[str, np.ndarray]:
    names = exe.input_names
    positional, named, files = [], {}, {}
    for spec in args.input:
        name, sep, path = spec.partition("=")
        if sep and name not in names and not Path(spec).exists():
            raise ArgumentError(f"--input {spec!r}: {args.artifact} has no input named "
                                f"{name!r}; its inputs are: {', '.join(names)}")
        if sep and name in names:
            if name in named:
                raise ArgumentError(f"input {name!r} is given twice")
            named[name], files[name] = load_npy(path), path
        else:
            if len(positional) >= len(names):
                raise ArgumentError(f"{args.artifact} takes {len(names)} input(s) "
                                    f"({', '.join(names)}), got {len(args.input)}")
            files[names[len(positional)]] = spec
            positional.append(load_npy(spec))
    given = dict(zip(names, positional))
    for name, value in named.items():
        if name in given:
            raise ArgumentError(f"input {name!r} is given twice (by position and by name)")
        given[name] = value
    # a shape that differs is usually a batch size chosen at compile time: say how to change it
    for info in exe.inputs:
        value = given.get(info.name)
        if value is not None and tuple(value.shape) != info.shape:
            fix = (f"--batch-size {value.shape[0]}" if value.ndim == len(info.shape)
                   and value.shape[1:] == info.shape[1:] else
                   f"--shape {info.name}={','.join(map(str, value.shape))}")
            raise ArgumentError(
                f"input {info.name!r} of {args.artifact} has the shape {info.shape} it was "
                f"compiled for, but {files[info.name]!r} holds {tuple(value.shape)}; shapes are "
                f"fixed at compile time: pass an array of that shape, or compile again with {fix}")
    missing = [t for t in exe.inputs if t.name not in given]
    if missing:
        rng = np.random.default_rng(args.seed)
        for info in missing:
            given[info.name] = random_input(info.shape, info.dtype, rng)
        print(f"random inputs (seed {args.seed}) for "
              + ", ".join(f"{t.name} {t.shape} {t.dtype}" for t in missing))
    return given


def profile_table(steps: list[tuple[str, float]]) -> str:
    """A table of the kernels of a profile (``exe.profile``'s ``[(kernel, seconds)]``, one per
    call): calls, total time and share of the run, biggest first.

    >>> print(profile_table([("conv", 2e-3), ("relu", 1e-3), ("conv", 1e-3)]))  # doctest: +SKIP
    """
    total: dict[str, float] = {}
    calls: dict[str, int] = {}
    for name, seconds in steps:
        total[name] = total.get(name, 0.0) + seconds
        calls[name] = calls.get(name, 0) + 1
    whole = sum(total.values()) or 1.0
    width = max([6] + [len(n) for n in total])
    lines = [f"{'kernel':<{width}}  calls  total ms   share",
             f"{'-' * width}  -----  --------  ------"]
    for name in sorted(total, key=lambda n: -total[n]):
        lines.append(f"{name:<{width}}  {calls[name]:>5}  {total[name] * 1e3:>8.3f}  "
                     f"{total[name] / whole:>6.1%}")
    lines.append(f"{'all':<{width}}  {len(steps):>5}  {whole * 1e3:>8.3f}  100.0%")
    return "\n".join(lines)


def run_command(args: argparse.Namespace) -> int:
    from .graph import load
    if args.repeat < 1:
        raise ArgumentError(f"--repeat must be at least 1, got {args.repeat}")
    exe = load(args.artifact, expected_sha256=args.sha256)
    feeds = _gather_inputs(args, exe)
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        outputs = exe.run(None, feeds)
        times.append(time.perf_counter() - t0)
    if args.repeat == 1:
        print(f"ran {args.artifact} in {times[0] * 1e3:.2f} ms")
    else:
        print(f"ran {args.artifact} {args.repeat} times: median {np.median(times) * 1e3:.3f} ms, "
              f"fastest {min(times) * 1e3:.3f} ms")
    if args.profile:
        print(f"\nkernels (median of {args.repeat} runs):")
        print(profile_table(exe.profile(repeat=args.repeat, **feeds)))
        print()
    for info, y in zip(exe.outputs, outputs):
        print(f"{info.name}: shape {y.shape}, {y.dtype}")
        print(np.array2string(y, threshold=40, edgeitems=3, precision=5))
    if args.output:
        _save(args.output, exe.output_names, outputs)
    return 0


def _save(output: str, names: list[str], outputs: list[np.ndarray]) -> None:
    # numpy adds the suffix when it is missing; say which file was really written
    suffix = ".npy" if len(outputs) == 1 else ".npz"
    path = output if output.endswith(suffix) else output + suffix
    try:
        if len(outputs) == 1:
            np.save(path, outputs[0])
        else:
            np.savez(path, **dict(zip(names, outputs)))
    except OSError as err:
        raise ArgumentError(f"cannot write {output!r}: {err.strerror or err}; check that its "
                            "folder exists and is writable") from None
    kind = "array" if len(outputs) == 1 else f"{len(outputs)} arrays {', '.join(names)}"
    print(f"wrote {path} ({kind})")


__all__ = ["add_arguments", "run_command", "load_npy", "random_input", "profile_table"]
