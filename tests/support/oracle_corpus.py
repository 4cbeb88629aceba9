"""Generated oracle corpora: draw distinct cases once, run them through the oracle in one batch, report diffs.

Shared by the differential tests that compare a streamlet assignor with Kafka Streams' class on
hundreds of generated cases (one JVM round trip per batch keeps them well under a minute).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import strategies as st

from streamlet.assignment.simulation import simulate
from streamlet.kafka.broker import KAFKA_VERSION, cache_root
from tests.support import case_strategies
from tests.support.case_strategies import contract_cases
from tests.support.oracle import Oracle, normalize_output

GENERATED_SMALL = 700  # contract_cases() as for HATA: up to 8 clients, 3 sub-topologies of 12 partitions
GENERATED_LARGE = 300  # up to 16 clients, 4 sub-topologies of 40 partitions (hash collisions, bigger tables)


def dump(case: dict[str, Any]) -> str:
    """One JSON line, as the oracle reads it (replay: ``echo '<line>' | java -jar oracle/target/...jar``)."""
    return json.dumps(case, separators=(",", ":"))


def draw_distinct(strategy: st.SearchStrategy[dict[str, Any]], count: int, cases: dict[str, dict[str, Any]]) -> None:
    """Add `count` new distinct cases from `strategy` to `cases` (JSON -> case), the same ones on every run
    (derandomized, no shrinking). Duplicates are rejected (`assume`) and do not count towards `max_examples`.
    """

    @settings(
        max_examples=count,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def collect(case: dict[str, Any]) -> None:
        key = dump(case)
        assume(key not in cases)
        cases[key] = case

    collect()


def mismatches(oracle: Oracle, cases: list[dict[str, Any]], streamlet_assignor: Any) -> list[str]:
    """Run every case through the oracle (one batch) and streamlet; describe each difference."""
    problems = []
    for case, java in zip(cases, oracle.run_many(cases), strict=True):
        if "error" in java:
            problems.append(f"oracle rejected the case: {java['error']}\n{dump(case)}")
            continue
        expected = normalize_output(java)
        actual = normalize_output(simulate(case, streamlet_assignor))
        if actual != expected:
            problems.append(
                f"case: {dump(case)}\nkafka streams: {json.dumps(expected)}\nstreamlet:     {json.dumps(actual)}"
            )
    return problems


def assert_no_mismatch(problems: list[str], total: int, what: str) -> None:
    if problems:
        shown = "\n\n".join(problems[:3])
        summary = f"{what}: {len(problems)} of {total} cases differ from Kafka Streams {KAFKA_VERSION}."
        pytest.fail(f"{summary}\n{shown}", pytrace=False)


def _draw_corpus() -> list[dict[str, Any]]:
    cases: dict[str, dict[str, Any]] = {}
    draw_distinct(contract_cases(), GENERATED_SMALL, cases)
    draw_distinct(contract_cases(max_clients=16, max_partitions=40, max_subtopologies=4), GENERATED_LARGE, cases)
    return list(cases.values())


def _corpus_key() -> str:
    """What the drawn cases depend on: Hypothesis' version, the strategies and this module (how they are drawn)."""
    digest = hashlib.sha256(hypothesis.__version__.encode())
    for source in (Path(case_strategies.__file__), Path(__file__)):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def generated_corpus() -> list[dict[str, Any]]:
    """The shared generated corpus: GENERATED_SMALL + GENERATED_LARGE distinct contract cases.

    Drawing takes about a minute of CPU, and under `scripts/test` each test process would draw it again. The draw
    is derandomized, so the first process writes it to streamlet's cache directory (where the broker's jars are,
    keyed by what the cases depend on) and the other processes, and later runs, read the same cases."""
    directory = cache_root() / "oracle-corpus"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{_corpus_key()}.json"
    with open(directory / "draw.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            cases: list[dict[str, Any]] = json.loads(path.read_text())
            return cases
        cases = _draw_corpus()
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(cases))
        partial.replace(path)
        for stale in directory.glob("*.json"):  # corpora of other strategies or Hypothesis releases
            if stale != path:
                stale.unlink(missing_ok=True)
        return cases
