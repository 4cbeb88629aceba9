"""Differential tests: KIP-708 rack-aware standbys (`ClientTagAwareStandbyTaskAssignor` inside HATA, KAFKA_VERSION).

With `rack_aware_assignment_tags` set, HATA places standbys with Kafka Streams'
`ClientTagAwareStandbyTaskAssignor` and balances them only between clients with the same tags.
Every expected output comes from the oracle (the real HATA with `AssignmentConfigs(..., tags)` and
`new ClientState(processId, clientTags)`); streamlet runs `simulate(case, "high_availability")`.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.support.case_strategies import with_client_tags
from tests.support.fixtures import ASSIGNMENT_CASES
from tests.support.oracle import Oracle, normalize_output
from tests.support.oracle_corpus import assert_no_mismatch, dump, mismatches

pytestmark = pytest.mark.oracle

SECOND_VARIANTS = 300  # cases of the shared corpus tagged a second time, with another seed


#: hand-written cases with Kafka Streams' recorded outputs (the unit tier replays them without a JVM)
RECORDED = json.loads((ASSIGNMENT_CASES / "kip708-rack-aware-standbys.json").read_text())["cases"]


@pytest.fixture(scope="module")
def tagged(corpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The shared generated corpus with client tags (seeded per case), some cases twice with other tags.

    Distinct cases only: a one-client case, say, can come out the same under both seeds.
    """
    first = [with_client_tags(case, random.Random(i)) for i, case in enumerate(corpus)]
    second = [with_client_tags(case, random.Random(-1 - i)) for i, case in enumerate(corpus[:SECOND_VARIANTS])]
    return list({dump(case): case for case in first + second}.values())


def test_tagged_corpus_size(tagged: list[dict[str, Any]]) -> None:
    assert len({dump(c) for c in tagged}) == len(tagged) >= 1000


def test_streamlet_matches_oracle_on_generated_tagged_cases(oracle: Oracle, tagged: list[dict[str, Any]]) -> None:
    assert_no_mismatch(mismatches(oracle, tagged, "high_availability"), len(tagged), "rack-aware standbys")


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_recorded_hand_written_case_is_the_oracles_output_and_streamlet_matches(
    oracle: Oracle, recorded: dict[str, Any]
) -> None:
    assert normalize_output(oracle.run(recorded["case"])) == normalize_output(recorded["expected"])
    assert_no_mismatch(mismatches(oracle, [recorded["case"]], "high_availability"), 1, recorded["name"])


def test_tags_change_the_assignment(oracle: Oracle) -> None:
    """The hand-written cases are not a no-op: without the tags, Kafka Streams assigns differently."""
    case = next(r["case"] for r in RECORDED if r["name"] == "zones-x-clusters-two-standbys")
    untagged = {**case, "config": {**case["config"], "rack_aware_assignment_tags": []}}
    tagged_out, untagged_out = oracle.run_many([case, untagged])
    assert tagged_out != untagged_out
