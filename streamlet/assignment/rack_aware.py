"""KIP-925 rack-aware task assignment: Kafka Streams' `RackAwareTaskAssignor` (4.1), exactly.

With `rack_aware_assignment_strategy` set to `min_traffic` or `balance_subtopology`, HATA re-arranges
its own balanced assignment so tasks read from partitions whose replicas sit in the client's rack
(`client_rack`, Kafka's `client.rack`), as far as that is possible without changing how many tasks each
client has. Every task's cost on a client is `traffic_cost` per partition with no replica in the client's
rack, plus `non_overlap_cost` if the task is not on that client already; the min-cost flow over
"task -> client" (`rack_aware_graph`) is the new assignment.

It is only switched on (`can_enable`) when the picture is complete: the strategy is not `none`, every
client has a rack, every source partition of every task has replicas and all of them have a rack, and,
with standbys, the same holds for every changelog partition. Otherwise HATA runs as without racks, as in
Kafka Streams. Where Kafka Streams would fail the rebalance instead (a task without any source or
changelog partition, or a changelog partition missing from an existing topic), streamlet also just leaves
rack awareness off.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence

from streamlet.assignment.api import RACK_AWARE_ASSIGNMENT_STRATEGIES, ApplicationState, AssignmentConfigs
from streamlet.assignment.client_state import ClientState, Partition
from streamlet.assignment.rack_aware_graph import (
    BalanceSubtopologyGraphConstructor,
    MinTrafficGraphConstructor,
    RackAwareGraphConstructor,
)
from streamlet.errors import ConfigError, TaskAssignmentError
from streamlet.task_id import TaskId

#: HATA's defaults when the costs are not configured (`DEFAULT_HIGH_AVAILABILITY_*`)
DEFAULT_TRAFFIC_COST = 10
DEFAULT_NON_OVERLAP_COST = 1
#: stateless tasks may move freely: traffic only
STATELESS_TRAFFIC_COST = 1
STATELESS_NON_OVERLAP_COST = 0
#: rounds of pairwise standby swaps (Kafka Streams: "usually stops after 3 rounds")
STANDBY_OPTIMIZER_MAX_ITERATION = 4

#: may a standby of `task` move from the first client to the second? (the standby assignor decides)
MoveStandbyPredicate = Callable[[uuid.UUID, uuid.UUID, TaskId, Mapping[uuid.UUID, ClientState]], bool]

_INT_MAX = 2**31 - 1


def _int32(value: int) -> int:
    """Java `int` arithmetic: the per-task cost wraps like Kafka Streams' does."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value > _INT_MAX else value


