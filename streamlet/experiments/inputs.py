"""An experiment's input lines and WordCount's expected output, computed apart from the app under test.

The input is fixed before the run (a corpus cycled to `lines`, or seeded random words), so a run can be
repeated and its output checked exactly. Expected counts follow Java's `toLowerCase().split("\\W+")` as
seed 000's WordCount does, written here independently of the example app's own split, so a bug there is
caught rather than copied.
"""

from __future__ import annotations

import collections
import itertools
import random
import re
import struct
from collections.abc import Iterable
from pathlib import Path

from streamlet.experiments.scenario import InputSpec

_ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def corpus_lines(path: Path) -> list[str]:
    """Every line of a text file, or of every file of a directory (sorted by name)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return [line for f in files for line in f.read_text(encoding="utf-8", errors="replace").splitlines()]


def generated_word(index: int) -> str:
    """The `index`-th word of the generator's vocabulary: base-26 letters, so words are distinct and readable."""
    letters = []
    index += 1
    while index:
        index, digit = divmod(index - 1, 26)
        letters.append(_ALPHABET[digit])
    return "".join(reversed(letters))


def input_lines(spec: InputSpec) -> list[str]:
    """The `spec.lines` lines an experiment produces, in order."""
    if spec.corpus is not None:
        source = corpus_lines(spec.corpus)
        if not source:
            return []
        return list(itertools.islice(itertools.cycle(source), spec.lines))
    rng = random.Random(spec.seed)
    return [
        " ".join(generated_word(rng.randrange(spec.vocabulary)) for _ in range(spec.words_per_line))
        for _ in range(spec.lines)
    ]


def java_split_words(line: str) -> list[str]:
    """`line.toLowerCase().split("\\W+")` by Java's rules: `\\W` is ASCII-only; no match returns the whole
    string; otherwise trailing empty strings are removed and a leading separator leaves one empty string."""
    lowered = line.lower()
    if re.search(r"[^A-Za-z0-9_]", lowered) is None:
        return [lowered]
    parts = re.split(r"[^A-Za-z0-9_]+", lowered)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def expected_counts(lines: Iterable[str]) -> dict[str, int]:
    counter: collections.Counter[str] = collections.Counter()
    for line in lines:
        counter.update(java_split_words(line))
    return dict(counter)


def decode_count(value: bytes | None) -> int | None:
    """WordCount's output value: a big-endian 8-byte long (Serdes.Long)."""
    if value is None or len(value) != 8:
        return None
    return int(struct.unpack(">q", value)[0])


def count_differences(expected: dict[str, int], got: dict[str, int]) -> list[str]:
    """Human-readable differences, missing words first; empty when the output is exact."""
    out = [f"{w}: expected {c}, missing" for w, c in sorted(expected.items()) if w not in got]
    out += [f"{w}: expected {c}, got {got[w]}" for w, c in sorted(expected.items()) if w in got and got[w] != c]
    out += [f"{w}: unexpected, got {c}" for w, c in sorted(got.items()) if w not in expected]
    return out
