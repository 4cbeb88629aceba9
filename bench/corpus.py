"""The benchmark input: real English text from the machine, sampled line by line (seeded) to a word target.

Sources, in a fixed order: the license texts in /usr/share/common-licenses, every Debian package's
/usr/share/doc/*/copyright, and the text of Python's own documentation topics (`pydoc_data.topics`, pinned
by the Python version). Lines are stripped; only ASCII lines with at least one word character are kept,
so that Java's `toLowerCase().split("\\W+")` (Kafka Streams, Spark), Python's `re` and every peer agree
word for word (Java's `\\W` is ASCII-only, Python's is Unicode; an all-separator or empty line is the one
place Java's split and a naive port differ), and only lines with at least two plain words (so file lists of
Debian copyright files, `Files: libs/foo/bar.hpp`, do not swamp the prose); identical files count once.
The pool is deduplicated by nothing: repeated lines are as
frequent as in the sources, which keeps the word distribution natural (Zipf-like).

`python bench/corpus.py` prints the corpus's size, fingerprint and top words.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SEED = 20240601
TARGET_WORDS = 2_000_000
_NON_WORD = re.compile(r"\W+")
_HAS_WORD = re.compile(r"\w")
_PROSE_TOKEN = re.compile(r"(?:^|\s)[A-Za-z]+[,.;:]?(?=\s|$)")  # a plain word, not a path or a file name


def java_split(line: str) -> list[str]:
    """Java's `line.toLowerCase().split("\\W+")`, written here independently of streamlet."""
    words = _NON_WORD.split(line.lower())
    while words and words[-1] == "":
        words.pop()
    if not words and line == "":
        return [""]  # Java: "".split(regex) is [""]; such lines are not in the corpus anyway
    return words


def source_files() -> list[Path]:
    files: list[Path] = []
    licenses = Path("/usr/share/common-licenses")
    if licenses.is_dir():
        files += sorted(p for p in licenses.iterdir() if p.is_file() and not p.is_symlink())
    files += sorted(p for p in Path("/usr/share/doc").glob("*/copyright") if p.is_file())
    return files


def pool() -> tuple[list[str], list[str]]:
    """(lines, source names) of the sampling pool."""
    lines: list[str] = []
    names: list[str] = []
    seen: set[str] = set()
    for path in source_files():
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in seen:  # e.g. the four libboost-* copyright files are one and the same
            continue
        seen.add(digest)
        names.append(str(path))
        lines += text.splitlines()
    try:
        from pydoc_data.topics import topics  # the Python docs' text, part of the stdlib

        names.append(f"pydoc_data.topics (Python {sys.version.split()[0]})")
        for key in sorted(topics):
            lines += topics[key].splitlines()
    except ImportError:
        pass
    kept = []
    for line in lines:
        line = line.strip()
        if line.isascii() and _HAS_WORD.search(line) and len(_PROSE_TOKEN.findall(line)) >= 2:
            kept.append(line)
    return kept, names


@dataclass
class Corpus:
    lines: list[str]
    expected: dict[str, int]
    words: int
    sha256: str
    pool_lines: int
    sources: int
    seed: int

    def summary(self) -> dict[str, object]:
        return {
            "lines": len(self.lines),
            "words": self.words,
            "distinct_words": len(self.expected),
            "sha256": self.sha256,
            "pool_lines": self.pool_lines,
            "source_files": self.sources,
            "seed": self.seed,
            "bytes": sum(len(s) + 1 for s in self.lines),
        }


def build(target_words: int = TARGET_WORDS, seed: int = SEED) -> Corpus:
    lines_pool, names = pool()
    if not lines_pool:
        sys.exit("no text found for the corpus (/usr/share/common-licenses, /usr/share/doc/*/copyright)")
    rng = random.Random(seed)
    lines: list[str] = []
    counts: collections.Counter[str] = collections.Counter()
    words = 0
    while words < target_words:
        line = lines_pool[rng.randrange(len(lines_pool))]
        split = java_split(line)
        lines.append(line)
        counts.update(split)
        words += len(split)
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return Corpus(lines, dict(counts), words, digest, len(lines_pool), len(names), seed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=TARGET_WORDS)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    corpus = build(args.words, args.seed)
    print(corpus.summary())
    top = sorted(corpus.expected.items(), key=lambda kv: -kv[1])
    print("top 20:", top[:20])
    # Zipf check: frequency x rank is roughly constant over the head of the distribution
    print(
        "rank*freq/words at ranks 1,10,100,1000:",
        [round((r + 1) * top[r][1] / corpus.words, 3) for r in (0, 9, 99, 999) if r < len(top)],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
