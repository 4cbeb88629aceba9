"""Load the Java-computed reference cases and run them through streamlet's assignment pipeline.

`tests/fixtures/assignment/kafka-streams-assignor-cases.json` is a verbatim copy of the design notes'
research/kafka-streams-assignor-cases.json: every expected value in it is the output of Kafka Streams' own
Java classes. Nothing here computes an expectation; it only feeds inputs in.

Conventions of that file: task "a_b" has exactly one input partition ("src-a", b), so owned partitions are
given as task ids; "Long.MAX_VALUE" stands for 2**63-1.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from functools import cache
from typing import Any

from streamlet.assignment.api import AssignmentConfigs
from streamlet.assignment.client_state import LONG_MAX, ClientState, Partition
from streamlet.assignment.high_availability import assign_clients
from streamlet.assignment.thread_assignment import ConsumerAssignment, apply_pending_revocations
from streamlet.task_id import TaskId
from tests.support.cooperative import distribute_client
from tests.support.fixtures import ASSIGNMENT_CASES

DATA = ASSIGNMENT_CASES


@cache
def research() -> dict[str, Any]:
    return json.loads((DATA / "kafka-streams-assignor-cases.json").read_text())


def seed_case(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def long_value(value: Any) -> int:
    if value == "Long.MAX_VALUE" or value == "MAX":
        return LONG_MAX
    assert isinstance(value, int), value
    return value


def tasks(texts: Any) -> list[TaskId]:
    return [TaskId.parse(t) for t in texts or []]


def configs_of(raw: dict[str, Any]) -> AssignmentConfigs:
    return AssignmentConfigs(
        num_standby_replicas=raw["num_standby_replicas"],
        max_warmup_replicas=raw["max_warmup_replicas"],
        acceptable_recovery_lag=long_value(raw["acceptable_recovery_lag"]),
    )


def source_partition(task: TaskId) -> Partition:
    return (f"src-{task.subtopology}", task.partition)


@dataclass
class PipelineResult:
    clients: dict[uuid.UUID, ClientState]
    probing: bool
    consumers: dict[uuid.UUID, dict[str, ConsumerAssignment]]


def client_states_for(case: dict[str, Any]) -> tuple[dict[uuid.UUID, ClientState], set[Partition]]:
    """ClientStates exactly as the leader builds them from subscriptions (full_pipeline) or from lags."""
    stateful = tasks(case["stateful_tasks"])
    all_tasks = stateful + tasks(case["stateless_tasks"])
    task_for_partition = {source_partition(t): t for t in all_tasks}
    ends = {TaskId.parse(k): long_value(v) for k, v in (case.get("changelog_end_offset_sums") or {}).items()}
    clients: dict[uuid.UUID, ClientState] = {}
    all_owned: set[Partition] = set()
    for raw in case["clients"]:
        pid = uuid.UUID(raw["process_id"])
        if case["mode"] == "lags_given":
            lags = {TaskId.parse(k): long_value(v) for k, v in raw["task_lags"].items()}
            clients[pid] = ClientState(raw["capacity"], task_lags=lags)
            continue
        state = ClientState()
        for consumer in raw["consumers"]:
            owned = [source_partition(t) for t in tasks(consumer["owned_partitions_of_tasks"])]
            all_owned.update(owned)
            sums = {TaskId.parse(k): long_value(v) for k, v in consumer["reported_task_offset_sums"].items()}
            state.add_consumer(consumer["member_id"], sums, owned)
        state.initialize_prev_tasks(task_for_partition)
        state.compute_task_lags({t: ends[t] for t in stateful})
        clients[pid] = state
    return clients, all_owned


def run_pipeline(case: dict[str, Any]) -> PipelineResult:
    """Leader side of one rebalance: HATA over clients, then threads and cooperative revocation."""
    clients, all_owned = client_states_for(case)
    stateful = tasks(case["stateful_tasks"])
    all_tasks = stateful + tasks(case["stateless_tasks"])
    probing = assign_clients(clients, all_tasks, stateful, configs_of(case["config"]))
    consumers: dict[uuid.UUID, dict[str, ConsumerAssignment]] = {}
    if case["mode"] == "full_pipeline":
        for pid, state in clients.items():
            threads = distribute_client(state)
            consumers[pid] = apply_pending_revocations(
                threads,
                state.owned_partitions,
                all_owned,
                {t: [source_partition(t)] for t in all_tasks},
                state.previous_standby_tasks,
                stateful,
            )
    return PipelineResult(clients, probing, consumers)


def as_strings(task_ids: Any) -> list[str]:
    return [str(t) for t in sorted(task_ids)]
