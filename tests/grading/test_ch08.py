"""Chapter 8's exercises: plausible wrong answers earn zero.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest

import mlcbook as mb
import mlcbook.grading as grading
from mlcbook.grading.ch08 import dot_impl
from mlcbook.schedule import Schedule

from .conftest import solution, zero


# --- plausible wrong answers ----------------------------------------------------------------------
_DESC = '''
@T.prim_func
def dot_desc(A: T.Buffer((4,), "uint8"), B: T.Buffer((8, 4), "int8"),
             C: T.Buffer((8,), "int32")):
    for i, k in T.grid(8, {kt}):
        with T.block("update"):
            vi, vk = T.axis.remap("SR", [i, k])
            C[vi] = {acc}T.Cast("int32", A[vk]) * T.Cast("int32", B[vi, vk])
'''
_wrong_names = itertools.count()


def _register(text):
    def register_dot(name):
        return mb.tir.TensorIntrin.register(name, mb.script.parse(text), dot_impl())
    return register_dot


def _fixed_name(name):
    return mb.tir.TensorIntrin.register(f"my.dot_{next(_wrong_names)}",
                                        mb.script.parse(_DESC.format(kt=4, acc="C[vi] + ")),
                                        dot_impl())


def _wrong_loop(func):  # tensorized one loop too far out: the tile holds all of k
    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, [None, 8])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i, j0, k0, j1, k1)
    sch.tensorize(k0, "x86.avx2.dot_u8i8_8x4")
    return sch


def _tiled_only(func):  # the tile is right, but tensorize was forgotten
    sch = Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    j0, j1 = sch.split(j, [None, 8])
    k0, k1 = sch.split(k, [None, 4])
    sch.reorder(i, j0, k0, j1, k1)
    return sch


def _quantizer(truncate=False, x_levels=255, bound=None):
    def quantize_layer(x, w):
        to_int = (lambda v: np.trunc(v)) if truncate else np.rint
        x_scale = float(x.max()) / x_levels
        xq = np.clip(to_int(x / x_scale), 0, 255).astype(np.uint8)
        w_max = np.abs(w).max(axis=1).astype(np.float64)
        w_scale = w_max / 127
        wq = np.clip(to_int(w / w_scale[:, None]), -127, 127).astype(np.int8)
        k = x.shape[1]
        full = k * (float(x.max()) * w_scale / 2 + w_max * x_scale / 2 + x_scale * w_scale / 4)
        b = {None: full, "per product": full / k, "weights only": k * float(x.max()) * w_scale / 2,
             "loose": 10 * full}[bound]
        return xq, x_scale, wq, w_scale, b
    return quantize_layer


@pytest.mark.parametrize("exercise_id, wrong, message", [
    ("08.register_dot", _register(_DESC.format(kt=4, acc="")), "but the instruction computes"),
    ("08.register_dot", _register(_DESC.format(kt=2, acc="C[vi] + ")),
     "but the instruction computes"),
    ("08.register_dot", _fixed_name, "registered nothing under that name"),
    ("08.tensorize_matmul", _wrong_loop, "iteration domain does not match"),
    ("08.tensorize_matmul", _tiled_only, "no block is tensorized"),
    ("08.quantize_layer", _quantizer(truncate=True), "off by more than half a step"),
    ("08.quantize_layer", _quantizer(x_levels=127), "x_scale is"),
    ("08.quantize_layer", _quantizer(bound="per product"), "above your bound"),
    ("08.quantize_layer", _quantizer(bound="weights only"), "above your bound"),
    ("08.quantize_layer", _quantizer(bound="loose"), "more than twice the worst error"),
])
def test_plausible_wrong_answers_earn_zero(exercise_id, wrong, message):
    assert message in zero(exercise_id, wrong)



# --- issue 31: holes a second student pass found ------------------------------------------------
def _returns_the_func(func):
    return _solved_schedule(func).func


def _solved_schedule(func):
    sch = _tiled_only(func)
    sch.tensorize(sch.get_loops(sch.get_block("C"))[3], "x86.avx2.dot_u8i8_8x4")
    return sch


def _bound_without_dx_dw(x, w):
    xq, x_scale, wq, w_scale, bound = _quantizer()(x, w)
    return xq, x_scale, wq, w_scale, bound - x.shape[1] * x_scale * w_scale / 4


@pytest.mark.parametrize("exercise_id, wrong, message", [
    ("08.tensorize_matmul", _returns_the_func, "should return the Schedule, got PrimFunc"),
    ("08.quantize_layer", _bound_without_dx_dw, "a term is missing"),
])
def test_wrong_answers_of_a_second_pass_earn_zero(exercise_id, wrong, message):
    assert message in zero(exercise_id, wrong)


def test_the_solved_schedule_helper_is_right():
    assert grading.check("08.tensorize_matmul", _solved_schedule).passed


def _library_desc(copy_of):
    """register_dot that hands in the built-in AVX2 intrinsic's desc, taken as ``copy_of``
    makes it (the object, a deep copy, its printed script parsed again)."""
    def register_dot(name):
        theirs = mb.tir.TensorIntrin.get("x86.avx2.dot_u8i8_8x4").desc
        return mb.tir.TensorIntrin.register(name, copy_of(theirs), dot_impl())
    return register_dot


@pytest.mark.parametrize("copy_of", [lambda d: d, copy.deepcopy,
                                     lambda d: mb.script.parse(d.script())])
def test_register_dot_with_the_library_desc_earns_zero(copy_of):
    assert "your desc is the library's own" in zero("08.register_dot", _library_desc(copy_of))


def test_quantize_layer_with_scales_and_bound_as_lists_earns_full_marks():
    def as_lists(x, w):
        xq, x_scale, wq, w_scale, bound = solution(8)["quantize_layer"](x, w)
        return xq, x_scale, wq, list(w_scale), list(bound)
    result = grading.check("08.quantize_layer", as_lists)
    assert result.passed, str(result)
