"""Differential tests: KIP-925 rack-aware HATA (`RackAwareTaskAssignor`, both strategies, Kafka Streams 4.1.1).

With `rack_aware_assignment_strategy` = `min_traffic` or `balance_subtopology`, HATA re-places actives and
standbys by min-cost flow over client racks and the racks of each task's partition replicas. Every
expected output comes from the oracle: the real HATA with a `RackAwareTaskAssignor` built from the case's
cluster metadata, task partitions and client racks (oracle/.../RackAware.java). streamlet runs
`simulate(case, "high_availability")`.

Per strategy: the shared corpus's small cases with racks drawn twice (two seeds) and its first large
cases once; about one case in twelve has incomplete rack information (rack awareness must stay off).
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.support.case_strategies import with_racks
from tests.support.fixtures import ASSIGNMENT_CASES
from tests.support.oracle import Oracle, normalize_output
from tests.support.oracle_corpus import GENERATED_SMALL, assert_no_mismatch, dump, mismatches

pytestmark = pytest.mark.oracle

STRATEGIES = ("min_traffic", "balance_subtopology")
SECOND_VARIANTS = 350  # small cases given racks a second time, with another seed
LARGE = 60  # large cases (up to 16 clients, 160 tasks): the solver's cost grows fast with size

RECORDED = json.loads((ASSIGNMENT_CASES / "kip925-rack-aware-hata.json").read_text())["cases"]


def _racked(corpus: list[dict[str, Any]], strategy: str) -> list[dict[str, Any]]:
    small, large = corpus[:GENERATED_SMALL], corpus[GENERATED_SMALL:]
    first = [with_racks(case, random.Random(i), strategy) for i, case in enumerate(small)]
    second = [with_racks(case, random.Random(-1 - i), strategy) for i, case in enumerate(small[:SECOND_VARIANTS])]
    big = [with_racks(case, random.Random(10_000 + i), strategy) for i, case in enumerate(large[:LARGE])]
    return list({dump(case): case for case in first + second + big}.values())


@pytest.fixture(scope="module")
def racked(corpus: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {strategy: _racked(corpus, strategy) for strategy in STRATEGIES}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_racked_corpus_size(racked: dict[str, list[dict[str, Any]]], strategy: str) -> None:
    cases = racked[strategy]
    assert len({dump(c) for c in cases}) == len(cases) >= 1000
    assert all(c["config"]["rack_aware_assignment_strategy"] == strategy for c in cases)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_streamlet_matches_oracle_on_generated_racked_cases(
    oracle: Oracle, racked: dict[str, list[dict[str, Any]]], strategy: str
) -> None:
    cases = racked[strategy]
    assert_no_mismatch(mismatches(oracle, cases, "high_availability"), len(cases), f"rack-aware HATA ({strategy})")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_racks_change_many_generated_assignments(
    oracle: Oracle, racked: dict[str, list[dict[str, Any]]], strategy: str
) -> None:
    """The corpus is not a no-op: Kafka Streams assigns a good share of the cases differently without racks."""
    cases = racked[strategy][:400]
    off = [{**c, "config": {**c["config"], "rack_aware_assignment_strategy": "none"}} for c in cases]
    with_racks_out = oracle.run_many(cases)
    without_out = oracle.run_many(off)
    changed = sum(normalize_output(a) != normalize_output(b) for a, b in zip(with_racks_out, without_out, strict=True))
    assert changed >= len(cases) // 4, f"only {changed} of {len(cases)} cases changed"


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_recorded_hand_written_case_is_the_oracles_output_and_streamlet_matches(
    oracle: Oracle, recorded: dict[str, Any]
) -> None:
    assert normalize_output(oracle.run(recorded["case"])) == normalize_output(recorded["expected"])
    assert_no_mismatch(mismatches(oracle, [recorded["case"]], "high_availability"), 1, recorded["name"])
