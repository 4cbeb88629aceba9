"""Generated oracle corpora: draw distinct cases once, run them through the oracle in one batch, report diffs.

Shared by the differential tests that compare a streamlet assignor with Kafka Streams' class on
hundreds of generated cases (one JVM round trip per batch keeps them well under a minute).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streamlet.assignment.simulation import simulate
from streamlet.kafka.broker import KAFKA_VERSION
from tests.support import case_strategies
from tests.support.case_strategies import contract_cases
from tests.support.drawn_cases import cached_cases, draw_distinct, dump
from tests.support.oracle import Oracle, normalize_output

#: the modules the generated corpus is drawn by (tests/support/drawn_cases.corpus_path)
CORPUS_SOURCES = [Path(case_strategies.__file__), Path(__file__)]
GENERATED_SMALL = 700  # contract_cases() as for HATA: up to 8 clients, 3 sub-topologies of 12 partitions
GENERATED_LARGE = 300  # up to 16 clients, 4 sub-topologies of 40 partitions (hash collisions, bigger tables)


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


def generated_corpus() -> list[dict[str, Any]]:
    """The shared generated corpus: GENERATED_SMALL + GENERATED_LARGE distinct contract cases, committed
    (tests/support/drawn_cases.py; a draw takes about half a minute of CPU)."""
    return cached_cases("assignment", CORPUS_SOURCES, _draw_corpus)
