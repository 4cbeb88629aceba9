"""Cases drawn once with Hypothesis and kept in the repository, for the oracles' generated corpora.

A draw is derandomized, yet not the same everywhere: the same strategies and Hypothesis release drew different
cases in a plain process, under pytest, and in a busy xdist worker, so CI's fresh machines compared other cases than
the machine a change was made on (one of them hit a Kafka Streams bug). A draw also costs CPU (about 20 ms a case, a
minute and a half for all corpora on every CI run). So a corpus is drawn once and committed:
`tests/fixtures/drawn-cases/<name>-<key>.json.gz`, where the key hashes Hypothesis' version (pinned in pyproject.toml)
and the modules the draw depends on. A change to a strategy changes the key: the next run draws the corpus again
and writes it there, in place of the old one, to be committed with the change (`git status` shows it).
"""

from __future__ import annotations

import fcntl
import gzip
import hashlib
import inspect
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

Case = dict[str, Any]


def dump(case: Case) -> str:
    """One JSON line, as the oracles read it."""
    return json.dumps(case, separators=(",", ":"))


def draw_distinct(strategy: st.SearchStrategy[Case], count: int, cases: dict[str, Case]) -> None:
    """Add `count` new distinct cases from `strategy` to `cases` (JSON -> case), derandomized, no shrinking.
    Duplicates are rejected (`assume`) and do not count towards `max_examples`."""

    @settings(
        max_examples=count,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def collect(case: Case) -> None:
        key = dump(case)
        assume(key not in cases)
        cases[key] = case

    collect()


def distinct_cases(strategy: st.SearchStrategy[Case], count: int) -> list[Case]:
    """`count` distinct cases of `strategy`."""
    cases: dict[str, Case] = {}
    draw_distinct(strategy, count, cases)
    return list(cases.values())


#: the committed corpora (gzip'd JSON lists of cases)
CORPORA_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "drawn-cases"


def corpus_path(name: str, depends_on: Iterable[Path]) -> Path:
    """Where corpus `name` is committed: its key hashes Hypothesis' release, the `depends_on` sources and
    `draw_distinct`'s (how a corpus is drawn; not this module's docstrings)."""
    digest = hashlib.sha256(hypothesis.__version__.encode())
    for source in depends_on:
        digest.update(source.read_bytes())
    digest.update(inspect.getsource(draw_distinct).encode())
    return CORPORA_DIR / f"{name}-{digest.hexdigest()[:16]}.json.gz"


def cached_cases(name: str, depends_on: Iterable[Path], draw: Callable[[], list[Case]]) -> list[Case]:
    """The committed corpus `name` (corpus_path), or `draw()`'s cases, written there."""
    path = corpus_path(name, depends_on)
    if path.is_file():
        cases: list[Case] = json.loads(gzip.decompress(path.read_bytes()))
        return cases
    CORPORA_DIR.mkdir(parents=True, exist_ok=True)
    with open(CORPORA_DIR / f"{name}.lock", "w") as lock:  # the test processes that need it draw it once
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            cases = json.loads(gzip.decompress(path.read_bytes()))
            return cases
        cases = draw()
        partial = path.with_suffix(".partial")
        partial.write_bytes(gzip.compress(json.dumps(cases).encode(), compresslevel=9, mtime=0))
        partial.replace(path)
        for stale in CORPORA_DIR.glob(f"{name}-*.json.gz"):  # drawn by other strategies or Hypothesis releases
            if stale != path:
                stale.unlink(missing_ok=True)
        return cases
