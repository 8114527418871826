"""Chapter 11's exercises: plausible wrong answers earn zero, each with a message that says
what is wrong.

(test_contract.py checks every chapter's solutions, stubs and student notebooks.)"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from mlcbook.codegen.target import X86_LEVELS
from mlcbook.grading.ch11 import best_level

from .conftest import solution, zero


pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")


# --- 11.c_caller ---------------------------------------------------------------------------------
def _text_output(name):
    up = name.upper()
    return f"""#include <stdio.h>
#include "{name}.h"
static float x[{up}_INPUT0_SIZE], y[{up}_OUTPUT0_SIZE];
int main(void) {{
  fread(x, sizeof x, 1, stdin);
  const void *in[] = {{x}}; void *out[] = {{y}};
  int rc = {name}_run(in, out);
  for (int i = 0; i < {up}_OUTPUT0_SIZE; i++) printf("%f\\n", y[i]);
  return rc;
}}
"""


def test_printing_the_outputs_as_text_earns_zero():
    assert "raw bytes" in zero("11.c_caller", _text_output)


def test_a_caller_hard_wired_to_one_model_earns_zero():
    # the chapter's program, for the model called "tiny": it does not build against others
    fixed = solution(11)["c_caller"]("tiny")
    assert "cc could not build" in zero("11.c_caller", lambda name: fixed)


def test_a_caller_with_a_fixed_input_size_earns_zero():
    def fixed_size(name):
        return solution(11)["c_caller"](name).replace(f"{name.upper()}_INPUT0_SIZE", "8")
    zero("11.c_caller", fixed_size)


def test_a_caller_that_ignores_the_return_code_earns_zero():
    def ignores(name):
        return solution(11)["c_caller"](name).replace("if (rc !=", "if (0 && rc !=")
    assert "exits with status 0" in zero("11.c_caller", ignores)


def test_a_caller_that_exits_without_the_message_earns_zero():
    def silent(name):
        return solution(11)["c_caller"](name).replace('fprintf(stderr, "%s\\n", ', "(")
    assert "it should print" in zero("11.c_caller", silent)


# --- 11.fleet_target -----------------------------------------------------------------------------
def test_the_host_target_earns_zero():
    # this CPU's features: more than some machine of the fleets has (an AVX-512 host, or a
    # real CPU's extras beyond its level), or fewer than all of one fleet have (a CPU that
    # MLCBOOK_HOST_CPU names, whose features are its level's)
    message = zero("11.fleet_target", lambda fleet: "llvm")
    assert "illegal instruction" in message or "leaves out" in message


def test_the_newest_level_of_any_machine_earns_zero():
    def newest_anywhere(fleet):
        union = set().union(*fleet)
        return f"llvm -mcpu={best_level([union])}"
    assert "lacks" in zero("11.fleet_target", newest_anywhere)


def test_always_the_oldest_level_earns_zero():
    assert "fastest code they all run" in zero("11.fleet_target",
                                                lambda fleet: "llvm -mcpu=x86-64")


def test_judging_machines_by_avx2_alone_earns_zero():
    def by_avx2(fleet):  # misses the CPU with AVX2 but no FMA
        return "llvm -mcpu=x86-64-v3" if all("avx2" in m for m in fleet) else "llvm -mcpu=x86-64-v2"
    zero("11.fleet_target", by_avx2)


def test_a_named_cpu_without_features_earns_zero():
    assert "not explicit" in zero("11.fleet_target", lambda fleet: "llvm -mcpu=haswell")


def test_best_level_reads_features_not_names():
    v3 = {f[1:] for f in X86_LEVELS["x86-64-v3"]}
    assert best_level([v3, v3 - {"fma"}]) == "x86-64-v2"


# --- 11.verify_export ----------------------------------------------------------------------------
def _recorded(folder):
    lines = (Path(folder) / "SHA256SUMS").read_text().splitlines()
    return [line.split(maxsplit=1) for line in lines]


def test_comparing_sizes_only_earns_zero():
    def sizes(folder):
        bad = []
        for _, name in _recorded(folder):
            path = Path(folder) / name
            if not path.is_file() or path.stat().st_size == 0:
                bad.append(name)
        return bad
    zero("11.verify_export", sizes)


def test_checking_only_the_shared_library_earns_zero():
    def shared_only(folder):
        return [name for digest, name in _recorded(folder) if name.endswith(".so")
                and hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest() != digest]
    zero("11.verify_export", shared_only)


def test_a_missing_file_must_count_as_damaged():
    def skip_missing(folder):
        return [name for digest, name in _recorded(folder) if (Path(folder) / name).is_file()
                and hashlib.sha256((Path(folder) / name).read_bytes()).hexdigest() != digest]
    zero("11.verify_export", skip_missing)
