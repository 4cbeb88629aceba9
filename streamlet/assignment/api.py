"""The pluggable task-assignor API: Kafka Streams' KIP-924 interfaces (3.8+) in Python shape.

An assignor is a pure function `assign(ApplicationState) -> TaskAssignment`. Keeping the same shape as
Kafka Streams means a Java assignor can be ported line by line, and the leader glue can validate any
assignor's output the same way Kafka Streams does (`validate_task_assignment`).

Differences from Java, all deliberate:
* time is explicit: `ApplicationState.now_ms` and follow-up deadlines are epoch milliseconds (ints), so
  assignors stay pure and testable;
* `ApplicationState.leader_process_id` says which client is the group leader, because Kafka Streams'
  built-in assignor schedules the probing rebalance on the leader's own client only;
* a client's rack (`client_rack`, Kafka's `client.rack`) is `KafkaStreamsState.rack_id`; partition racks are
  `TaskTopicPartition.rack_ids`, from the cluster metadata's replica racks.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from streamlet.assignment.client_state import LONG_MAX, ClientState, Partition
from streamlet.assignment.constrained_priority_set import ConstrainedPrioritySet
from streamlet.assignment.process_id import java_uuid_key
from streamlet.errors import ConfigError, TaskAssignmentError
from streamlet.task_id import TaskId, sorted_tasks, task_order

if TYPE_CHECKING:
    from streamlet.config import StreamsConfig


def java_string_key(text: str) -> bytes:
    """Sort key equal to Java's `String.compareTo` (UTF-16 code units), used for consumer member ids."""
    return text.encode("utf-16-be", "surrogatepass")


# ---- configuration --------------------------------------------------------------------------------------

#: KIP-925 `rack.aware.assignment.strategy` values
RACK_AWARE_ASSIGNMENT_STRATEGIES = ("none", "min_traffic", "balance_subtopology")


