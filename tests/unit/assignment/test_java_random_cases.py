"""Randomized rebalances whose expected output was computed by Kafka Streams 4.1.1's own classes.

See `data/java-hata-random-cases.json` ("source") for exactly how Java was driven. These catch the
emulation details the hand-made cases miss: ConstrainedPrioritySet's stale heap entries, the heap-array
order of leftover tasks in assignTasksToThreads, and balancing's skip-over of tasks the destination holds.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from streamlet.assignment.api import AssignmentConfigs
from streamlet.assignment.client_state import ClientState
from streamlet.assignment.high_availability import assign_clients
from streamlet.task_id import TaskId
from tests.support.cooperative import distribute_client
from tests.unit.assignment.research_cases import DATA

CASES = json.loads((DATA / "java-hata-random-cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_matches_kafka_streams(case: dict[str, Any]) -> None:
    raw = case["input"]
    clients = {}
    for client in raw["clients"]:
        state = ClientState()
        for consumer in client["consumers"]:
            state.add_consumer(consumer["m"], {TaskId.parse(t): s for t, s in consumer["sums"].items()})
        state.initialize_prev_tasks({})
        state.compute_task_lags({TaskId.parse(t): e for t, e in raw["ends"].items()})
        clients[uuid.UUID(client["pid"])] = state
    cfg = raw["cfg"]
    configs = AssignmentConfigs(
        num_standby_replicas=cfg["standby"], max_warmup_replicas=cfg["warm"], acceptable_recovery_lag=cfg["lag"]
    )
    all_tasks = [TaskId.parse(t) for t in raw["all"]]
    probing = assign_clients(clients, all_tasks, [TaskId.parse(t) for t in raw["stateful"]], configs)

    java = case["java"]
    assert probing == java["probing"]
    for pid_text, expected in java["clients"].items():
        state = clients[uuid.UUID(pid_text)]
        assert [str(t) for t in sorted(state.active_tasks)] == expected["active"]
        assert [str(t) for t in sorted(state.standby_tasks)] == expected["standby"]
        threads = distribute_client(state)
        got = {m: {"a": [str(t) for t in th.active], "s": [str(t) for t in th.standby]} for m, th in threads.items()}
        assert got == expected["threads"]
