"""KIP-925's two graph constructors (`MinTrafficGraphConstructor`, `BalanceSubtopologyGraphConstructor`, 4.1).

Both model "task -> client" as a flow network: the source feeds one unit per task, a task can send it to
any client at the task's cost there (cross-rack traffic, plus a penalty for leaving its current client),
and each client passes to the sink exactly as many units as it had tasks before. Clients keep their task
counts, so the optimisation never undoes HATA's balance; it only swaps tasks to cut cost.

* `min_traffic`: task nodes `0..T-1` (in the given task order), client nodes `T..T+C-1`, sink `T+C`.
  The current assignment is the starting flow.
* `balance_subtopology`: one client node per (sub-topology, client), capped at the client's share of that
  sub-topology (`ceil(count * tasks_in_subtopology / T)`), then a second-stage node per client. Task nodes
  are numbered by sub-topology and then task id. The starting flow comes from Ford-Fulkerson.

Node numbering and edge order are Kafka Streams' own, since they decide which optimum the solver returns.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from streamlet.assignment.client_state import ClientState
from streamlet.assignment.min_cost_flow import Graph
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId

SOURCE_ID = -1

#: (task, client, task is on that client now, traffic cost, non-overlap cost, is standby) -> edge cost
CostFunction = Callable[[TaskId, uuid.UUID, bool, int, int, bool], int]
HasTask = Callable[[ClientState, TaskId], bool]
MoveTask = Callable[[ClientState, TaskId], None]


class RackAwareGraphConstructor(Protocol):
    def construct_task_graph(
        self,
        client_list: Sequence[uuid.UUID],
        task_list: Sequence[TaskId],
        clients: Mapping[uuid.UUID, ClientState],
        task_client_map: dict[TaskId, uuid.UUID],
        original_assigned_task_number: dict[uuid.UUID, int],
        has_assigned_task: HasTask,
        cost_function: CostFunction,
        traffic_cost: int,
        non_overlap_cost: int,
        has_replica: bool,
        is_standby: bool,
    ) -> Graph: ...

    def assign_task_from_min_cost_flow(
        self,
        graph: Graph,
        client_list: Sequence[uuid.UUID],
        task_list: Sequence[TaskId],
        clients: Mapping[uuid.UUID, ClientState],
        original_assigned_task_number: Mapping[uuid.UUID, int],
        task_client_map: Mapping[TaskId, uuid.UUID],
        assign_task: MoveTask,
        unassign_task: MoveTask,
        has_assigned_task: HasTask,
    ) -> bool: ...


def _count_original_tasks(
    task_list: Sequence[TaskId],
    clients: Mapping[uuid.UUID, ClientState],
    has_task: HasTask,
    counts: dict[uuid.UUID, int],
) -> None:
    for task in task_list:
        for pid, client in clients.items():
            if has_task(client, task):
                counts[pid] = counts.get(pid, 0) + 1


def _record_owner(task: TaskId, pid: uuid.UUID, has_replica: bool, task_client_map: dict[TaskId, uuid.UUID]) -> None:
    if not has_replica and task in task_client_map:
        raise TaskAssignmentError(f"Task {task} assigned to multiple clients {pid}, {task_client_map[task]}")
    task_client_map[task] = pid


def _assign_task_to_client(
    graph: Graph,
    task: TaskId,
    task_node_id: int,
    first_client_node: int,
    client_list: Sequence[uuid.UUID],
    clients: Mapping[uuid.UUID, ClientState],
    task_client_map: Mapping[TaskId, uuid.UUID],
    assign_task: MoveTask,
    unassign_task: MoveTask,
) -> tuple[bool, int]:
    """Move `task` to the client its flow goes to; returns (moved, tasks assigned)."""
    assigned = 0
    moved = False
    for edge in graph.edges(task_node_id):
        if edge.flow > 0:
            assigned += 1
            pid = client_list[edge.destination - first_client_node]
            original = task_client_map.get(task)
            if pid == original:
                break
            assert original is not None
            unassign_task(clients[original], task)
            assign_task(clients[pid], task)
            moved = True
    return moved, assigned


def _validate_assigned_tasks(
    task_list: Sequence[TaskId],
    tasks_assigned: int,
    clients: Mapping[uuid.UUID, ClientState],
    original_assigned_task_number: Mapping[uuid.UUID, int],
    has_assigned_task: HasTask,
) -> None:
    if tasks_assigned != len(task_list):
        raise TaskAssignmentError(
            f"Computed active task assignment number {tasks_assigned} is different size {len(task_list)}"
        )
    after: dict[uuid.UUID, int] = {}
    _count_original_tasks(task_list, clients, has_assigned_task, after)
    if len(original_assigned_task_number) != len(after) or any(
        after.get(pid, 0) != n for pid, n in original_assigned_task_number.items()
    ):
        raise TaskAssignmentError(
            f"task counts per client changed in rack-aware optimisation: {dict(original_assigned_task_number)} "
            f"before, {after} after"
        )


class MinTrafficGraphConstructor:
    """`rack.aware.assignment.strategy=min_traffic` (and the standby optimiser, whatever the strategy)."""

    def construct_task_graph(
        self,
        client_list: Sequence[uuid.UUID],
        task_list: Sequence[TaskId],
        clients: Mapping[uuid.UUID, ClientState],
        task_client_map: dict[TaskId, uuid.UUID],
        original_assigned_task_number: dict[uuid.UUID, int],
        has_assigned_task: HasTask,
        cost_function: CostFunction,
        traffic_cost: int,
        non_overlap_cost: int,
        has_replica: bool,
        is_standby: bool,
    ) -> Graph:
        graph = Graph()
        _count_original_tasks(task_list, clients, has_assigned_task, original_assigned_task_number)
        n_tasks = len(task_list)
        for task_node_id, task in enumerate(task_list):
            for j, pid in enumerate(client_list):
                flow = 1 if has_assigned_task(clients[pid], task) else 0
                cost = cost_function(task, pid, flow == 1, traffic_cost, non_overlap_cost, is_standby)
                if flow == 1:
                    _record_owner(task, pid, has_replica, task_client_map)
                graph.add_edge(task_node_id, n_tasks + j, 1, cost, flow)
            if task not in task_client_map:
                raise TaskAssignmentError(f"Task {task} not assigned to any client")
            graph.add_edge(SOURCE_ID, task_node_id, 1, 0, 1)
        sink = len(client_list) + n_tasks
        for i, pid in enumerate(client_list):
            capacity = original_assigned_task_number.get(pid, 0)
            graph.add_edge(n_tasks + i, sink, capacity, 0, capacity)
        graph.source_node = SOURCE_ID
        graph.sink_node = sink
        return graph

    def assign_task_from_min_cost_flow(
        self,
        graph: Graph,
        client_list: Sequence[uuid.UUID],
        task_list: Sequence[TaskId],
        clients: Mapping[uuid.UUID, ClientState],
        original_assigned_task_number: Mapping[uuid.UUID, int],
        task_client_map: Mapping[TaskId, uuid.UUID],
        assign_task: MoveTask,
        unassign_task: MoveTask,
        has_assigned_task: HasTask,
    ) -> bool:
        n_tasks = len(task_list)
        assigned = 0
        moved = False
        for task_node_id, task in enumerate(task_list):
            m, a = _assign_task_to_client(
                graph,
                task,
                task_node_id,
                n_tasks,
                client_list,
                clients,
                task_client_map,
                assign_task,
                unassign_task,
            )
            moved |= m
            assigned += a
        _validate_assigned_tasks(task_list, assigned, clients, original_assigned_task_number, has_assigned_task)
        return moved


class BalanceSubtopologyGraphConstructor:
    """`rack.aware.assignment.strategy=balance_subtopology`: also spreads each sub-topology's tasks evenly.

    `task_sets_per_subtopology`: every task of each sub-topology, sub-topologies in ascending order.
    """

    def __init__(self, task_sets_per_subtopology: Sequence[Sequence[TaskId]]) -> None:
        self._groups = [sorted(set(tasks)) for tasks in task_sets_per_subtopology]

    def _groups_in(self, task_set: set[TaskId]) -> list[list[TaskId]]:
        """Per sub-topology, its tasks that are being optimised (in TaskId order)."""
        return [[t for t in group if t in task_set] for group in self._groups]

    def construct_task_graph(
        self,
        client_list: Sequence[uuid.UUID],
        task_list: Sequence[TaskId],
        clients: Mapping[uuid.UUID, ClientState],
        task_client_map: dict[TaskId, uuid.UUID],
        original_assigned_task_number: dict[uuid.UUID, int],
        has_assigned_task: HasTask,
        cost_function: CostFunction,
        traffic_cost: int,
        non_overlap_cost: int,
        has_replica: bool,
        is_standby: bool,
    ) -> Graph:
        known = {t for group in self._groups for t in group}
        for task in task_list:
            if task not in known:
                raise TaskAssignmentError(f"Task {task} not in tasksForTopicGroup")
        graph = Graph()
        _count_original_tasks(task_list, clients, has_assigned_task, original_assigned_task_number)

        n_tasks, n_clients, n_groups = len(task_list), len(client_list), len(self._groups)
        second_stage = n_tasks + n_clients * n_groups
        sink = second_stage + n_clients
        groups = self._groups_in(set(task_list))
        task_node_id = 0
        for group_index, group in enumerate(groups):
            for client_index, pid in enumerate(client_list):
                client_node = n_tasks + n_clients * group_index + client_index
                for offset, task in enumerate(group):
                    in_current = has_assigned_task(clients[pid], task)
                    cost = cost_function(task, pid, in_current, traffic_cost, non_overlap_cost, is_standby)
                    graph.add_edge(task_node_id + offset, client_node, 1, cost, 0)
                    if in_current:
                        _record_owner(task, pid, has_replica, task_client_map)
                if group:
                    original = original_assigned_task_number.get(pid)
                    # Java: (int) Math.ceil(count * 1.0 / taskCount * validTaskCount), in doubles
                    capacity = 0 if original is None else math.ceil(original * 1.0 / n_tasks * len(group))
                    graph.add_edge(client_node, second_stage + client_index, capacity, 0, 0)
            task_node_id += len(group)

        for task_node_id in range(sum(len(g) for g in groups)):
            graph.add_edge(SOURCE_ID, task_node_id, 1, 0, 0)
        for client_index, pid in enumerate(client_list):
            capacity = original_assigned_task_number.get(pid, 0)
            graph.add_edge(second_stage + client_index, sink, capacity, 0, 0)
        graph.source_node = SOURCE_ID
        graph.sink_node = sink

        max_flow = graph.calculate_max_flow()
        if max_flow != n_tasks:
            raise TaskAssignmentError(f"max flow calculated: {max_flow} doesn't match taskSize: {n_tasks}")
        return graph

    def assign_task_from_min_cost_flow(
        self,
        graph: Graph,
        client_list: Sequence[uuid.UUID],
        task_list: Sequence[TaskId],
        clients: Mapping[uuid.UUID, ClientState],
        original_assigned_task_number: Mapping[uuid.UUID, int],
        task_client_map: Mapping[TaskId, uuid.UUID],
        assign_task: MoveTask,
        unassign_task: MoveTask,
        has_assigned_task: HasTask,
    ) -> bool:
        n_tasks, n_clients = len(task_list), len(client_list)
        task_node_id = 0
        assigned = 0
        moved = False
        for group_index, group in enumerate(self._groups_in(set(task_list))):
            first_client_node = n_tasks + n_clients * group_index
            for task in group:
                m, a = _assign_task_to_client(
                    graph,
                    task,
                    task_node_id,
                    first_client_node,
                    client_list,
                    clients,
                    task_client_map,
                    assign_task,
                    unassign_task,
                )
                moved |= m
                assigned += a
                task_node_id += 1
        _validate_assigned_tasks(task_list, assigned, clients, original_assigned_task_number, has_assigned_task)
        return moved
