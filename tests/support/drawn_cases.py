"""Cases drawn once with Hypothesis and kept in streamlet's cache directory, for the oracles' generated corpora.

A corpus is derandomized: the same strategies and Hypothesis release draw the same cases. Drawing costs more CPU
than it should on every run (about 20 ms a case, and under `scripts/test` each test process drew its own), so the
first process writes the cases to `<cache>/drawn-cases/<name>-<key>.json` (where the broker's jars are; the key
hashes Hypothesis' version and the modules the draw depends on) and every later run reads them.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from streamlet.kafka.broker import cache_root

Case = dict[str, Any]


def dump(case: Case) -> str:
    """One JSON line, as the oracles read it."""
    return json.dumps(case, separators=(",", ":"))


def draw_distinct(strategy: st.SearchStrategy[Case], count: int, cases: dict[str, Case]) -> None:
    """Add `count` new distinct cases from `strategy` to `cases` (JSON -> case), the same ones on every run
    (derandomized, no shrinking). Duplicates are rejected (`assume`) and do not count towards `max_examples`."""

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
    """`count` distinct cases of `strategy`, the same on every run."""
    cases: dict[str, Case] = {}
    draw_distinct(strategy, count, cases)
    return list(cases.values())


def cached_cases(name: str, depends_on: Iterable[Path], draw: Callable[[], list[Case]]) -> list[Case]:
    """`draw()`'s cases, drawn once per key: Hypothesis' release, the `depends_on` sources and this module."""
    digest = hashlib.sha256(hypothesis.__version__.encode())
    for source in (*depends_on, Path(__file__)):
        digest.update(source.read_bytes())
    directory = cache_root() / "drawn-cases"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{digest.hexdigest()[:16]}.json"
    with open(directory / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            cases: list[Case] = json.loads(path.read_text())
            return cases
        cases = draw()
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(cases))
        partial.replace(path)
        for stale in directory.glob(f"{name}-*.json"):  # drawn by other strategies or Hypothesis releases
            if stale != path:
                stale.unlink(missing_ok=True)
        return cases
