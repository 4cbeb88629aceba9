"""LegacyStickyTaskAssignor: Kafka Streams' pre-KIP-441 sticky assignor, reproduced exactly.

Source: `org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor` of Kafka
Streams 4.1.1 (named `StickyTaskAssignor` before 3.8). Kafka Streams still runs it in two ways: selected
with the internal `internal.task.assignor.class`, and as the delegate of `FallbackPriorTaskAssignor`
(`fallback_prior.py`) with `mustPreserveActiveTaskAssignment = true`.

Same plan as the KIP-924 `StickyTaskAssignor` (`sticky.py`), on `ClientState`s, with two differences in
arithmetic: the quota counts actives against `threads * (tasks // total threads)`, and "less loaded"
is `ClientState.hasMoreAvailableCapacityThan` (tasks per thread, ties to the client with more threads),
with a client counting as full once it holds one task per thread.

Orders: the leader's clients are a `HashMap<ProcessId, ClientState>` and the task sets `HashSet`s; this
module walks them as Java does (`java_collections`), taking the input's insertion order to be Java UUID
order for clients and TaskId order for tasks (the oracle builds its Java inputs the same way).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence

from streamlet.assignment.api import ApplicationState, TaskAssignment, legacy_task_assignment
from streamlet.assignment.client_state import ClientState
from streamlet.assignment.java_collections import java_hash_set_copy_order, java_hash_set_order
from streamlet.assignment.process_id import java_uuid_hash_code, java_uuid_key, process_id_hash_set_order
from streamlet.assignment.task_pairs import TaskPairs
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId


def has_more_available_capacity_than(client: ClientState, other: ClientState) -> bool:
    """`ClientState.hasMoreAvailableCapacityThan`: lower tasks per thread, ties to more threads."""
    this_load = client.assigned_task_count / client.capacity
    other_load = other.assigned_task_count / other.capacity
    if this_load != other_load:
        return this_load < other_load
    return client.capacity > other.capacity


class LegacyStickyRun:
    """One run of the legacy sticky assignor over `clients` (their `active_tasks`/`standby_tasks` are filled in)."""

    def __init__(
        self,
        clients: Mapping[uuid.UUID, ClientState],
        all_tasks: Iterable[TaskId],
        stateful_tasks: Iterable[TaskId],
        *,
        must_preserve_active_task_assignment: bool = False,
    ) -> None:
        self._client_order = process_id_hash_set_order(sorted(clients, key=java_uuid_key))
        self._clients = {pid: clients[pid] for pid in self._client_order}
        self._all_tasks = java_hash_set_order(sorted(all_tasks), TaskId.java_hash_code)
        self._stateful_tasks = java_hash_set_order(sorted(stateful_tasks), TaskId.java_hash_code)
        self._must_preserve = must_preserve_active_task_assignment
        self._task_pairs = TaskPairs(len(self._all_tasks))
        self._previous_active: dict[TaskId, uuid.UUID] = {}
        standby_holders: dict[TaskId, list[uuid.UUID]] = {}
        for pid, client in self._clients.items():
            for task in sorted(client.previous_active_tasks):
                self._previous_active[task] = pid
            for task in sorted(client.previous_standby_tasks):
                standby_holders.setdefault(task, []).append(pid)
        self._previous_standby = {task: process_id_hash_set_order(pids) for task, pids in standby_holders.items()}

    def assign(self, num_standby_replicas: int) -> None:
        """`assign(...)`: actives, then standbys (the rack-aware steps are off in this model)."""
        self._assign_active()
        self._assign_standby(num_standby_replicas)

    def _assign_active(self) -> None:
        total_capacity = sum(c.capacity for c in self._clients.values())
        if total_capacity == 0:
            raise TaskAssignmentError("`totalCapacity` should never be zero.")
        tasks_per_thread = len(self._all_tasks) // total_capacity
        all_tasks = set(self._all_tasks)
        assigned: set[TaskId] = set()

        for task in java_hash_set_order(self._previous_active, TaskId.java_hash_code):
            if task in all_tasks:
                client = self._clients[self._previous_active[task]]
                if self._must_preserve or self._has_unfulfilled_quota(client, tasks_per_thread):
                    self._assign_to_client(assigned, task, client)

        unassigned_order = java_hash_set_copy_order(self._all_tasks, TaskId.java_hash_code)
        unassigned = set(unassigned_order) - assigned
        for task in [t for t in unassigned_order if t in unassigned]:
            for pid in self._previous_standby.get(task, ()):
                client = self._clients[pid]
                if self._has_unfulfilled_quota(client, tasks_per_thread):
                    self._assign_to_client(assigned, task, client)
                    unassigned.remove(task)
                    break

        for task in sorted(unassigned):
            self._allocate(task, self._client_order, active=True)

    def _assign_standby(self, num_standby_replicas: int) -> None:
        for task in self._stateful_tasks:
            for _ in range(num_standby_replicas):
                candidates = process_id_hash_set_order(
                    pid for pid, client in self._clients.items() if not client.has_assigned_task(task)
                )
                if not candidates:
                    break  # Kafka Streams logs "Unable to assign ... standby tasks" and goes on
                self._allocate(task, candidates, active=False)

    @staticmethod
    def _has_unfulfilled_quota(client: ClientState, tasks_per_thread: int) -> bool:
        return len(client.active_tasks) < client.capacity * tasks_per_thread

    def _assign_to_client(self, assigned: set[TaskId], task: TaskId, client: ClientState) -> None:
        self._task_pairs.add_pairs(task, client.active_tasks | client.standby_tasks)
        client.assign_active(task)
        assigned.add(task)

    def _allocate(self, task: TaskId, clients_within: Sequence[uuid.UUID], *, active: bool) -> None:
        client = self._find_client(task, clients_within)
        self._task_pairs.add_pairs(task, client.active_tasks | client.standby_tasks)
        if active:
            client.assign_active(task)
        else:
            client.assign_standby(task)

    def _find_client(self, task: TaskId, clients_within: Sequence[uuid.UUID]) -> ClientState:
        if len(clients_within) == 1:
            return self._clients[clients_within[0]]
        previous = self._client_with_previous_task(task, clients_within)
        if previous is None:
            return self._least_loaded_or_fail(task, clients_within)
        if self._should_balance_load(previous):
            standby = self._least_loaded_with_previous_standby(task, clients_within)
            if standby is None or self._should_balance_load(standby):
                return self._least_loaded_or_fail(task, clients_within)
            return standby
        return previous

    def _should_balance_load(self, client: ClientState) -> bool:
        reached_capacity = client.assigned_task_count >= client.capacity
        return reached_capacity and any(has_more_available_capacity_than(c, client) for c in self._clients.values())

    def _client_with_previous_task(self, task: TaskId, clients_within: Sequence[uuid.UUID]) -> ClientState | None:
        previous = self._previous_active.get(task)
        if previous is not None and previous in clients_within:
            return self._clients[previous]
        return self._least_loaded_with_previous_standby(task, clients_within)

    def _least_loaded_with_previous_standby(
        self, task: TaskId, clients_within: Sequence[uuid.UUID]
    ) -> ClientState | None:
        holders = self._previous_standby.get(task)
        if holders is None:
            return None
        within = set(clients_within)
        constrain_to = [pid for pid in java_hash_set_copy_order(holders, java_uuid_hash_code) if pid in within]
        return self._least_loaded(task, constrain_to)

    def _least_loaded(self, task: TaskId, pids: Sequence[uuid.UUID]) -> ClientState | None:
        found = self._find_least_loaded(task, pids, check_task_pairs=True)
        return found if found is not None else self._find_least_loaded(task, pids, check_task_pairs=False)

    def _least_loaded_or_fail(self, task: TaskId, pids: Sequence[uuid.UUID]) -> ClientState:
        least = self._least_loaded(task, pids)
        if least is None:  # Java would go on with a null client and fail with a NullPointerException
            raise TaskAssignmentError(f"no client to assign task {task} to")
        return least

    def _find_least_loaded(
        self, task: TaskId, pids: Sequence[uuid.UUID], *, check_task_pairs: bool
    ) -> ClientState | None:
        least: ClientState | None = None
        for pid in pids:
            client = self._clients[pid]
            if client.assigned_task_count == 0:
                return client
            if least is None or has_more_available_capacity_than(client, least):
                if not check_task_pairs or self._task_pairs.has_new_pair(
                    task, client.active_tasks | client.standby_tasks
                ):
                    least = client
        return least


def assign_legacy_sticky(
    application_state: ApplicationState, *, must_preserve_active_task_assignment: bool, probing: bool
) -> TaskAssignment:
    """Run the legacy sticky assignor on the application state's clients (lags are not read)."""
    states = application_state.kafka_streams_states(False)
    clients = {
        pid: ClientState(
            state.num_processing_threads,
            previous_active_tasks=state.previous_active_tasks,
            previous_standby_tasks=state.previous_standby_tasks,
        )
        for pid, state in states.items()
    }
    infos = application_state.all_tasks
    LegacyStickyRun(
        clients,
        infos,
        [task for task, info in infos.items() if info.is_stateful],
        must_preserve_active_task_assignment=must_preserve_active_task_assignment,
    ).assign(application_state.assignment_configs.num_standby_replicas)
    return legacy_task_assignment(application_state, clients, probing)


class LegacyStickyTaskAssignor:
    """`LegacyStickyTaskAssignor` as `internal.task.assignor.class` selects it: never asks for probing."""

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        return assign_legacy_sticky(application_state, must_preserve_active_task_assignment=False, probing=False)
