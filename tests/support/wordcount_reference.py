"""An independent, plain-Python WordCount split, written from Java's documentation rather than from Spark:
`line.toLowerCase().split("\\W+")` where

- Java's `\\W` is `[^a-zA-Z_0-9]` (ASCII only, unlike Python's `re` on str);
- `String.split(regex)` (limit 0) returns `{input}` when nothing matches (so "" gives [""]), otherwise the
  pieces between matches with trailing empty strings removed (a leading separator gives a leading "")."""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable

_JAVA_NON_WORD = re.compile(r"[^a-zA-Z0-9_]+")

TRICKY_LINES = [
    "",
    " ",
    "!!!",
    "x",
    "Hello, World!",
    "   leading spaces",
    "trailing punctuation...",
    "!leading bang",
    "a--b",
    "multiple   separators\t\tand\ttabs",
    "digits 123 and 4.56 and 7,890",
    "under_score snake_case __dunder__",
    "_",
    "__ _ __",
    "MiXeD CaSe WORDS",
    "new\nline\r\nwindows",
    "it's o'clock",
    "e-mail: someone@example.com",
    "'quoted' \"double\"",
    "café crème brûlée",
    "Straße ẞ",
    "ΟΔΟΣ οδος Σ",
    "Привет мир",
    "İstanbul DİYARBAKIR",
    "KELVIN \u212a and \u212aelvin",
    "emoji \U0001f389 party\U0001f389",
    "nbsp\u00a0between",
    "zero\u200bwidth",
    "combining e\u0301 accent",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
    'Licensed under the Apache License, Version 2.0 (the "License");',
]


def java_split(line: str) -> list[str]:
    lowered = line.lower()
    if _JAVA_NON_WORD.search(lowered) is None:
        return [lowered]
    parts = _JAVA_NON_WORD.split(lowered)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def java_wordcount(lines: Iterable[str]) -> dict[str, int]:
    counts: collections.Counter[str] = collections.Counter()
    for line in lines:
        counts.update(java_split(line))
    return dict(counts)
