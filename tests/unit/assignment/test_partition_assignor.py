"""The leader's StreamsPartitionAssignor on fake topology, cluster and host (no broker)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from aiokafka.structs import TopicPartition

from streamlet.assignment.api import (
    ApplicationState,
    AssignedTask,
    AssignmentConfigs,
    AssignmentError,
    KafkaStreamsAssignment,
    TaskAssignment,
    TaskType,
)
from streamlet.assignment.partition_assignor import StreamsPartitionAssignor
from streamlet.assignment.protocol import NO_FOLLOWUP, AssignmentInfo, HostTasks, SubscriptionInfo
from streamlet.assignment.registry import resolve_task_assignor
from streamlet.errors import TaskAssignmentError
from streamlet.kafka.group.consumer_protocol import Assignment, Subscription
from streamlet.task_id import TaskId

PID = uuid.UUID(int=1)
TASKS = [TaskId(0, 0), TaskId(0, 1)]


class _Topology:
    def source_topics(self) -> list[str]:
        return ["in"]

    def task_partitions(self, partition_counts: Mapping[str, int]) -> dict[TaskId, frozenset[TopicPartition]]:
        return {TaskId(0, p): frozenset({TopicPartition("in", p)}) for p in range(partition_counts["in"])}

    def is_stateful(self, task: TaskId) -> bool:
        return False

    def store_names(self, task: TaskId) -> frozenset[str]:
        return frozenset()


#: partition counts as the group membership hands them to the leader
COUNTS = {"in": 2}


class _Host:
    name = "leader"
    process_id = PID

    async def subscription_info(self) -> SubscriptionInfo:
        return SubscriptionInfo(PID)

    async def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        return {}

    def on_assignment_info(self, info: AssignmentInfo, partitions: list[TopicPartition]) -> None:
        raise AssertionError("not called on the leader's assign path")


class _ListeningAssignor:
    """Returns a fixed assignment and records `on_assignment_computed` calls."""

    def __init__(self, assignment: KafkaStreamsAssignment) -> None:
        self._assignment = assignment
        self.computed: list[tuple[dict[str, Assignment], dict[str, Any], AssignmentError]] = []

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        return TaskAssignment([self._assignment])

    def on_assignment_computed(
        self, assignment: Mapping[str, Assignment], subscription: Any, error: AssignmentError
    ) -> None:
        self.computed.append((dict(assignment), dict(subscription), error))


def _members(owned: Mapping[str, tuple[TopicPartition, ...]] | None = None) -> dict[str, Subscription]:
    user_data = SubscriptionInfo(PID).encode()
    owned = owned or {}
    return {m: Subscription(("in",), user_data, owned.get(m, ())) for m in ("c2", "c1")}


async def _assign(
    task_assignor: _ListeningAssignor, owned: Mapping[str, tuple[TopicPartition, ...]] | None = None
) -> dict[str, Assignment]:
    assignor = StreamsPartitionAssignor(_Host(), _Topology(), task_assignor, AssignmentConfigs())
    return await assignor.assign(COUNTS, _members(owned))


async def test_assignment_computed_is_reported_with_what_members_are_sent() -> None:
    actives = KafkaStreamsAssignment(PID, [AssignedTask(t, TaskType.ACTIVE) for t in TASKS], 5_000)
    task_assignor = _ListeningAssignor(actives)
    result = await _assign(task_assignor)

    assert task_assignor.computed == [(result, {m: SubscriptionInfo(PID) for m in ("c1", "c2")}, AssignmentError.NONE)]
    infos = {m: AssignmentInfo.decode(a.user_data or b"") for m, a in result.items()}
    assert {m: i.active_tasks for m, i in infos.items()} == {"c1": (TaskId(0, 0),), "c2": (TaskId(0, 1),)}
    # the probing deadline goes to the client's first consumer only
    assert {m: i.next_rebalance_ms for m, i in infos.items()} == {"c1": 5_000, "c2": NO_FOLLOWUP}


async def test_invalid_assignment_is_reported_then_fails_the_rebalance() -> None:
    stranger = KafkaStreamsAssignment(uuid.UUID(int=2), [AssignedTask(t, TaskType.ACTIVE) for t in TASKS])
    task_assignor = _ListeningAssignor(stranger)
    with pytest.raises(TaskAssignmentError, match="MISSING_PROCESS_ID"):
        await _assign(task_assignor)
    assert [(a, e) for a, _, e in task_assignor.computed] == [({}, AssignmentError.MISSING_PROCESS_ID)]


async def test_every_member_learns_every_hosts_tasks() -> None:
    """Kafka Streams' partitionsByHost: each member's assignment names the host of every client and its tasks."""
    other = uuid.UUID(int=2)
    plan = [
        KafkaStreamsAssignment(
            PID, [AssignedTask(TASKS[0], TaskType.ACTIVE), AssignedTask(TASKS[1], TaskType.STANDBY)]
        ),
        KafkaStreamsAssignment(other, [AssignedTask(TASKS[1], TaskType.ACTIVE)]),
    ]

    class _Plan(_ListeningAssignor):
        def assign(self, application_state: ApplicationState) -> TaskAssignment:
            return TaskAssignment(plan)

    members = {
        "a1": Subscription(("in",), SubscriptionInfo(PID, host_info="a:1").encode()),
        "b1": Subscription(("in",), SubscriptionInfo(other, host_info="b:2").encode()),
    }

    class _Stateful(_Topology):
        def is_stateful(self, task: TaskId) -> bool:
            return True

        def store_names(self, task: TaskId) -> frozenset[str]:
            return frozenset({"counts"})

    class _StatefulHost(_Host):
        async def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
            return dict.fromkeys(stateful_tasks, 0)

    assignor = StreamsPartitionAssignor(_StatefulHost(), _Stateful(), _Plan(plan[0]), AssignmentConfigs())
    result = await assignor.assign(COUNTS, members)
    expected = {
        "a:1": HostTasks(frozenset({TASKS[0]}), frozenset({TASKS[1]})),
        "b:2": HostTasks(frozenset({TASKS[1]}), frozenset()),
    }
    for member in ("a1", "b1"):
        assert dict(AssignmentInfo.decode(result[member].user_data or b"").tasks_by_host) == expected


async def test_a_task_still_owned_by_another_consumer_is_withheld_until_the_followup_round() -> None:
    """Kafka Streams' COOPERATIVE rule: c1 still owns in-1, which the plan moves to c2; c2 gets it only after c1
    revoked it (it is told to rejoin at once), while in-0, which nobody owns, is assigned now."""
    actives = KafkaStreamsAssignment(PID, [AssignedTask(t, TaskType.ACTIVE) for t in TASKS])
    first = await _assign(_ListeningAssignor(actives), {"c1": (TopicPartition("in", 1),)})
    infos = {m: AssignmentInfo.decode(a.user_data or b"") for m, a in first.items()}
    assert {m: (a.partitions, infos[m].active_tasks) for m, a in first.items()} == {
        "c1": ((TopicPartition("in", 0),), (TaskId(0, 0),)),
        "c2": ((), ()),
    }
    assert {m: i.next_rebalance_ms for m, i in infos.items()} == {"c1": NO_FOLLOWUP, "c2": 0}

    # the follow-up round: c1 revoked in-1 (it owns in-0 now), so c2 takes its task
    second = await _assign(_ListeningAssignor(actives), {"c1": (TopicPartition("in", 0),)})
    assert {m: a.partitions for m, a in second.items()} == {
        "c1": (TopicPartition("in", 0),),
        "c2": (TopicPartition("in", 1),),
    }


@pytest.mark.parametrize(
    "name", ["high_availability", "balanced", "sticky", "legacy_sticky", "fallback_prior", "faust"]
)
async def test_every_named_assignor_runs_on_the_leader(name: str) -> None:
    assignor = StreamsPartitionAssignor(_Host(), _Topology(), resolve_task_assignor(name), AssignmentConfigs())
    infos = {
        m: AssignmentInfo.decode(a.user_data or b"") for m, a in (await assignor.assign(COUNTS, _members())).items()
    }
    assert sorted(t for i in infos.values() for t in i.active_tasks) == TASKS
    probing = name == "fallback_prior"  # it always asks for a follow-up after probing.rebalance.interval.ms
    assert any(i.next_rebalance_ms != NO_FOLLOWUP for i in infos.values()) == probing


async def test_client_tags_travel_from_the_subscription_to_the_task_assignor() -> None:
    """KIP-708: the leader gives each client the tags of its first member's subscription, as ClientMetadata does."""
    other = uuid.UUID(int=2)
    seen: dict[uuid.UUID, dict[str, str]] = {}

    class _Recording(_ListeningAssignor):
        def assign(self, application_state: ApplicationState) -> TaskAssignment:
            seen.update({p: s.client_tags for p, s in application_state.kafka_streams_states(False).items()})
            return TaskAssignment([KafkaStreamsAssignment(PID, []), KafkaStreamsAssignment(other, [])])

    members = {
        "a1": Subscription(("in",), SubscriptionInfo(PID, client_tags={"zone": "a"}).encode()),
        "a2": Subscription(("in",), SubscriptionInfo(PID, client_tags={"zone": "a"}).encode()),
        "b1": Subscription(("in",), SubscriptionInfo(other).encode()),
    }
    assignor = StreamsPartitionAssignor(
        _Host(), _Topology(), _Recording(KafkaStreamsAssignment(PID, [])), AssignmentConfigs()
    )
    await assignor.assign(COUNTS, members)
    assert seen == {PID: {"zone": "a"}, other: {}}
