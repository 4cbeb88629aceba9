"""Kafka Streams' own HighAvailabilityTaskAssignor on recorded cooperative rounds of seed 000.

`tests/fixtures/assignment/hata-cooperative-churn.json` (docs/hata-cooperative-churn.md) holds what the threads
reported in a probing round and in its immediate follow-up, and, client level, eight rounds of a second run that
alternate probing and follow-up. Kafka Streams moves the task to the client with the caught-up warmup in each
probing round and back in each follow-up, exactly as the runs did and as streamlet's HATA does: the churn is
Kafka Streams' behaviour on these inputs, not a difference of streamlet's copy.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamlet.assignment.simulation import simulate
from tests.support.fixtures import ASSIGNMENT_CASES
from tests.support.oracle import Oracle, normalize_output

pytestmark = pytest.mark.oracle

FIXTURE: dict[str, Any] = json.loads((ASSIGNMENT_CASES / "hata-cooperative-churn.json").read_text())
PIDS: dict[str, str] = FIXTURE["process_ids"]


def _clients(round_: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per client: its thread count, the union of its threads' offset sums (sorted member order, a later thread
    wins) and the tasks of the partitions its threads own (the oracle's `addOwnedPartitions`)."""
    if "clients" in round_:
        return {
            PIDS[name]: {
                "capacity": c["capacity"],
                "prev_active": c["owned"],
                "task_offset_sums": c["task_offset_sums"],
            }
            for name, c in round_["clients"].items()
        }
    clients: dict[str, dict[str, Any]] = {}
    for member in sorted(round_["members"]):
        sent = round_["members"][member]
        client = clients.setdefault(PIDS[member[0]], {"capacity": 0, "prev_active": [], "task_offset_sums": {}})
        client["capacity"] += 1
        client["prev_active"] += sent["owned"]
        client["task_offset_sums"].update(sent["task_offset_sums"])
    return clients


def _contract_case(round_: dict[str, Any]) -> dict[str, Any]:
    """The round as Kafka Streams' leader sees it."""
    stateful = sorted(round_["changelog_end_offset_sums"])
    return {
        # StreamsConfig refuses a probing interval under a minute; the interval does not change the assignment
        "config": {**FIXTURE["config"], "probing_rebalance_interval_ms": 60_000},
        "tasks": {"stateless": [f"0_{p}" for p in range(FIXTURE["partitions"])], "stateful": stateful},
        "changelog_end_offset_sums": round_["changelog_end_offset_sums"],
        "clients": _clients(round_),
    }


ROUNDS = FIXTURE["rounds"] + FIXTURE["alternating_rounds"]
IDS = ["run1-probing", "run1-followup"] + [
    f"run2-gen{r['generation']}-{r['trigger']}" for r in FIXTURE["alternating_rounds"]
]


@pytest.mark.parametrize("round_", ROUNDS, ids=IDS)
def test_kafka_streams_assigns_the_recorded_round(oracle: Oracle, round_: dict[str, Any]) -> None:
    case = _contract_case(round_)
    kafka_streams = oracle.run(case)
    assert "error" not in kafka_streams, kafka_streams
    expected = {PIDS[name]: c for name, c in round_["recorded"].items()}
    followup = 60_000 if round_["probing_requested"] else None
    assert normalize_output(kafka_streams) == {"clients": expected, "followup_rebalance_ms": followup}
    assert normalize_output(simulate(case, "high_availability")) == normalize_output(kafka_streams)


def test_kafka_streams_moves_the_task_back_in_the_followup(oracle: Oracle) -> None:
    probing, followup = (oracle.run(_contract_case(r))["clients"] for r in FIXTURE["rounds"])
    assert "1_1" in probing[PIDS["A"]]["active"] and "1_1" in followup[PIDS["B"]]["active"]


def test_kafka_streams_alternates_until_the_warmup_reads_the_last_flush(oracle: Oracle) -> None:
    """Run 2: 1_3 goes to C in every probing round and back to B in every follow-up but the last one, where C's
    warmup had read B's last flush before C joined (lag 0 against B's 1)."""
    holders = [
        next(name for name, pid in PIDS.items() if "1_3" in oracle.run(_contract_case(r))["clients"][pid]["active"])
        for r in FIXTURE["alternating_rounds"]
    ]
    assert holders == ["C", "B", "C", "B", "C", "B", "C", "C"]
