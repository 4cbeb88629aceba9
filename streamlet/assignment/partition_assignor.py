"""StreamsPartitionAssignor: the group's partition assignor that places tasks, not partitions.

Every stream thread's consumer carries one instance. On each join the thread's subscription (process
id, task offset sums, previous tasks) goes out as user data; the group leader's instance decodes all of
them, groups consumers into clients by process id (capacity = number of threads), derives each client's
previous tasks from its owned partitions and offset sums as Kafka Streams does (the previous-task lists
the threads send are not read), computes lags against changelog end offsets it fetches then, runs the
configured `TaskAssignor`, spreads each client's tasks over its threads, withholds the tasks whose
partitions another consumer still owns (cooperative rebalancing: they move in the follow-up round), and
returns every member's partitions plus its active/standby tasks and any follow-up (probing) rebalance
deadline.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, Protocol

from aiokafka.structs import TopicPartition

from streamlet.assignment.api import (
    ApplicationState,
    AssignmentConfigs,
    AssignmentError,
    KafkaStreamsAssignment,
    TaskAssignor,
    TaskInfo,
    TaskTopicPartition,
    notify_assignment_computed,
    validate_task_assignment,
)
from streamlet.assignment.client_state import LONG_MAX, ClientState, Partition
from streamlet.assignment.history import ThreadTasks, build_assignment_event
from streamlet.assignment.java_collections import java_hash_set_order
from streamlet.assignment.process_id import java_uuid_key
from streamlet.assignment.protocol import (
    NO_FOLLOWUP,
    AssignmentInfo,
    AssignorErrorCode,
    HostTasks,
    SubscriptionInfo,
)
from streamlet.assignment.thread_assignment import (
    apply_pending_revocations,
    distribute_tasks_to_threads,
    followup_rebalance_times,
    sorted_member_ids,
)
from streamlet.errors import MissingTopicError, TaskAssignmentError, TopologyError
from streamlet.kafka.group.consumer_protocol import Assignment, Subscription
from streamlet.task_id import TaskId

log = logging.getLogger("streamlet.assignment")


class TaskTopology(Protocol):
    """What the assignor needs to know of the topology."""

    def source_topics(self) -> list[str]: ...

    def task_partitions(self, partition_counts: Mapping[str, int]) -> dict[TaskId, frozenset[TopicPartition]]: ...

    def is_stateful(self, task: TaskId) -> bool: ...

    def store_names(self, task: TaskId) -> frozenset[str]: ...

    def changelog_partitions(self, task: TaskId) -> Mapping[str, TopicPartition]: ...


class AssignorHost(Protocol):
    """The stream thread behind one assignor instance (and, through it, its client)."""

    name: str
    process_id: uuid.UUID

    async def subscription_info(self) -> SubscriptionInfo:
        """Before every join (the thread locks the task directories it may report)."""
        ...

    async def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        """On the leader, during the assignment: fetched then."""
        ...

    async def replica_racks(self, topics: list[str]) -> dict[Partition, frozenset[str]]:
        """On the leader, with rack-aware assignment on (KIP-925): each partition's replica racks, asked then."""
        ...

    def on_assignment_info(self, info: AssignmentInfo, partitions: list[TopicPartition]) -> None: ...


class AssignmentRecorder(Protocol):
    """Where the leader records each rebalance's assignment-history event (`streamlet.assignment.history`)."""

    application_id: str
    assignor_name: str

    def previous_event(self) -> Mapping[str, Any] | None: ...

    def generation(self) -> int | None: ...

    def record(self, event: dict[str, Any]) -> None: ...


