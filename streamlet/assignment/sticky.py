"""StickyTaskAssignor: Kafka Streams' KIP-924 sticky assignor, reproduced exactly.

Source: `org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor` of Kafka Streams
4.4.0, the class users select with `task.assignor.class` (the pre-3.8 sticky assignor lives on as the
internal `LegacyStickyTaskAssignor`, reachable only through `internal.task.assignor.class` and as the
delegate of `FallbackPriorTaskAssignor`, see `fallback_prior.py`). It ignores lags and keeps tasks where
they were, within a quota:

1. every previous active stays on its previous client while that client has fewer than
   `ceil(tasks * threads / total threads)` actives (its share of all tasks, rounded up: Kafka Streams 4.4's
   quota; up to 4.3 it was `threads * (tasks // total threads)`, rounded down, see docs/kafka-4.4.md);
2. the tasks left go to a previous standby holder with room under the same quota;
3. the rest, in TaskId order, go to the "best" client: the previous owner (active, else the least
   loaded previous standby) unless it is loaded >= 1 task per thread and some client is less loaded,
   else the least-loaded client (tasks per thread) on which the task forms a pair with its tasks that no
   client has yet (`TaskPairs`);
4. `num_standby_replicas` standbys per stateful task, each on the best client among those without a copy.

It never asks for a probing rebalance, so warmups do not exist: a task moves at once, state or not.
`must_preserve_active_task_assignment=True` (a public Java constructor, unused by Kafka Streams itself)
keeps every previous active regardless of the quota and asks for an immediate follow-up rebalance
(deadline epoch 0) on one client.

Order matters because "first client met wins" ties are everywhere, and Java meets clients and tasks in
`HashMap`/`HashSet` order. This module walks them in the same order (`java_collections`):
* clients (`kafkaStreamsStates`): a HashMap filled from the leader's client map; streamlet's
  `ApplicationState` lists clients in Java UUID order, which fixes the order of clients whose hashes
  share a bucket (Kafka Streams: the order members joined in);
* the candidate-client sets: HashSets built by the assignor, and copies of them;
* `unassigned`: `new HashSet<>(allTasks.keySet())`;
* stateful tasks for standbys: in Kafka Streams a `HashSet<TaskInfo>` whose `DefaultTaskInfo` has no
  `hashCode`, so its order follows identity hash codes and is not the same from one JVM run to the
  next. streamlet takes them in TaskId order; the oracle (oracle/README.md) pins Java to that order.

Rack-aware optimisation (`optimizeRackAwareActiveTasks/StandbyTasks`) is a no-op here: it returns at
once when `rack.aware.assignment.strategy` is `none`, which is all streamlet models so far.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from streamlet.assignment.api import (
    ApplicationState,
    AssignedTask,
    KafkaStreamsAssignment,
    KafkaStreamsState,
    TaskAssignment,
    TaskType,
)
from streamlet.assignment.java_collections import java_hash_set_copy_order, java_hash_set_order
from streamlet.assignment.process_id import java_uuid_hash_code, process_id_hash_set_order
from streamlet.assignment.task_pairs import TaskPairs
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId


class _AssignmentState:
    """`StickyTaskAssignor.AssignmentState`: previous and new placement, and the pair memory."""

    def __init__(
        self,
        application_state: ApplicationState,
        clients: dict[uuid.UUID, KafkaStreamsState],
        client_order: list[uuid.UUID],
        previous_active: dict[TaskId, uuid.UUID],
        previous_standby: dict[TaskId, list[uuid.UUID]],
    ) -> None:
        self.clients = clients
        self.client_order = client_order
        self.previous_active = previous_active
        self.previous_standby = previous_standby
        self.task_pairs = TaskPairs(len(application_state.all_tasks))
        self.new_task_locations: dict[TaskId, set[uuid.UUID]] = {task: set() for task in previous_active}
        # Collectors.toMap over the clients HashMap: a HashMap with the same keys, so the same order.
        self.new_assignments: dict[uuid.UUID, KafkaStreamsAssignment] = {
            pid: KafkaStreamsAssignment.of(pid) for pid in client_order
        }

    def finalize_assignment(self, task: TaskId, pid: uuid.UUID, kind: TaskType) -> None:
        assignment = self.new_assignments[pid]
        self.task_pairs.add_pairs(task, assignment.tasks)
        assignment.assign_task(AssignedTask(task, kind))
        self.new_task_locations.setdefault(task, set()).add(pid)

    def process_optimized_assignments(self) -> None:
        """Rebuild the task -> clients index from the (rack-optimised) assignments."""
        locations: dict[TaskId, set[uuid.UUID]] = {}
        for pid, assignment in self.new_assignments.items():
            for task in assignment.tasks:
                locations.setdefault(task, set()).add(pid)
        self.new_task_locations = locations

    def has_room_for_active_task(self, pid: uuid.UUID, total_tasks: int, total_threads: int) -> bool:
        """Fewer actives than the client's share of all tasks, rounded up (Java's int arithmetic)."""
        actives = sum(1 for t in self.new_assignments[pid].tasks.values() if t.type is TaskType.ACTIVE)
        threads = self.clients[pid].num_processing_threads
        return actives < (total_tasks * threads + total_threads - 1) // total_threads

    def find_best_client_for_task(self, task: TaskId, clients_within: Sequence[uuid.UUID]) -> uuid.UUID:
        if len(clients_within) == 1:
            return clients_within[0]
        previous = self._least_loaded_with_previous_active_or_standby(task, clients_within)
        if previous is None:
            return self._least_loaded_or_fail(task, clients_within)
        if self._should_balance_load(previous):
            standby = self._least_loaded_with_previous_standby(task, clients_within)
            if standby is None or self._should_balance_load(standby):
                return self._least_loaded_or_fail(task, clients_within)
            return standby
        return previous

    def clients_without_assigned_task(self, task: TaskId) -> list[uuid.UUID]:
        unavailable = self.new_task_locations[task]
        return process_id_hash_set_order(pid for pid in self.client_order if pid not in unavailable)

    def _client_load(self, pid: uuid.UUID) -> float:
        return len(self.new_assignments[pid].tasks) / self.clients[pid].num_processing_threads

    def _least_loaded(self, task: TaskId, pids: Sequence[uuid.UUID]) -> uuid.UUID | None:
        """First pass: the least loaded client forming a new task pair (an idle one at once); else by load."""
        least: uuid.UUID | None = None
        for pid in pids:
            load = self._client_load(pid)
            if load == 0:
                return pid
            if least is None or load < self._client_load(least):
                if self.task_pairs.has_new_pair(task, self.new_assignments[pid].tasks):
                    least = pid
        if least is not None:
            return least
        for pid in pids:
            if least is None or self._client_load(pid) < self._client_load(least):
                least = pid
        return least

    def _least_loaded_or_fail(self, task: TaskId, pids: Sequence[uuid.UUID]) -> uuid.UUID:
        least = self._least_loaded(task, pids)
        if least is None:  # Java would go on with a null client and fail with a NullPointerException
            raise TaskAssignmentError(f"no client to assign task {task} to")
        return least

    def _least_loaded_with_previous_active_or_standby(
        self, task: TaskId, clients_within: Sequence[uuid.UUID]
    ) -> uuid.UUID | None:
        previous = self.previous_active.get(task)
        if previous is not None and previous in clients_within:
            return previous
        return self._least_loaded_with_previous_standby(task, clients_within)

    def _least_loaded_with_previous_standby(
        self, task: TaskId, clients_within: Sequence[uuid.UUID]
    ) -> uuid.UUID | None:
        within = set(clients_within)
        constrain_to = java_hash_set_copy_order(self.previous_standby.get(task, ()), java_uuid_hash_code)
        return self._least_loaded(task, [pid for pid in constrain_to if pid in within])

    def _should_balance_load(self, pid: uuid.UUID) -> bool:
        load = self._client_load(pid)
        if load < 1:
            return False
        return any(self._client_load(other) < load for other in self.clients)


class StickyTaskAssignor:
    """Kafka Streams' KIP-924 `StickyTaskAssignor` (see the module doc)."""

    def __init__(self, must_preserve_active_task_assignment: bool = False) -> None:
        self.must_preserve_active_task_assignment = must_preserve_active_task_assignment

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        clients = application_state.kafka_streams_states(False)
        client_order = process_id_hash_set_order(clients)
        state = _AssignmentState(
            application_state,
            clients,
            client_order,
            _previous_active_assignment(clients, client_order),
            _previous_standby_assignment(clients, client_order),
        )
        self._assign_active(application_state, state)
        if not self.must_preserve_active_task_assignment:
            state.process_optimized_assignments()  # after the (no-op) rack-aware active optimisation
        _assign_standby(application_state, state)
        # optimizeStandby: a no-op without rack awareness, and it leaves the assignments as they are.

        assignments = state.new_assignments
        if self.must_preserve_active_task_assignment and assignments:
            first = client_order[0]  # the HashMap's first entry
            assignments[first] = assignments[first].with_followup_rebalance(0)
        return TaskAssignment(assignments.values())

    def _assign_active(self, application_state: ApplicationState, state: _AssignmentState) -> None:
        all_tasks = application_state.all_tasks
        total_capacity = sum(c.num_processing_threads for c in state.clients.values())
        if total_capacity == 0:
            raise TaskAssignmentError("the sticky assignor needs at least one client thread")
        total_tasks = len(all_tasks)
        unassigned_order = java_hash_set_copy_order(all_tasks, TaskId.java_hash_code)
        unassigned = set(unassigned_order)

        # First, previous actives back to their previous client, while it is under its quota.
        for task in java_hash_set_order(state.previous_active, TaskId.java_hash_code):
            previous = state.previous_active[task]
            if task in all_tasks and (
                self.must_preserve_active_task_assignment
                or state.has_room_for_active_task(previous, total_tasks, total_capacity)
            ):
                state.finalize_assignment(task, previous, TaskType.ACTIVE)
                unassigned.discard(task)

        # Then to a client that had it as a standby, under the same quota.
        for task in [t for t in unassigned_order if t in unassigned]:
            for pid in state.previous_standby.get(task, ()):
                if state.has_room_for_active_task(pid, total_tasks, total_capacity):
                    state.finalize_assignment(task, pid, TaskType.ACTIVE)
                    unassigned.remove(task)
                    break

        # The rest in TaskId order, to the best of all clients.
        candidates = state.client_order
        for task in sorted(unassigned):
            state.finalize_assignment(task, state.find_best_client_for_task(task, candidates), TaskType.ACTIVE)