@dataclass(frozen=True)
class AssignmentConfigs:
    """The assignment-related settings (`AssignmentConfigs`), with Kafka Streams' defaults."""

    num_standby_replicas: int = 0
    max_warmup_replicas: int = 2
    acceptable_recovery_lag: int = 10_000
    probing_rebalance_interval_ms: int = 600_000
    #: KIP-708: the client tag keys standbys are spread over (empty: the default standby assignor)
    rack_aware_assignment_tags: tuple[str, ...] = ()
    #: KIP-925: "none", "min_traffic" or "balance_subtopology" (see `rack_aware`)
    rack_aware_assignment_strategy: str = "none"
    #: KIP-925 costs; None: the assignor's default (HATA: traffic 10, non-overlap 1)
    rack_aware_assignment_traffic_cost: int | None = None
    rack_aware_assignment_non_overlap_cost: int | None = None

    def __post_init__(self) -> None:
        if self.rack_aware_assignment_strategy not in RACK_AWARE_ASSIGNMENT_STRATEGIES:
            raise ConfigError(
                f"rack_aware_assignment_strategy={self.rack_aware_assignment_strategy!r} is not valid: "
                "expected one of none, min_traffic, balance_subtopology"
            )
        for name in ("rack_aware_assignment_traffic_cost", "rack_aware_assignment_non_overlap_cost"):
            cost = getattr(self, name)
            if cost is not None and (not isinstance(cost, int) or isinstance(cost, bool) or not 0 <= cost <= 2**31 - 1):
                raise ConfigError(f"{name} must be an integer in [0, 2147483647] or unset, got {cost!r}")
        for name in (
            "num_standby_replicas",
            "max_warmup_replicas",
            "acceptable_recovery_lag",
            "probing_rebalance_interval_ms",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{name} must be an integer, got {value!r}")
            if value < 0:
                raise ConfigError(f"{name} must be >= 0, got {value}")
            if value > LONG_MAX:
                raise ConfigError(f"{name} must be <= Long.MAX_VALUE ({LONG_MAX}), got {value}")

    @classmethod
    def from_streams_config(cls, config: StreamsConfig) -> AssignmentConfigs:
        return cls(
            num_standby_replicas=config.num_standby_replicas,
            max_warmup_replicas=config.max_warmup_replicas,
            acceptable_recovery_lag=config.acceptable_recovery_lag,
            probing_rebalance_interval_ms=config.probing_rebalance_interval_ms,
            rack_aware_assignment_tags=tuple(config.rack_aware_assignment_tags),
            rack_aware_assignment_strategy=config.rack_aware_assignment_strategy,
            rack_aware_assignment_traffic_cost=config.rack_aware_assignment_traffic_cost,
            rack_aware_assignment_non_overlap_cost=config.rack_aware_assignment_non_overlap_cost,
        )


# ---- tasks and clients (input) ----------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskTopicPartition:
    """One partition a task reads (source) or restores from (changelog)."""

    topic_partition: Partition
    is_source: bool
    is_changelog: bool
    rack_ids: frozenset[str] | None = None


@dataclass(frozen=True)
class TaskInfo:
    """A task of the topology. Stateful means it has at least one logged store (a changelog)."""

    id: TaskId
    is_stateful: bool
    state_store_names: frozenset[str] = frozenset()
    topic_partitions: frozenset[TaskTopicPartition] = frozenset()


#: The last lag key list `_sorted_lags` sorted: (keys, their sorted order, whether the keys were in order).
_last_lag_keys: tuple[list[TaskId], list[TaskId], bool] = ([], [], True)


def _sorted_lags(lags: Mapping[TaskId, int]) -> dict[TaskId, int]:
    """`lags` with its keys in task order. The clients of one rebalance share one key list (every stateful
    task), usually already in order: it is sorted once, not per client, and an ordered dict is copied in C."""
    global _last_lag_keys
    keys = list(lags)
    last_keys, order, in_order = _last_lag_keys
    if keys != last_keys:
        order = sorted_tasks(keys)
        in_order = order == keys
        _last_lag_keys = (keys, order, in_order)
    return dict(lags) if in_order else {t: lags[t] for t in order}


class KafkaStreamsState:
    """Read-only view of one client (`KafkaStreamsState`), a snapshot of its `ClientState` inputs."""

    def __init__(
        self,
        process_id: uuid.UUID,
        client: ClientState,
        *,
        lags_computed: bool,
        host_info: str | None = None,
    ) -> None:
        self._process_id = process_id
        self._num_threads = client.capacity
        self._consumers = tuple(sorted(client.consumer_to_previous_stateful_tasks, key=java_string_key))
        self._prev_active = tuple(sorted_tasks(client.previous_active_tasks))
        self._prev_standby = tuple(sorted_tasks(client.previous_standby_tasks))
        self._lags: dict[TaskId, int] | None = _sorted_lags(client.task_lags) if lags_computed else None
        self._prev_by_consumer = {
            member: client.prev_tasks_by_lag(member) for member in client.consumer_to_previous_stateful_tasks
        }
        self._host_info = host_info
        self._client_tags = dict(client.client_tags)
        self._rack_id = client.rack_id

    @property
    def client_tags(self) -> dict[str, str]:
        return dict(self._client_tags)

    @property
    def rack_id(self) -> str | None:
        """The client's rack (all its consumers agree), or None if unknown."""
        return self._rack_id

    @property
    def process_id(self) -> uuid.UUID:
        return self._process_id

    @property
    def num_processing_threads(self) -> int:
        return self._num_threads

    @property
    def consumer_client_ids(self) -> tuple[str, ...]:
        return self._consumers

    @property
    def previous_active_tasks(self) -> tuple[TaskId, ...]:
        return self._prev_active

    @property
    def previous_standby_tasks(self) -> tuple[TaskId, ...]:
        return self._prev_standby

    @property
    def host_info(self) -> str | None:
        return self._host_info

    def _require_lags(self) -> dict[TaskId, int]:
        if self._lags is None:
            raise TaskAssignmentError(
                f"lags were not computed for client {self._process_id}: "
                "call kafka_streams_states(compute_task_lags=True)"
            )
        return self._lags

    def lag_for(self, task: TaskId) -> int:
        lags = self._require_lags()
        try:
            return lags[task]
        except KeyError:
            raise TaskAssignmentError(f"no lag known for task {task}: it is not a stateful task") from None

    def prev_tasks_by_lag(self, consumer_client_id: str) -> list[TaskId]:
        self._require_lags()
        return list(self._prev_by_consumer.get(consumer_client_id, ()))

    def stateful_tasks_to_lag_sums(self) -> dict[TaskId, int]:
        return dict(self._require_lags())

    def __repr__(self) -> str:
        return f"KafkaStreamsState({self._process_id}, threads={self._num_threads})"


class ApplicationState:
    """Everything an assignor may read: clients, tasks, configs, and the leader's clock."""

    def __init__(
        self,
        all_tasks: Mapping[TaskId, TaskInfo] | Iterable[TaskInfo],
        assignment_configs: AssignmentConfigs,
        clients: Mapping[uuid.UUID, ClientState],
        *,
        now_ms: int = 0,
        leader_process_id: uuid.UUID | None = None,
        host_infos: Mapping[uuid.UUID, str] | None = None,
    ) -> None:
        infos = list(all_tasks.values()) if isinstance(all_tasks, Mapping) else list(all_tasks)
        self._all_tasks = {info.id: info for info in sorted(infos, key=lambda info: task_order(info.id))}
        self._configs = assignment_configs
        self._clients = {pid: clients[pid] for pid in sorted(clients, key=java_uuid_key)}
        self._host_infos = dict(host_infos or {})
        self._states: dict[bool, dict[uuid.UUID, KafkaStreamsState]] = {}
        self.now_ms = now_ms
        self.leader_process_id = leader_process_id

    @property
    def assignment_configs(self) -> AssignmentConfigs:
        return self._configs

    @property
    def all_tasks(self) -> dict[TaskId, TaskInfo]:
        return dict(self._all_tasks)

    def kafka_streams_states(self, compute_task_lags: bool) -> dict[uuid.UUID, KafkaStreamsState]:
        """Clients in Java UUID order; without lags, the lag methods raise (as in Kafka Streams)."""
        key = bool(compute_task_lags)
        if key not in self._states:
            self._states[key] = {
                pid: KafkaStreamsState(pid, client, lags_computed=key, host_info=self._host_infos.get(pid))
                for pid, client in self._clients.items()
            }
        return dict(self._states[key])


# ---- assignment (output) -----------------------------------------------------------------------------------


class TaskType(enum.Enum):
    ACTIVE = "ACTIVE"
    STANDBY = "STANDBY"


@dataclass(frozen=True)
class AssignedTask:
    task_id: TaskId
    type: TaskType


class KafkaStreamsAssignment:
    """The tasks given to one client, plus an optional follow-up rebalance deadline (epoch ms)."""

    def __init__(
        self,
        process_id: uuid.UUID,
        tasks: Iterable[AssignedTask] = (),
        followup_rebalance_deadline: int | None = None,
    ) -> None:
        self.process_id = process_id
        self._tasks: dict[TaskId, AssignedTask] = {}
        for task in tasks:
            self.assign_task(task)
        self.followup_rebalance_deadline = followup_rebalance_deadline

    @classmethod
    def of(cls, process_id: uuid.UUID, tasks: Iterable[AssignedTask] = ()) -> KafkaStreamsAssignment:
        return cls(process_id, tasks)

    @property
    def tasks(self) -> Mapping[TaskId, AssignedTask]:
        """Read-only live view (Java: unmodifiable map)."""
        return MappingProxyType(self._tasks)

    def assign_task(self, task: AssignedTask) -> None:
        self._tasks[task.task_id] = task

    def remove_task(self, task: AssignedTask) -> None:
        self._tasks.pop(task.task_id, None)

    def with_followup_rebalance(self, deadline_ms: int) -> KafkaStreamsAssignment:
        return KafkaStreamsAssignment(self.process_id, self._tasks.values(), deadline_ms)

    def active_tasks(self) -> list[TaskId]:
        return sorted_tasks(t.task_id for t in self._tasks.values() if t.type is TaskType.ACTIVE)

    def standby_tasks(self) -> list[TaskId]:
        return sorted_tasks(t.task_id for t in self._tasks.values() if t.type is TaskType.STANDBY)

    def __repr__(self) -> str:
        return (
            f"KafkaStreamsAssignment({self.process_id}, active={self.active_tasks()}, "
            f"standby={self.standby_tasks()}, followup={self.followup_rebalance_deadline})"
        )


class TaskAssignment:
    """An assignor's result: one `KafkaStreamsAssignment` per client."""

    def __init__(self, assignment: Iterable[KafkaStreamsAssignment]) -> None:
        self.assignment: tuple[KafkaStreamsAssignment, ...] = tuple(assignment)

    def by_process_id(self) -> dict[uuid.UUID, KafkaStreamsAssignment]:
        return {a.process_id: a for a in self.assignment}


@runtime_checkable
class TaskAssignor(Protocol):
    """A task assignor. May also define `on_assignment_computed(assignment, subscription, error)`.

    As Kafka Streams' `onAssignmentComputed` (KIP-924), the group leader calls it once per rebalance after
    validating `assign`'s result, so an assignor can see what its output became: `assignment` maps each
    member to the `ConsumerProtocolMemberAssignment` it is sent, `subscription` each member to its decoded
    `SubscriptionInfo`. When validation failed, `error` says why, `assignment` is empty and the rebalance
    fails with a TaskAssignmentError.
    """

    def assign(self, application_state: ApplicationState) -> TaskAssignment: ...


def legacy_task_assignment(
    application_state: ApplicationState, clients: Mapping[uuid.UUID, ClientState], probing_rebalance_needed: bool
) -> TaskAssignment:
    """The result of an internal (`LegacyTaskAssignor`) assignor, as Kafka Streams' leader turns it into one.

    Those assignors fill in `ClientState`s and return "probing rebalance needed"; the leader then gives
    its own client `followup_rebalance_deadline = now_ms + probing_rebalance_interval_ms`. If no leader is
    named (simulation, tests), every client gets it.
    """
    deadline = None
    if probing_rebalance_needed:
        deadline = application_state.now_ms + application_state.assignment_configs.probing_rebalance_interval_ms
    leader = application_state.leader_process_id
    result = []
    for pid, client in clients.items():
        tasks = [AssignedTask(t, TaskType.ACTIVE) for t in sorted_tasks(client.active_tasks)]
        tasks += [AssignedTask(t, TaskType.STANDBY) for t in sorted_tasks(client.standby_tasks)]
        gets_deadline = leader is None or leader not in clients or leader == pid
        result.append(KafkaStreamsAssignment(pid, tasks, deadline if gets_deadline else None))
    return TaskAssignment(result)


def notify_assignment_computed(
    assignor: TaskAssignor, assignment: Any, subscription: Any, error: AssignmentError
) -> None:
    """Call the assignor's optional `on_assignment_computed` callback, if it has one (see `TaskAssignor`)."""
    callback = getattr(assignor, "on_assignment_computed", None)
    if callback is not None:
        callback(assignment, subscription, error)


# ---- utilities (TaskAssignmentUtils) --------------------------------------------------------------------


class AssignmentError(enum.Enum):
    NONE = "NONE"
    ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES = "ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES"
    INVALID_STANDBY_TASK = "INVALID_STANDBY_TASK"
    MISSING_PROCESS_ID = "MISSING_PROCESS_ID"
    UNKNOWN_PROCESS_ID = "UNKNOWN_PROCESS_ID"
    UNKNOWN_TASK_ID = "UNKNOWN_TASK_ID"


def validate_task_assignment(application_state: ApplicationState, task_assignment: TaskAssignment) -> AssignmentError:
    """Check an assignor's output in the same order as `TaskAssignmentUtils.validateTaskAssignment`.

    Order: unknown task id, active task assigned twice (one pass over the output), standby of a stateless
    task, input client missing from the output, unknown client in the output.
    """
    all_tasks = application_state.all_tasks
    active_owner: dict[TaskId, uuid.UUID] = {}
    standby_tasks: set[TaskId] = set()
    for assignment in task_assignment.assignment:
        for task in assignment.tasks.values():
            if task.task_id not in all_tasks:
                return AssignmentError.UNKNOWN_TASK_ID
            if task.type is TaskType.ACTIVE:
                if task.task_id in active_owner:
                    return AssignmentError.ACTIVE_TASK_ASSIGNED_MULTIPLE_TIMES
                active_owner[task.task_id] = assignment.process_id
            else:
                standby_tasks.add(task.task_id)
    for info in all_tasks.values():
        if not info.is_stateful and info.id in standby_tasks:
            return AssignmentError.INVALID_STANDBY_TASK
    clients_in_input = application_state.kafka_streams_states(False)
    clients_in_output = {a.process_id for a in task_assignment.assignment}
    if any(pid not in clients_in_output for pid in clients_in_input):
        return AssignmentError.MISSING_PROCESS_ID
    if any(pid not in clients_in_input for pid in clients_in_output):
        return AssignmentError.UNKNOWN_PROCESS_ID
    return AssignmentError.NONE


def identity_assignment(application_state: ApplicationState) -> dict[uuid.UUID, KafkaStreamsAssignment]:
    """Every client keeps exactly its previous active and standby tasks."""
    result: dict[uuid.UUID, KafkaStreamsAssignment] = {}
    for pid, state in application_state.kafka_streams_states(False).items():
        tasks = [AssignedTask(t, TaskType.ACTIVE) for t in state.previous_active_tasks]
        tasks += [AssignedTask(t, TaskType.STANDBY) for t in state.previous_standby_tasks]
        result[pid] = KafkaStreamsAssignment.of(pid, tasks)
    return result


def default_standby_task_assignment(
    application_state: ApplicationState, assignments: dict[uuid.UUID, KafkaStreamsAssignment]
) -> None:
    """Add `num_standby_replicas` standbys per stateful task, each on the least-loaded client without a copy.

    Load = assigned tasks (active + standby) per thread, ties by Java UUID order; stateful tasks are taken
    in TaskId order (as `DefaultStandbyTaskAssignor` does). Mutates `assignments`; clients missing from it
    get an empty assignment first.
    """
    states = application_state.kafka_streams_states(False)
    for pid in states:
        assignments.setdefault(pid, KafkaStreamsAssignment.of(pid))
    replicas = application_state.assignment_configs.num_standby_replicas
    by_load = ConstrainedPrioritySet(
        lambda pid, task: task not in assignments[pid].tasks,
        lambda pid: len(assignments[pid].tasks) / states[pid].num_processing_threads,
    )
    by_load.offer_all(states)
    for task, info in application_state.all_tasks.items():
        if not info.is_stateful:
            continue
        for _ in range(replicas):
            holder = by_load.poll(task)
            if holder is None:
                break
            assignments[holder].assign_task(AssignedTask(task, TaskType.STANDBY))
            by_load.offer(holder)
