"""Java's `line.toLowerCase().split("\\W+")` for the Python peers (kept apart from streamlet's copy)."""

import re

_NON_WORD = re.compile(r"\W+")


def split_words(line: str) -> list[str]:
    words = _NON_WORD.split(line.lower())
    while words and words[-1] == "":
        words.pop()
    return words