def _assign_standby(application_state: ApplicationState, state: _AssignmentState) -> None:
    replicas = application_state.assignment_configs.num_standby_replicas
    for task, info in application_state.all_tasks.items():
        # Java keeps tasks with a changelog partition; streamlet's is_stateful means exactly that.
        if not info.is_stateful:
            continue
        for _ in range(replicas):
            candidates = state.clients_without_assigned_task(task)
            if not candidates:
                break  # Kafka Streams logs "Unable to assign ... standby tasks" and goes on
            state.finalize_assignment(task, state.find_best_client_for_task(task, candidates), TaskType.STANDBY)


def _previous_active_assignment(
    clients: dict[uuid.UUID, KafkaStreamsState], client_order: list[uuid.UUID]
) -> dict[TaskId, uuid.UUID]:
    """task -> previous active client; a task two clients claim goes to the later one in HashMap order.

    The dict keeps first-insertion order, which is what `java_hash_set_order` needs to order its keys.
    """
    previous: dict[TaskId, uuid.UUID] = {}
    for pid in client_order:
        for task in clients[pid].previous_active_tasks:
            previous[task] = pid
    return previous


def _previous_standby_assignment(
    clients: dict[uuid.UUID, KafkaStreamsState], client_order: list[uuid.UUID]
) -> dict[TaskId, list[uuid.UUID]]:
    """task -> the clients that had it as a standby, each list in its `HashSet<ProcessId>` order."""
    holders: dict[TaskId, list[uuid.UUID]] = {}
    for pid in client_order:
        for task in clients[pid].previous_standby_tasks:
            holders.setdefault(task, []).append(pid)
    return {task: process_id_hash_set_order(pids) for task, pids in holders.items()}
