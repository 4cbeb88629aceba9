"""An experiment's input lines and WordCount's expected counts (pure)."""

from __future__ import annotations

import struct
from pathlib import Path

from streamlet.experiments.inputs import (
    count_differences,
    decode_count,
    expected_counts,
    generated_word,
    input_lines,
    java_split_words,
)
from streamlet.experiments.scenario import InputSpec


def test_generator_is_deterministic_and_bounded_by_the_vocabulary() -> None:
    spec = InputSpec(partitions=6, lines=50, rate=10, generator="words", vocabulary=30, words_per_line=4, seed=7)
    lines = input_lines(spec)
    assert lines == input_lines(spec) and len(lines) == 50
    words = {w for line in lines for w in line.split()}
    assert words <= {generated_word(i) for i in range(30)}
    assert [generated_word(i) for i in (0, 25, 26, 27)] == ["a", "z", "aa", "ab"]


def test_corpus_cycles_to_the_requested_number_of_lines(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("three\n")
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    spec = InputSpec(partitions=1, lines=5, rate=1, corpus=tmp_path)
    assert input_lines(spec) == ["one", "two", "three", "one", "two"]


def test_java_split_and_expected_counts() -> None:
    assert java_split_words("Hello, World!") == ["hello", "world"]
    assert java_split_words(" a") == ["", "a"]
    assert java_split_words("") == [""]
    assert expected_counts(["a b", "A"]) == {"a": 2, "b": 1}


def test_output_values_and_differences() -> None:
    assert decode_count(struct.pack(">q", 42)) == 42
    assert decode_count(b"x") is None and decode_count(None) is None
    assert count_differences({"a": 1, "b": 2}, {"b": 3, "c": 1}) == [
        "a: expected 1, missing",
        "b: expected 2, got 3",
        "c: unexpected, got 1",
    ]
    assert count_differences({"a": 1}, {"a": 1}) == []
