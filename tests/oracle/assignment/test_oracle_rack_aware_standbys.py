"""Differential tests: KIP-708 rack-aware standbys (`ClientTagAwareStandbyTaskAssignor` inside HATA, 4.1.1).

With `rack_aware_assignment_tags` set, HATA places standbys with Kafka Streams'
`ClientTagAwareStandbyTaskAssignor` and balances them only between clients with the same tags.
Every expected output comes from the oracle (the real HATA with `AssignmentConfigs(..., tags)` and
`new ClientState(processId, clientTags)`); streamlet runs `simulate(case, "high_availability")`.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.support.case_strategies import with_client_tags
from tests.support.oracle import Oracle
from tests.support.oracle_corpus import assert_no_mismatch, dump, mismatches

pytestmark = pytest.mark.oracle

SECOND_VARIANTS = 300  # cases of the shared corpus tagged a second time, with another seed


def _pid(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012d}"


def _hand_case(tags: list[dict[str, str]], configured: list[str], standbys: int, tasks: int) -> dict[str, Any]:
    stateful = [f"0_{p}" for p in range(tasks)]
    return {
        "config": {"num_standby_replicas": standbys, "rack_aware_assignment_tags": configured},
        "tasks": {"stateless": [], "stateful": stateful},
        "changelog_end_offset_sums": dict.fromkeys(stateful, 0),
        "clients": {_pid(i + 1): {"capacity": 1, "client_tags": t} for i, t in enumerate(tags)},
    }


# Kafka Streams' own example (comment in updateClientsOnAlreadyUsedTagEntries): 3 zones x 2 clusters,
# two standbys; the second one can only be spread over zones.
_ZONES_X_CLUSTERS = [{"zone": f"eu-central-1{z}", "cluster": f"k8s-cluster{c}"} for c in (1, 2) for z in "abc"]

HAND_CASES = {
    "zones-x-clusters-two-standbys": _hand_case(_ZONES_X_CLUSTERS, ["zone", "cluster"], 2, 6),
    "zones-x-clusters-zone-only": _hand_case(_ZONES_X_CLUSTERS, ["zone"], 2, 12),
    # every client in one zone: no standby can go elsewhere, all fall back to the least-loaded clients
    "one-zone-fallback": _hand_case([{"zone": "a"}] * 4, ["zone"], 2, 8),
    # two zones, three standbys: one per task spread, the rest fall back (HashMap order of the tasks)
    "two-zones-three-standbys": _hand_case([{"zone": z} for z in "ababa"], ["zone"], 3, 20),
    # an unconfigured tag key blocks balancing between clients that differ in it
    "unconfigured-key-blocks-balancing": _hand_case(
        [{"zone": "a", "host": "h1"}, {"zone": "b", "host": "h2"}, {"zone": "b", "host": "h3"}], ["zone"], 1, 9
    ),
    # a client without the configured key
    "client-without-the-key": _hand_case([{"zone": "a"}, {}, {"zone": "b"}, {"zone": "a"}], ["zone"], 2, 7),
}


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


@pytest.mark.parametrize("name", sorted(HAND_CASES))
def test_streamlet_matches_oracle_on_hand_written_case(oracle: Oracle, name: str) -> None:
    case = HAND_CASES[name]
    assert_no_mismatch(mismatches(oracle, [case], "high_availability"), 1, name)


def test_tags_change_the_assignment(oracle: Oracle) -> None:
    """The hand-written cases are not a no-op: without the tags, Kafka Streams assigns differently."""
    case = HAND_CASES["zones-x-clusters-two-standbys"]
    untagged = {**case, "config": {**case["config"], "rack_aware_assignment_tags": []}}
    tagged_out, untagged_out = oracle.run_many([case, untagged])
    assert tagged_out != untagged_out