class StreamsPartitionAssignor:
    """One instance per stream thread; the group membership calls `subscription_user_data` before every join,
    `assign` on the leader and `on_assignment` on every member."""

    name = "streamlet"

    def __init__(
        self,
        host: AssignorHost,
        topology: TaskTopology,
        task_assignor: TaskAssignor,
        configs: AssignmentConfigs,
        history: AssignmentRecorder | None = None,
    ) -> None:
        self._host = host
        self._topology = topology
        self._task_assignor = task_assignor
        self._configs = configs
        self._history = history

    async def subscription_user_data(self, topics: object) -> bytes:
        del topics
        return (await self._host.subscription_info()).encode()

    def on_assignment(self, assignment: Assignment, generation_id: int) -> None:
        del generation_id
        info = AssignmentInfo.decode(assignment.user_data or b"")
        self._host.on_assignment_info(info, list(assignment.partitions))

    async def assign(
        self, partition_counts: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        decoded = {member: SubscriptionInfo.decode(sub.user_data or b"") for member, sub in subscriptions.items()}
        owned = {member: sub.owned_partitions for member, sub in subscriptions.items()}
        racks = {member: sub.rack_id for member, sub in subscriptions.items()}
        try:
            return await self._plan(partition_counts, decoded, owned, racks)
        except (MissingTopicError, TopologyError) as exc:
            log.error("assignment failed, every member gets an error: %s", exc)
            error = AssignmentInfo(error_code=AssignorErrorCode.INCOMPLETE_SOURCE_TOPIC_METADATA).encode()
            return {m: Assignment((), error) for m in subscriptions}

    async def _plan(
        self,
        partition_counts: Mapping[str, int],
        subscriptions: Mapping[str, SubscriptionInfo],
        owned_partitions: Mapping[str, tuple[TopicPartition, ...]],
        racks: Mapping[str, str | None],
    ) -> dict[str, Assignment]:
        counts: dict[str, int] = {}
        for topic in self._topology.source_topics():
            if not partition_counts.get(topic):
                raise MissingTopicError(f"no metadata for source topic {topic}")
            counts[topic] = partition_counts[topic]
        task_partitions = self._topology.task_partitions(counts)
        stateful = sorted(t for t in task_partitions if self._topology.is_stateful(t))
        end_sums = await self._host.changelog_end_offset_sums(stateful)
        all_owned: set[tuple[str, int]] = set()

        clients: dict[uuid.UUID, ClientState] = {}
        consumers: dict[uuid.UUID, list[str]] = defaultdict(list)
        host_infos: dict[uuid.UUID, str] = {}
        for member in sorted_member_ids(subscriptions):
            sub = subscriptions[member]
            # as Kafka Streams' ClientMetadata: the client's tags and rack come from its first member's subscription
            client = clients.setdefault(
                sub.process_id, ClientState(client_tags=sub.client_tags, rack_id=racks.get(member))
            )
            if client.rack_id != racks.get(member) and client.rack_id is not None:
                log.error(
                    "consumers of client %s report different racks (%s, %s): rack-aware assignment is off",
                    sub.process_id,
                    client.rack_id,
                    racks.get(member),
                )
                client.rack_id = None  # as Kafka Streams' rack validation: a client with no single rack disables it
            known = {t: s for t, s in sub.task_offset_sums.items() if t in task_partitions}
            owned = [(tp.topic, tp.partition) for tp in owned_partitions.get(member, ())]
            all_owned.update(owned)
            client.add_consumer(member, known, owned)
            consumers[sub.process_id].append(member)
            if sub.host_info:
                host_infos[sub.process_id] = sub.host_info
        task_for_partition = {(tp.topic, tp.partition): t for t, tps in task_partitions.items() for tp in tps}
        for client in clients.values():
            # as Kafka Streams' ClientState.initializePrevTasks, not the threads' open tasks: after a cooperative
            # revocation the previous owner's closed task (state on disk, partition no longer owned) is a
            # previous standby, and an assigned task not opened yet (its partition owned) a previous active
            client.initialize_prev_tasks(task_for_partition)
            client.compute_task_lags(end_sums)

        infos = await self._task_infos(task_partitions, end_sums, any(c.rack_id for c in clients.values()))
        state = ApplicationState(
            infos,
            self._configs,
            clients,
            now_ms=int(time.time() * 1000),
            leader_process_id=self._host.process_id,
            host_infos=host_infos,
        )
        assignment = self._task_assignor.assign(state)
        error = validate_task_assignment(state, assignment)
        if error is not AssignmentError.NONE:
            notify_assignment_computed(self._task_assignor, {}, subscriptions, error)
            raise TaskAssignmentError(
                f"task assignor {type(self._task_assignor).__name__} returned an invalid assignment: {error.name}"
            )
        by_pid = assignment.by_process_id()
        tasks_by_host = _tasks_by_host(by_pid, host_infos)

        result: dict[str, Assignment] = {}
        followups: list[tuple[str, int]] = []
        threads: dict[uuid.UUID, list[ThreadTasks]] = {}
        for pid in sorted(clients, key=java_uuid_key):
            client_assignment = by_pid.get(pid)
            active = client_assignment.active_tasks() if client_assignment else []
            standby = client_assignment.standby_tasks() if client_assignment else []
            members = sorted_member_ids(consumers[pid])
            per_thread = distribute_tasks_to_threads(members, active, standby, stateful, clients[pid].prev_tasks_by_lag)
            # a task whose partition another consumer still owns waits for the follow-up round (under EAGER
            # nothing is owned now, so nothing waits)
            this_round = apply_pending_revocations(
                per_thread,
                clients[pid].owned_partitions,
                all_owned,
                {t: [(tp.topic, tp.partition) for tp in task_partitions[t]] for t in active},
                clients[pid].previous_standby_tasks,
                stateful,
            )
            for member in members:
                for task in this_round[member].pending_revocation:
                    log.info(
                        "stream-thread [%s-consumer] Removing task %s from %s active assignment until it is safely "
                        "revoked in followup rebalance",
                        self._host.name,
                        task,
                        member,
                    )
            deadline = client_assignment.followup_rebalance_deadline if client_assignment else None
            times = followup_rebalance_times(members, {m: this_round[m].pending_revocation for m in members}, deadline)
            threads[pid] = [
                ThreadTasks(m, this_round[m].active, this_round[m].standby, this_round[m].pending_revocation)
                for m in members
            ]
            for member in members:
                tasks = this_round[member]
                next_ms = NO_FOLLOWUP if times[member] == LONG_MAX else times[member]
                if next_ms != NO_FOLLOWUP:
                    followups.append((member, next_ms))
                by_topic: dict[str, list[int]] = defaultdict(list)
                for task in tasks.active:
                    for tp in task_partitions[task]:
                        by_topic[tp.topic].append(tp.partition)
                info = AssignmentInfo(
                    tuple(sorted(tasks.active)), tuple(sorted(tasks.standby)), next_ms, tasks_by_host=tasks_by_host
                )
                partitions = tuple(TopicPartition(t, p) for t in sorted(by_topic) for p in sorted(by_topic[t]))
                result[member] = Assignment(partitions, info.encode())
        self._log(task_partitions, stateful, by_pid, clients, followups)
        self._record(state.now_ms, clients, host_infos, sorted(task_partitions), stateful, by_pid, threads)
        notify_assignment_computed(self._task_assignor, result, subscriptions, AssignmentError.NONE)
        return result

    async def _task_infos(
        self,
        task_partitions: Mapping[TaskId, frozenset[TopicPartition]],
        end_sums: Mapping[TaskId, int],
        with_racks: bool,
    ) -> list[TaskInfo]:
        """Kafka Streams' `TaskInfo`s; `with_racks` (some client has a rack: KIP-925 can only be on then, whichever
        way its strategy was chosen, config or assignor name), each with its source and changelog partitions and
        their replicas' racks, asked of the cluster now (`RackUtils.annotateTopicPartitionsWithRackInfo`)."""
        stateful = {t: t in end_sums for t in task_partitions}
        if not with_racks:
            return [
                TaskInfo(t, stateful[t], self._topology.store_names(t) if stateful[t] else frozenset())
                for t in task_partitions
            ]
        changelogs: dict[TaskId, set[Partition]] = {t: set() for t in task_partitions}
        for t in (t for t in task_partitions if stateful[t]):
            changelogs[t] = {(tp.topic, tp.partition) for tp in self._topology.changelog_partitions(t).values()}
        sources = {t: {(tp.topic, tp.partition) for tp in tps} for t, tps in task_partitions.items()}
        topics = sorted({topic for ps in (*sources.values(), *changelogs.values()) for topic, _ in ps})
        racks = await self._host.replica_racks(topics)
        return [
            TaskInfo(
                t,
                stateful[t],
                self._topology.store_names(t) if stateful[t] else frozenset(),
                frozenset(
                    TaskTopicPartition(p, p in sources[t], p in changelogs[t], racks.get(p))
                    for p in sources[t] | changelogs[t]
                ),
            )
            for t in task_partitions
        ]

    def _record(
        self,
        now_ms: int,
        clients: Mapping[uuid.UUID, ClientState],
        host_infos: Mapping[uuid.UUID, str],
        all_tasks: list[TaskId],
        stateful: list[TaskId],
        by_pid: Mapping[uuid.UUID, KafkaStreamsAssignment],
        threads: Mapping[uuid.UUID, list[ThreadTasks]],
    ) -> None:
        """Append this rebalance's assignment-history event; a failure here never fails the rebalance."""
        history = self._history
        if history is None:
            return
        try:
            event = build_assignment_event(
                application_id=history.application_id,
                generation=history.generation(),
                timestamp_ms=now_ms,
                assignor=history.assignor_name,
                leader_process_id=self._host.process_id,
                leader_thread=self._host.name,
                configs=self._configs,
                all_tasks=all_tasks,
                stateful_tasks=stateful,
                clients=clients,
                host_infos=host_infos,
                assignment=by_pid,
                threads=threads,
                previous=history.previous_event(),
            )
            history.record(event)
        except Exception:
            log.exception("stream-thread [%s-consumer] could not record the assignment history", self._host.name)

    def _log(
        self,
        task_partitions: Mapping[TaskId, object],
        stateful: list[TaskId],
        by_pid: Mapping[uuid.UUID, object],
        clients: Mapping[uuid.UUID, ClientState],
        followups: list[tuple[str, int]],
    ) -> None:
        """Kafka Streams' leader log lines (seed 000), so experiments can parse them."""
        all_tasks = java_hash_set_order(sorted(task_partitions), TaskId.java_hash_code)
        lines = [
            f"stream-thread [{self._host.name}-consumer] Assigned tasks {_fmt(all_tasks)} including stateful "
            f"{_fmt(java_hash_set_order(stateful, TaskId.java_hash_code))} to clients as: "
        ]
        for pid in sorted(clients, key=java_uuid_key):
            ka = by_pid.get(pid)
            active = ka.active_tasks() if ka else []  # type: ignore[attr-defined]
            standby = ka.standby_tasks() if ka else []  # type: ignore[attr-defined]
            lines.append(f"{pid}=[activeTasks: ({_fmt(sorted(active))}) standbyTasks: ({_fmt(sorted(standby))})]")
        log.info("\n".join(lines) + ".")
        if followups:
            for member, deadline in followups:
                log.info(
                    "stream-thread [%s-consumer] Requesting followup rebalance be scheduled by %s for %d ms "
                    "to probe for caught-up replica tasks.",
                    self._host.name,
                    member,
                    deadline,
                )
        else:
            log.info(
                "stream-thread [%s-consumer] Finished stable assignment of tasks, no followup rebalances required.",
                self._host.name,
            )


def _tasks_by_host(by_pid: Mapping[uuid.UUID, object], host_infos: Mapping[uuid.UUID, str]) -> dict[str, HostTasks]:
    """Every client that set `application_server`: its host and the tasks it runs (Kafka Streams' partitionsByHost).

    Sent to every member, so each client can route an interactive query to the host that owns a key.
    """
    out: dict[str, HostTasks] = {}
    for pid, host in host_infos.items():
        ka = by_pid.get(pid)
        active = ka.active_tasks() if ka else []  # type: ignore[attr-defined]
        standby = ka.standby_tasks() if ka else []  # type: ignore[attr-defined]
        out[host] = HostTasks(frozenset(active), frozenset(standby))
    return out


def _fmt(tasks: list[TaskId]) -> str:
    return "[" + ", ".join(str(t) for t in tasks) + "]"