class RackAwareTaskAssignor:
    """The rack facts of one rebalance and the two optimisations HATA calls.

    * `rack_for_process`: each client's rack (None: unknown, or its consumers disagree);
    * `source_partitions` / `changelog_partitions`: per task, the partitions it reads / restores;
    * `racks_for_partition`: the racks of each partition's replicas (None: a replica without a rack,
      or no replicas); a partition missing here is not in the cluster metadata;
    * `tasks_per_subtopology`: every task, grouped by sub-topology in ascending order.
    """

    def __init__(
        self,
        strategy: str,
        *,
        rack_for_process: Mapping[uuid.UUID, str | None],
        source_partitions: Mapping[TaskId, Sequence[Partition]],
        changelog_partitions: Mapping[TaskId, Sequence[Partition]],
        racks_for_partition: Mapping[Partition, frozenset[str] | None],
        tasks_per_subtopology: Sequence[Sequence[TaskId]],
        num_standby_replicas: int,
    ) -> None:
        if strategy not in RACK_AWARE_ASSIGNMENT_STRATEGIES:
            raise ConfigError(
                f"rack_aware_assignment_strategy={strategy!r}: expected one of {RACK_AWARE_ASSIGNMENT_STRATEGIES}"
            )
        self.strategy = strategy
        self._rack_for_process = dict(rack_for_process)
        self._source = {t: tuple(ps) for t, ps in source_partitions.items()}
        self._changelog = {t: tuple(ps) for t, ps in changelog_partitions.items()}
        self._racks = dict(racks_for_partition)
        self._groups = [list(g) for g in tasks_per_subtopology]
        self._num_standby_replicas = num_standby_replicas
        self._can_enable: bool | None = None

    # ---- can it be switched on? ---------------------------------------------------------------------

    def _partitions_have_racks(self, partitions_for_task: Mapping[TaskId, Sequence[Partition]]) -> bool:
        return all(ps and all(self._racks.get(p) for p in ps) for ps in partitions_for_task.values())

    def can_enable(self) -> bool:
        """`canEnableRackAwareAssignor` (computed once per rebalance)."""
        if self.strategy == "none":
            return False
        if self._can_enable is None:
            clients_ok = all(rack is not None for rack in self._rack_for_process.values())
            enabled = clients_ok and self._partitions_have_racks(self._source)
            if enabled and self._num_standby_replicas > 0:
                enabled = self._partitions_have_racks(self._changelog)
            self._can_enable = enabled
        return self._can_enable

    # ---- cost ---------------------------------------------------------------------------------------

    def cost(
        self,
        task: TaskId,
        pid: uuid.UUID,
        in_current_assignment: bool,
        traffic_cost: int,
        non_overlap_cost: int,
        is_standby: bool,
    ) -> int:
        """`getCost`: traffic per partition without a replica in the client's rack, plus the move penalty."""
        client_rack = self._rack_for_process.get(pid)
        if client_rack is None:
            raise TaskAssignmentError(f"Client {pid} doesn't have rack configured")
        partitions = (self._changelog if is_standby else self._source).get(task)
        if not partitions:
            raise TaskAssignmentError(f"Task {task} has no TopicPartitions")
        cost = 0
        for partition in set(partitions):
            racks = self._racks.get(partition)
            if not racks:
                raise TaskAssignmentError(f"TopicPartition {partition} has no rack information")
            if client_rack not in racks:
                cost = _int32(cost + traffic_cost)
        if not in_current_assignment:
            cost = _int32(cost + non_overlap_cost)
        return cost

    def _constructor(self) -> RackAwareGraphConstructor:
        if self.strategy == "min_traffic":
            return MinTrafficGraphConstructor()
        if self.strategy == "balance_subtopology":
            return BalanceSubtopologyGraphConstructor(self._groups)
        raise TaskAssignmentError("Rack aware assignment is disabled")

    # ---- optimisations ------------------------------------------------------------------------------

    def optimize_active_tasks(
        self,
        active_tasks: Sequence[TaskId],
        clients: Mapping[uuid.UUID, ClientState],
        client_order: Sequence[uuid.UUID],
        traffic_cost: int,
        non_overlap_cost: int,
    ) -> int:
        """Re-place `active_tasks` (already assigned) at minimum cost, keeping each client's count; returns the cost."""
        task_list = sorted(set(active_tasks))
        if not task_list:
            return 0
        constructor = self._constructor()
        task_client_map: dict[TaskId, uuid.UUID] = {}
        original: dict[uuid.UUID, int] = {}
        graph = constructor.construct_task_graph(
            client_order,
            task_list,
            clients,
            task_client_map,
            original,
            ClientState.has_active_task,
            self.cost,
            traffic_cost,
            non_overlap_cost,
            False,
            False,
        )
        graph.solve_min_cost_flow()
        constructor.assign_task_from_min_cost_flow(
            graph,
            client_order,
            task_list,
            clients,
            original,
            task_client_map,
            ClientState.assign_active,
            ClientState.unassign_active,
            ClientState.has_active_task,
        )
        return graph.total_cost()

    def optimize_standby_tasks(
        self,
        clients: Mapping[uuid.UUID, ClientState],
        client_order: Sequence[uuid.UUID],
        traffic_cost: int,
        non_overlap_cost: int,
        may_move: MoveStandbyPredicate,
    ) -> None:
        """Swap standbys between pairs of clients in different racks, min-traffic, for up to 4 rounds."""
        constructor = MinTrafficGraphConstructor()

        def movable(source: uuid.UUID, destination: uuid.UUID) -> list[TaskId]:
            dst = clients[destination]
            return sorted(
                t
                for t in clients[source].standby_tasks
                if not dst.has_assigned_task(t) and may_move(source, destination, t, clients)
            )

        moved = True
        rounds = 0
        while moved and rounds < STANDBY_OPTIMIZER_MAX_ITERATION:
            moved = False
            rounds += 1
            for i, first in enumerate(client_order):
                for second in client_order[i + 1 :]:
                    if self._rack_for_process[first] == self._rack_for_process[second]:
                        continue  # swapping within a rack cannot reduce cross-rack traffic
                    movable_1 = movable(first, second)
                    movable_2 = movable(second, first)
                    if not movable_1 or not movable_2:
                        continue  # only swaps keep both clients' loads
                    task_list = sorted(movable_1 + movable_2)
                    pair = [first, second]
                    task_client_map: dict[TaskId, uuid.UUID] = {}
                    original: dict[uuid.UUID, int] = {}
                    graph = constructor.construct_task_graph(
                        pair,
                        task_list,
                        clients,
                        task_client_map,
                        original,
                        ClientState.has_standby_task,
                        self.cost,
                        traffic_cost,
                        non_overlap_cost,
                        True,
                        True,
                    )
                    graph.solve_min_cost_flow()
                    moved |= constructor.assign_task_from_min_cost_flow(
                        graph,
                        pair,
                        task_list,
                        clients,
                        original,
                        task_client_map,
                        ClientState.assign_standby,
                        ClientState.unassign_standby,
                        ClientState.has_standby_task,
                    )


def rack_aware_task_assignor(
    application_state: ApplicationState, configs: AssignmentConfigs | None = None
) -> RackAwareTaskAssignor:
    """The rack facts of a KIP-924 `ApplicationState`: client racks (`KafkaStreamsState.rack_id`) and each
    task's source and changelog partitions with their replicas' racks (`TaskTopicPartition.rack_ids`).
    `configs` (default: the state's) gives the strategy and the standby count."""
    configs = configs or application_state.assignment_configs
    source: dict[TaskId, list[Partition]] = {}
    changelog: dict[TaskId, list[Partition]] = {}
    racks: dict[Partition, frozenset[str] | None] = {}
    groups: dict[int, list[TaskId]] = {}
    for task, info in application_state.all_tasks.items():
        groups.setdefault(task.subtopology, []).append(task)
        for tp in info.topic_partitions:
            if tp.is_source:
                source.setdefault(task, []).append(tp.topic_partition)
            if tp.is_changelog and info.is_stateful:
                changelog.setdefault(task, []).append(tp.topic_partition)
            racks[tp.topic_partition] = tp.rack_ids
        source.setdefault(task, [])
        if info.is_stateful:
            changelog.setdefault(task, [])
    return RackAwareTaskAssignor(
        configs.rack_aware_assignment_strategy,
        rack_for_process={pid: s.rack_id for pid, s in application_state.kafka_streams_states(False).items()},
        source_partitions=source,
        changelog_partitions=changelog,
        racks_for_partition=racks,
        tasks_per_subtopology=[groups[s] for s in sorted(groups)],
        num_standby_replicas=configs.num_standby_replicas,
    )
