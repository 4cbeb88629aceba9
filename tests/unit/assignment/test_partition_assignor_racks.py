"""KIP-925 inputs on the leader: each client's rack from its members' subscriptions (`client.rack`), each task's
source and changelog partitions with their replicas' racks (no broker: fake topology and host)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

import pytest
from aiokafka.structs import TopicPartition

from streamlet.assignment.api import ApplicationState, AssignmentConfigs, TaskAssignment, TaskTopicPartition
from streamlet.assignment.high_availability import HighAvailabilityTaskAssignor
from streamlet.assignment.partition_assignor import StreamsPartitionAssignor
from streamlet.assignment.protocol import AssignmentInfo, SubscriptionInfo
from streamlet.kafka.group.consumer_protocol import Subscription
from streamlet.task_id import TaskId

A, B = uuid.UUID(int=1), uuid.UUID(int=2)
COUNTS = {"in": 2}
CHANGELOG = "app-counts-changelog"
RACKS = {("in", 0): frozenset({"az-2"}), ("in", 1): frozenset({"az-1"})}
RACKS |= {(CHANGELOG, 0): frozenset({"az-1", "az-2"}), (CHANGELOG, 1): frozenset({"az-1", "az-2"})}


class _Topology:
    def source_topics(self) -> list[str]:
        return ["in"]

    def task_partitions(self, partition_counts: Mapping[str, int]) -> dict[TaskId, frozenset[TopicPartition]]:
        return {TaskId(0, p): frozenset({TopicPartition("in", p)}) for p in range(partition_counts["in"])}

    def is_stateful(self, task: TaskId) -> bool:
        return True

    def store_names(self, task: TaskId) -> frozenset[str]:
        return frozenset({"counts"})

    def changelog_partitions(self, task: TaskId) -> dict[str, TopicPartition]:
        return {"counts": TopicPartition(CHANGELOG, task.partition)}


class _Host:
    name = "leader"
    process_id = A

    def __init__(self) -> None:
        self.described: list[list[str]] = []

    async def subscription_info(self) -> SubscriptionInfo:
        return SubscriptionInfo(A)

    async def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        return dict.fromkeys(stateful_tasks, 0)

    async def replica_racks(self, topics: list[str]) -> dict[tuple[str, int], frozenset[str]]:
        self.described.append(topics)
        return dict(RACKS)

    def on_assignment_info(self, info: AssignmentInfo, partitions: list[TopicPartition]) -> None:
        raise AssertionError("not called on the leader's assign path")


class _Recording(HighAvailabilityTaskAssignor):
    def __init__(self, rack_aware_assignment_strategy: str | None = None) -> None:
        super().__init__(rack_aware_assignment_strategy)
        self.states: list[ApplicationState] = []

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        self.states.append(application_state)
        return super().assign(application_state)


def _members(racks: Mapping[str, tuple[uuid.UUID, str | None]]) -> dict[str, Subscription]:
    return {
        member: Subscription(("in",), SubscriptionInfo(pid).encode(), rack_id=rack)
        for member, (pid, rack) in racks.items()
    }


async def _assign(
    strategy: str, members: Mapping[str, tuple[uuid.UUID, str | None]]
) -> tuple[_Host, ApplicationState, dict[str, AssignmentInfo]]:
    host, task_assignor = _Host(), _Recording()
    configs = AssignmentConfigs(rack_aware_assignment_strategy=strategy)
    result = await StreamsPartitionAssignor(host, _Topology(), task_assignor, configs).assign(COUNTS, _members(members))
    return host, task_assignor.states[0], {m: AssignmentInfo.decode(a.user_data or b"") for m, a in result.items()}


async def test_clients_racks_and_task_partitions_reach_the_task_assignor() -> None:
    host, state, infos = await _assign("min_traffic", {"a-1": (A, "az-1"), "b-1": (B, "az-2")})
    assert host.described == [[CHANGELOG, "in"]]
    assert {pid: s.rack_id for pid, s in state.kafka_streams_states(False).items()} == {A: "az-1", B: "az-2"}
    assert state.all_tasks[TaskId(0, 1)].topic_partitions == frozenset(
        {
            TaskTopicPartition(("in", 1), is_source=True, is_changelog=False, rack_ids=frozenset({"az-1"})),
            TaskTopicPartition((CHANGELOG, 1), is_source=False, is_changelog=True, rack_ids=RACKS[(CHANGELOG, 1)]),
        }
    )
    # min_traffic: each task runs in the rack of its source partition's replica
    assert {m: i.active_tasks for m, i in infos.items()} == {"a-1": (TaskId(0, 1),), "b-1": (TaskId(0, 0),)}


async def test_without_client_racks_the_cluster_is_not_asked() -> None:
    host, state, _ = await _assign("min_traffic", {"a-1": (A, None), "b-1": (B, None)})
    assert host.described == []
    assert all(not info.topic_partitions for info in state.all_tasks.values())


async def test_an_assignor_named_with_a_strategy_gets_the_racks_too() -> None:
    """`task_assignor=high_availability_min_traffic` chooses KIP-925 by name, with the config's strategy "none"."""
    host, task_assignor = _Host(), _Recording("min_traffic")
    members = _members({"a-1": (A, "az-1"), "b-1": (B, "az-2")})
    assignor = StreamsPartitionAssignor(host, _Topology(), task_assignor, AssignmentConfigs())
    result = await assignor.assign(COUNTS, members)
    assert host.described == [[CHANGELOG, "in"]]
    infos = {m: AssignmentInfo.decode(a.user_data or b"") for m, a in result.items()}
    assert {m: i.active_tasks for m, i in infos.items()} == {"a-1": (TaskId(0, 1),), "b-1": (TaskId(0, 0),)}


async def test_consumers_of_one_client_in_different_racks_leave_it_without_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="streamlet.assignment"):
        _, state, _ = await _assign("min_traffic", {"a-1": (A, "az-1"), "a-2": (A, "az-2"), "b-1": (B, "az-2")})
    assert {pid: s.rack_id for pid, s in state.kafka_streams_states(False).items()} == {A: None, B: "az-2"}
    assert f"consumers of client {A} report different racks (az-1, az-2)" in caplog.text
