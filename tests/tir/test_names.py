"""Fresh names: the one helper te and the schedule primitives use for new buffers and loops."""

from __future__ import annotations

from mlcbook.tir.names import fresh_name, numbered_names


def test_an_unused_name_is_kept_and_taken():
    taken = {"B"}
    assert fresh_name("A", taken) == "A"
    assert taken == {"A", "B"}


def test_a_used_name_gets_the_first_free_suffix():
    taken = {"A", "A_1", "A_3"}
    assert fresh_name("A", taken) == "A_2"
    assert fresh_name("A", taken) == "A_4"
    assert {"A_2", "A_4"} <= taken


def test_repeated_calls_never_repeat_a_name():
    taken: set[str] = set()
    names = [fresh_name("i", taken) for _ in range(5)]
    assert names == ["i", "i_1", "i_2", "i_3", "i_4"]


def test_numbered_names_skip_taken_ones_and_take_theirs():
    taken = {"ax1", "i"}
    assert numbered_names("ax", 3, taken) == ["ax0", "ax2", "ax3"]
    assert numbered_names("ax", 1, taken) == ["ax4"]
