"""The WordCount example splits exactly like Java's `toLowerCase().split("\\W+")`.

Expected values are Java's documented results, written out by hand."""

from __future__ import annotations

import pytest

from examples.wordcount.dsl import split_words


@pytest.mark.parametrize(
    ("line", "java"),
    [
        ("", [""]),  # no match: the whole (empty) string
        ("Hello", ["hello"]),
        ("Hello World", ["hello", "world"]),
        ("  leading", ["", "leading"]),  # a leading separator leaves one empty string
        ("trailing...  ", ["trailing"]),  # trailing empty strings are removed
        ("   ", []),  # only separators: everything removed
        ("snake_case and 42", ["snake_case", "and", "42"]),  # \w includes _ and digits
        ("café crème", ["caf", "cr", "me"]),  # Java's \W is ASCII-only
        ("a b c d e f g h i j k l m n o p q r s t u v w x y z", list("abcdefghijklmnopqrstuvwxyz")),
    ],
)
def test_split_words_matches_java(line: str, java: list[str]) -> None:
    assert split_words(line) == java


def test_a_null_line_has_no_words() -> None:
    assert split_words(None) == []
