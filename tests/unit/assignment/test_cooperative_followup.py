"""Two recorded cooperative rounds of seed 000 replayed through the leader's StreamsPartitionAssignor (no broker).

The fixture (`tests/fixtures/assignment/hata-cooperative-churn.json`, docs/hata-cooperative-churn.md) holds what
each stream thread sent in generations 5 (probing) and 6 (its immediate follow-up) of an e2e run: owned
partitions, offset sums, previous tasks. HATA moves 1_1 from B to A in the probing round and back to B in the
follow-up, because nobody is caught up on it then (acceptable_recovery_lag = 0): that is Kafka Streams' own
behaviour on these inputs (the oracle test of the same fixture), so the replay pins it. What the leader feeds the
assignor is checked against Kafka Streams' `ClientState.initializePrevTasks`: after the revocation B's closed 1_1
(state on disk, partition owned by nobody) is a previous standby of B.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from aiokafka.structs import TopicPartition

from streamlet.assignment.api import AssignmentConfigs
from streamlet.assignment.partition_assignor import StreamsPartitionAssignor
from streamlet.assignment.protocol import AssignmentInfo, SubscriptionInfo
from streamlet.assignment.registry import resolve_task_assignor
from streamlet.kafka.group.consumer_protocol import Subscription
from streamlet.task_id import TaskId
from tests.support.fixtures import ASSIGNMENT_CASES

FIXTURE: dict[str, Any] = json.loads((ASSIGNMENT_CASES / "hata-cooperative-churn.json").read_text())
PIDS: dict[str, str] = FIXTURE["process_ids"]
NAMES = {pid: name for name, pid in PIDS.items()}
TOPICS = ("input", "repartition")  # subtopology 0 reads input, subtopology 1 (stateful) the repartition topic
PROBING, FOLLOWUP = FIXTURE["rounds"]


def _partition(task: str) -> TopicPartition:
    t = TaskId.parse(task)
    return TopicPartition(TOPICS[t.subtopology], t.partition)


class _Topology:
    def source_topics(self) -> list[str]:
        return list(TOPICS)

    def task_partitions(self, partition_counts: Mapping[str, int]) -> dict[TaskId, frozenset[TopicPartition]]:
        return {
            TaskId(s, p): frozenset({TopicPartition(topic, p)})
            for s, topic in enumerate(TOPICS)
            for p in range(partition_counts[topic])
        }

    def is_stateful(self, task: TaskId) -> bool:
        return task.subtopology == 1

    def store_names(self, task: TaskId) -> frozenset[str]:
        return frozenset({"counts"}) if task.subtopology == 1 else frozenset()


class _Host:
    name = "leader"

    def __init__(self, end_sums: Mapping[str, int]) -> None:
        self.process_id = uuid.UUID(PIDS["B"])
        self._end_sums = {TaskId.parse(t): s for t, s in end_sums.items()}

    async def subscription_info(self) -> SubscriptionInfo:
        raise AssertionError("not called on the leader's assign path")

    async def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        return {t: self._end_sums[t] for t in stateful_tasks}

    def on_assignment_info(self, info: AssignmentInfo, partitions: list[TopicPartition]) -> None:
        raise AssertionError("not called on the leader's assign path")


class _Recorder:
    application_id = "seed000"
    assignor_name = "high_availability"

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def previous_event(self) -> Mapping[str, Any] | None:
        return None

    def generation(self) -> int | None:
        return None

    def record(self, event: dict[str, Any]) -> None:
        self.events.append(event)


def _tasks(names: list[str]) -> frozenset[TaskId]:
    return frozenset(TaskId.parse(t) for t in names)


def _subscriptions(round_: Mapping[str, Any]) -> dict[str, Subscription]:
    """What each thread sent, as the runtime encodes it (its open tasks go in the previous-task lists)."""
    subs = {}
    for member, sent in round_["members"].items():
        info = SubscriptionInfo(
            uuid.UUID(PIDS[member[0]]),
            {TaskId.parse(t): s for t, s in sent["task_offset_sums"].items()},
            _tasks(sent["prev_active"]),
            _tasks(sent["prev_standby"]),
        )
        subs[member] = Subscription(TOPICS, info.encode(), tuple(_partition(t) for t in sent["owned"]))
    return subs


async def _replay(round_: Mapping[str, Any]) -> dict[str, Any]:
    configs = AssignmentConfigs(**FIXTURE["config"])
    recorder = _Recorder()
    assignor = StreamsPartitionAssignor(
        _Host(round_["changelog_end_offset_sums"]),
        _Topology(),
        resolve_task_assignor("high_availability"),
        configs,
        recorder,
    )
    await assignor.assign(dict.fromkeys(TOPICS, FIXTURE["partitions"]), _subscriptions(round_))
    [event] = recorder.events
    return event


def _by_client(event: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {NAMES[c["process_id"]]: c for c in event["clients"]}


@pytest.mark.parametrize("round_", [PROBING, FOLLOWUP], ids=["probing", "followup"])
async def test_replayed_round_assigns_what_the_run_recorded(round_: Mapping[str, Any]) -> None:
    clients = _by_client(await _replay(round_))
    assert {
        name: {"active": c["active"], "standby": sorted(c["standby"] + c["warmup"])} for name, c in clients.items()
    } == round_["recorded"]
    threads = {t["member_id"]: t for c in clients.values() for t in c["threads"]}
    assert {m: {k: t[k] for k in ("active", "standby", "pending_revocation")} for m, t in threads.items()} == round_[
        "recorded_threads"
    ]


async def test_a_task_moved_in_a_probing_round_goes_back_in_its_followup_when_nobody_is_caught_up() -> None:
    probing = _by_client(await _replay(PROBING))
    # A's warmup of 1_1 is caught up (lag 0): 1_1 moves from B, withheld until B revokes it, kept as A's standby
    assert probing["A"]["lags"]["1_1"] == 0 and probing["B"]["lags"]["1_1"] == -2
    assert "1_1" in probing["A"]["active"] and "1_1" not in probing["B"]["active"]
    assert [t["pending_revocation"] for t in probing["A"]["threads"]] == [[], ["1_1"]]

    followup = _by_client(await _replay(FOLLOWUP))
    # B closed 1_1: its checkpoint holds the last written offset (end - 1); A's warmup missed B's last commit flush
    assert followup["B"]["lags"]["1_1"] == 1 and followup["A"]["lags"]["1_1"] == 33
    assert "1_1" in followup["B"]["active"] and "1_1" in followup["A"]["warmup"]


async def test_followup_round_previous_tasks_are_kafka_streams_initialize_prev_tasks() -> None:
    """Owned partitions and -2 sums make the previous actives; every other reported task a previous standby
    (Kafka Streams' ClientState.initializePrevTasks), whatever previous-task lists the threads sent."""
    clients = _by_client(await _replay(FOLLOWUP))
    previous = {name: (c["previous_active"], c["previous_standby"]) for name, c in clients.items()}
    assert previous == {
        # A closed 1_0 (revoked in the probing round, checkpoint on disk) and runs its warmup 1_1
        "A": (["0_4", "1_2", "1_4"], ["1_0", "1_1"]),
        # B closed 1_1 on revocation: nobody owns its partition, B is its previous owner only through its state
        "B": (["1_3", "1_5"], ["1_1", "1_2"]),
        # C's second thread had not applied the probing round's assignment: it still owns 0_2
        "C": (["0_0", "0_1", "0_2", "0_3"], ["1_0"]),
    }
