"""HighAvailabilityTaskAssignor (HATA): Kafka Streams' default task assignor, reproduced exactly.

The algorithm (Kafka Streams 3.3 to 3.9, `HighAvailabilityTaskAssignor` + `TaskMovement` +
`DefaultStandbyTaskAssignor`) ignores previous ownership when it deals tasks, and then corrects for state:

1. stateful actives round-robin over clients in Java UUID order, then balanced by total load per thread;
2. standbys on the least-loaded clients, then balanced the same way;
3. an active on a client that is not caught up moves to a caught-up (or, failing that, the most caught-up)
   client, and the round-robin target gets a *warmup* standby while the shared budget
   `max_warmup_replicas` lasts; lagging standbys move the same way;
4. stateless actives go to the client with the lowest *active* load.

With KIP-925 (`rack_aware_assignment_strategy`), steps 1, 2 and 4 end with the rack-aware optimiser
(`rack_aware`), as in Kafka Streams 3.6+.

If step 3 scheduled any movement, a probing rebalance is requested so warmed-up clients can take over.
Every tie-break matters for byte-for-byte parity and is documented where it happens.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

from streamlet.assignment.api import (
    ApplicationState,
    AssignmentConfigs,
    KafkaStreamsState,
    TaskAssignment,
    TaskType,
    legacy_task_assignment,
)
from streamlet.assignment.client_state import LATEST_OFFSET, LONG_MAX, ClientState
from streamlet.assignment.client_tag_aware_standby import (
    assign_tag_aware_standbys,
    is_allowed_standby_move,
    is_allowed_task_movement,
)
from streamlet.assignment.constrained_priority_set import ConstrainedPrioritySet
from streamlet.assignment.java_collections import JavaPriorityQueue
from streamlet.assignment.process_id import java_uuid_key
from streamlet.assignment.rack_aware import (
    DEFAULT_NON_OVERLAP_COST,
    DEFAULT_TRAFFIC_COST,
    STATELESS_NON_OVERLAP_COST,
    STATELESS_TRAFFIC_COST,
    MoveStandbyPredicate,
    RackAwareTaskAssignor,
    rack_aware_task_assignor,
)
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId, sorted_tasks

Clients = Mapping[uuid.UUID, ClientState]


class WarmupBudget:
    """The shared `remainingWarmupReplicas` counter (Java `AtomicInteger.getAndDecrement() > 0`).

    It is decremented even when already exhausted, exactly like Java, so it can go negative.
    """

    def __init__(self, remaining: int) -> None:
        self.remaining = remaining

    def take(self) -> bool:
        available = self.remaining > 0
        self.remaining -= 1
        return available


@dataclass(frozen=True, eq=False)
class _TaskMovement:
    task: TaskId
    destination: uuid.UUID
    num_caught_up_clients: int

    def priority(self) -> tuple[int, TaskId]:
        # Fewest caught-up clients first, then TaskId (HOTFIX #12585: polled in this order since 3.3).
        return self.num_caught_up_clients, self.task


def is_caught_up(lag: int, acceptable_recovery_lag: int) -> bool:
    """Running active (-2), or any lag if the threshold is Long.MAX_VALUE, or 0 <= lag <= threshold."""
    return lag == LATEST_OFFSET or acceptable_recovery_lag == LONG_MAX or 0 <= lag <= acceptable_recovery_lag


class _CaughtUpClients(Collection[uuid.UUID]):
    """The clients caught up on one task, kept as their positions in the group (ints hash in C; a large
    group has hundreds of thousands of caught-up (client, task) pairs per rebalance)."""

    __slots__ = ("_members", "_pids", "_positions")

    def __init__(self, pids: Sequence[uuid.UUID], positions: Mapping[uuid.UUID, int]) -> None:
        self._pids = pids
        self._positions = positions
        self._members: set[int] = set()

    def __contains__(self, pid: object) -> bool:
        position = self._positions.get(pid)  # type: ignore[call-overload]
        return position is not None and position in self._members

    def __len__(self) -> int:
        return len(self._members)

    def __iter__(self) -> Iterator[uuid.UUID]:
        return (self._pids[i] for i in sorted(self._members))


def tasks_to_caught_up_clients(
    clients: Clients, stateful_tasks: Iterable[TaskId], acceptable_recovery_lag: int
) -> dict[TaskId, Collection[uuid.UUID]]:
    """Per stateful task, the clients caught up on it (`is_caught_up`); the sets are only tested and counted.

    Walks each client's lags once, side by side with the tasks when its lag map lists them in the same
    order (no hashing), instead of asking every client about every task.
    """
    tasks = list(stateful_tasks)
    pids = list(clients)
    positions = {pid: i for i, pid in enumerate(pids)}
    caught_up = [_CaughtUpClients(pids, positions) for _ in tasks]
    everything = acceptable_recovery_lag == LONG_MAX
    for i, client in enumerate(clients.values()):
        lags = client.task_lags
        # the lag of every task, in task order (lag_for raises the precise error for a missing one)
        values = lags.values() if list(lags) == tasks else [client.lag_for(t) for t in tasks]
        for holders, lag in zip(caught_up, values, strict=True):
            if lag == LATEST_OFFSET or everything or 0 <= lag <= acceptable_recovery_lag:  # is_caught_up
                holders._members.add(i)
    return dict(zip(tasks, caught_up, strict=True))


class _ClientsByLag(dict[TaskId, list[uuid.UUID]]):
    """Per stateful task, all clients by (lag, Java UUID order), each list sorted when first looked up: only
    tasks that are not caught up where they were dealt are ever looked up, a few of a large group's."""

    def __init__(self, clients: Clients, stateful_tasks: Iterable[TaskId]) -> None:
        super().__init__()
        self._tasks = set(stateful_tasks)
        # a stable sort by lag of the clients in Java UUID order is the sort by (lag, Java UUID order)
        self._order = [(pid, clients[pid]) for pid in sorted(clients, key=java_uuid_key)]

    def __missing__(self, task: TaskId) -> list[uuid.UUID]:
        if task not in self._tasks:
            raise KeyError(task)
        by_lag = [pid for _, pid in sorted(((c.lag_for(task), pid) for pid, c in self._order), key=itemgetter(0))]
        self[task] = by_lag
        return by_lag


def tasks_to_clients_by_lag(clients: Clients, stateful_tasks: Iterable[TaskId]) -> Mapping[TaskId, list[uuid.UUID]]:
    """Per task, all clients by (lag, Java UUID order); -3 (unknown) sorts before -2 (running)."""
    return _ClientsByLag(clients, stateful_tasks)


def _has_standby(clients: Clients, task: TaskId) -> Callable[[uuid.UUID], bool]:
    return lambda pid: clients[pid].has_standby_task(task)


def _assigned_task_load(client: ClientState) -> float:
    """`ClientState.assigned_task_load` without the property call: the client heaps' weight."""
    return (len(client.active_tasks) + len(client.standby_tasks)) / client.capacity


def _active_task_load(client: ClientState) -> float:
    return len(client.active_tasks) / client.capacity


# ---- step 1 and 2: deal and balance -------------------------------------------------------------------------


def _should_move(src_count: int, src_capacity: int, dst_count: int, dst_capacity: int) -> bool:
    """Move only if it lowers the per-thread skew without reversing it (IEEE doubles, as in Java).

    Counts are (active + standby) tasks; `count / capacity` is `ClientState.assigned_task_load` exactly."""
    skew = src_count / src_capacity - dst_count / dst_capacity
    if skew <= 0:
        return False
    proposed_skew = (src_count - 1.0) / src_capacity - (dst_count + 1.0) / dst_capacity
    if proposed_skew < 0:
        return False
    return proposed_skew < skew


def balance_tasks_over_threads(
    clients: Clients, kind: TaskType, may_move: Callable[[ClientState, ClientState], bool] = lambda _s, _d: True
) -> None:
    """Move `kind` tasks from more- to less-loaded clients (total load) until no move helps.

    `may_move(source, destination)` is the standby assignor's `isAllowedTaskMovement` (tags must match).
    Every (source, destination) pair is visited in each pass, so the assigned counts are kept in a list
    (only this loop changes them) and a pair that cannot move a task is skipped before touching its tasks.
    """
    states = [clients[pid] for pid in sorted(clients, key=java_uuid_key)]
    counts = [c.assigned_task_count for c in states]
    capacities = [c.capacity for c in states]
    active = kind is TaskType.ACTIVE
    changed = True
    while changed:
        changed = False
        for i, src in enumerate(states):
            tasks = src.active_tasks if active else src.standby_tasks
            # the source only loses tasks while it is the source: its sorted snapshot is sorted once, then pruned
            remaining = sorted_tasks(tasks)
            src_capacity = capacities[i]
            for j, dst in enumerate(states):
                # j == i never moves: its skew is 0
                if not remaining or not _should_move(counts[i], src_capacity, counts[j], capacities[j]):
                    continue  # the first task's check would stop the loop below
                if len(remaining) != len(tasks):
                    remaining = [t for t in remaining if t in tasks]
                for task in remaining:
                    if not _should_move(counts[i], src_capacity, counts[j], capacities[j]):
                        break
                    if dst.has_assigned_task(task) or not may_move(src, dst):
                        continue
                    if active:
                        src.unassign_active(task)
                        dst.assign_active(task)
                    else:
                        src.unassign_standby(task)
                        dst.assign_standby(task)
                    counts[i] -= 1
                    counts[j] += 1
                    changed = True


def _costs(configs: AssignmentConfigs) -> tuple[int, int]:
    traffic = configs.rack_aware_assignment_traffic_cost
    non_overlap = configs.rack_aware_assignment_non_overlap_cost
    return (
        DEFAULT_TRAFFIC_COST if traffic is None else traffic,
        DEFAULT_NON_OVERLAP_COST if non_overlap is None else non_overlap,
    )


def assign_active_stateful_tasks(
    clients: Clients,
    stateful_tasks: Iterable[TaskId],
    configs: AssignmentConfigs | None = None,
    rack_aware: RackAwareTaskAssignor | None = None,
) -> None:
    order = sorted(clients, key=java_uuid_key)
    tasks = sorted_tasks(stateful_tasks)
    for i, task in enumerate(tasks):
        clients[order[i % len(order)]].assign_active(task)
    balance_tasks_over_threads(clients, TaskType.ACTIVE)
    if rack_aware is not None and configs is not None and rack_aware.can_enable():
        rack_aware.optimize_active_tasks(tasks, clients, order, *_costs(configs))


def _always(_source: uuid.UUID, _destination: uuid.UUID, _task: TaskId, _clients: Clients) -> bool:
    return True


def assign_standby_replica_tasks(
    clients: Clients,
    stateful_tasks: Iterable[TaskId],
    configs: AssignmentConfigs,
    rack_aware: RackAwareTaskAssignor | None = None,
) -> None:
    """`StandbyTaskAssignorFactory`: KIP-708's tag-aware assignor when tags are configured, else the default;
    then, with KIP-925 enabled, the rack-aware standby optimiser (moves allowed by the same assignor)."""
    if configs.num_standby_replicas <= 0:
        return
    if configs.rack_aware_assignment_tags:
        assign_tag_aware_standbys(
            clients, sorted_tasks(stateful_tasks), configs.num_standby_replicas, configs.rack_aware_assignment_tags
        )
        balance_tasks_over_threads(clients, TaskType.STANDBY, is_allowed_task_movement)
        may_move: MoveStandbyPredicate = is_allowed_standby_move
    else:
        assign_default_standbys(clients, stateful_tasks, configs.num_standby_replicas)
        balance_tasks_over_threads(clients, TaskType.STANDBY)
        may_move = _always
    if rack_aware is not None and rack_aware.can_enable():
        order = sorted(clients, key=java_uuid_key)
        rack_aware.optimize_standby_tasks(clients, order, *_costs(configs), may_move)


def assign_default_standbys(clients: Clients, stateful_tasks: Iterable[TaskId], num_standby_replicas: int) -> None:
    """`DefaultStandbyTaskAssignor`: each replica on the least-loaded client that has no copy yet."""
    by_load = ConstrainedPrioritySet.of_clients(
        lambda p, t: not clients[p].has_assigned_task(t), clients, _assigned_task_load
    )
    by_load.offer_all(sorted(clients, key=java_uuid_key))
    for task in sorted_tasks(stateful_tasks):
        for _ in range(num_standby_replicas):
            pid = by_load.poll(task)
            if pid is None:
                break  # Kafka Streams logs "Unable to assign ... standby tasks" and moves on
            clients[pid].assign_standby(task)
            by_load.offer(pid)


# ---- step 4 and 5: movements towards caught-up clients -------------------------------------------------------


def _caught_up_clients_by_load(
    clients: Clients, caught_up: Mapping[TaskId, Collection[uuid.UUID]]
) -> ConstrainedPrioritySet:
    """Movement sources: caught-up clients by total load (clients are offered while movements are collected)."""
    return ConstrainedPrioritySet.of_clients(lambda p, t: p in caught_up[t], clients, _assigned_task_load)


def _needs_move(
    task: TaskId,
    pid: uuid.UUID,
    clients: Clients,
    caught_up: Mapping[TaskId, Collection[uuid.UUID]],
    by_lag: Mapping[TaskId, list[uuid.UUID]],
) -> bool:
    """Not caught up here, and some client is strictly more caught up."""
    if pid in caught_up[task]:
        return False
    most_caught_up = by_lag[task][0]
    return clients[most_caught_up].lag_for(task) < clients[pid].lag_for(task)


def _most_caught_up_eligible(
    by_lag: Mapping[TaskId, list[uuid.UUID]],
    task: TaskId,
    destination: uuid.UUID,
    eligible: Callable[[uuid.UUID], bool],
) -> uuid.UUID | None:
    """First eligible client in lag order; the scan stops (no result) on reaching the destination."""
    for pid in by_lag[task]:
        if pid == destination:
            return None
        if eligible(pid):
            return pid
    return None


def _swap_standby_and_active(task: TaskId, source: ClientState, destination: ClientState) -> None:
    source.unassign_standby(task)
    source.assign_active(task)
    destination.unassign_active(task)
    destination.assign_standby(task)


def _move_active_and_try_to_warm_up(
    budget: WarmupBudget, task: TaskId, source: ClientState, destination: ClientState, warmups: set[TaskId]
) -> None:
    source.assign_active(task)
    destination.unassign_active(task)
    if budget.take():
        destination.assign_standby(task)
        warmups.add(task)


def assign_active_task_movements(
    caught_up: Mapping[TaskId, Collection[uuid.UUID]],
    by_lag: Mapping[TaskId, list[uuid.UUID]],
    clients: Clients,
    warmups: dict[uuid.UUID, set[TaskId]],
    budget: WarmupBudget,
) -> int:
    """`TaskMovement.assignActiveTaskMovements`; returns the number of movements scheduled."""
    by_load = _caught_up_clients_by_load(clients, caught_up)
    movements: JavaPriorityQueue[_TaskMovement] = JavaPriorityQueue(_TaskMovement.priority)
    for pid in sorted(clients, key=java_uuid_key):
        for task in sorted_tasks(clients[pid].active_tasks):
            if _needs_move(task, pid, clients, caught_up, by_lag):
                movements.offer(_TaskMovement(task, pid, len(caught_up[task])))
        by_load.offer(pid)
    scheduled = len(movements)

    while movements:
        movement = movements.poll()
        assert movement is not None
        task, dest_id = movement.task, movement.destination
        dest = clients[dest_id]
        # (a) a caught-up client with a standby copy takes over; no warmup needed
        source = by_load.poll(task, _has_standby(clients, task))
        if source is not None:
            _swap_standby_and_active(task, clients[source], dest)
        else:
            # (b) the least-loaded caught-up client; the destination may keep a warmup
            source = by_load.poll(task)
            swap = False
            if source is None:
                # (c) KAFKA-13600: nobody is caught up, fall back to the most caught-up client
                source = _most_caught_up_eligible(by_lag, task, dest_id, lambda _p: True)
                if source is None:
                    raise TaskAssignmentError(f"tried to move task {task} to a more caught-up client but none exists")
                swap = clients[source].has_standby_task(task)
            if swap:
                _swap_standby_and_active(task, clients[source], dest)
            else:
                warmups_of_dest = warmups.setdefault(dest_id, set())
                _move_active_and_try_to_warm_up(budget, task, clients[source], dest, warmups_of_dest)
        by_load.offer_all([source, dest_id])
    return scheduled


def assign_standby_task_movements(
    caught_up: Mapping[TaskId, Collection[uuid.UUID]],
    by_lag: Mapping[TaskId, list[uuid.UUID]],
    clients: Clients,
    budget: WarmupBudget,
    warmups: Mapping[uuid.UUID, set[TaskId]],
) -> int:
    """`TaskMovement.assignStandbyTaskMovements`; returns the number of standbys actually moved.

    Movements of the same task to different destinations have equal priority; the Java heap decides
    their order, which `JavaPriorityQueue` reproduces from the same insertion sequence.
    """
    by_load = _caught_up_clients_by_load(clients, caught_up)
    movements: JavaPriorityQueue[_TaskMovement] = JavaPriorityQueue(_TaskMovement.priority)
    for pid in sorted(clients, key=java_uuid_key):
        for task in sorted_tasks(clients[pid].standby_tasks):
            if task in warmups.get(pid, ()):
                continue  # a warmup created for an active movement is never moved
            if _needs_move(task, pid, clients, caught_up, by_lag):
                movements.offer(_TaskMovement(task, pid, len(caught_up[task])))
        by_load.offer(pid)
    moved = 0
    while movements:
        movement = movements.poll()
        assert movement is not None
        task, dest_id = movement.task, movement.destination

        def eligible(p: uuid.UUID, t: TaskId = task) -> bool:
            return not clients[p].has_assigned_task(t)

        source = by_load.poll(task, eligible)
        if source is None:
            source = _most_caught_up_eligible(by_lag, task, dest_id, eligible)
        if source is None:
            continue  # nowhere to put it; not counted as a movement
        clients[source].assign_standby(task)
        if not budget.take():
            clients[dest_id].unassign_standby(task)  # else the lagging copy stays as a warmup
        by_load.offer_all([source, dest_id])
        moved += 1
    return moved


# ---- step 6: stateless ------------------------------------------------------------------------------------


def assign_stateless_active_tasks(
    clients: Clients, stateless_tasks: Iterable[TaskId], rack_aware: RackAwareTaskAssignor | None = None
) -> None:
    """Each stateless task to the client with the lowest ACTIVE load (standbys do not count); with KIP-925,
    then re-placed for traffic only (stateless tasks move freely)."""
    order = sorted(clients, key=java_uuid_key)
    by_load = ConstrainedPrioritySet.of_clients(lambda _p, _t: True, clients, _active_task_load)
    by_load.offer_all(order)
    tasks = sorted_tasks(stateless_tasks)
    for task in tasks:
        pid = by_load.poll(task)
        assert pid is not None
        clients[pid].assign_active(task)
        by_load.offer(pid)
    if rack_aware is not None and rack_aware.can_enable():
        rack_aware.optimize_active_tasks(tasks, clients, order, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST)


def assign_clients(
    clients: Clients,
    all_tasks: Iterable[TaskId],
    stateful_tasks: Iterable[TaskId],
    configs: AssignmentConfigs,
    rack_aware: RackAwareTaskAssignor | None = None,
) -> bool:
    """Run HATA on `clients` (mutating their active/standby sets); returns whether probing is needed.

    Each client must have `capacity > 0` and a lag for every stateful task. Previous ownership is not read.
    `rack_aware` (KIP-925) re-places actives and standbys when its `can_enable()` holds.
    """
    all_set = set(all_tasks)
    stateful = sorted_tasks(set(stateful_tasks))
    if not all_set.issuperset(stateful):
        raise TaskAssignmentError(f"stateful tasks {sorted(set(stateful) - all_set)} are not in all_tasks")
    if not clients:
        if all_set:
            raise TaskAssignmentError(f"cannot assign {len(all_set)} tasks: there are no clients")
        return False
    for pid, client in clients.items():
        if client.capacity <= 0:
            raise TaskAssignmentError(f"client {pid} has capacity {client.capacity}; it needs at least one thread")
        if client.active_tasks or client.standby_tasks:
            raise TaskAssignmentError(f"client {pid} already has an assignment: {client}")
        missing = [] if list(client.task_lags) == stateful else [t for t in stateful if t not in client.task_lags]
        if missing:
            raise TaskAssignmentError(f"client {pid} has no lag for stateful tasks {missing}")

    assign_active_stateful_tasks(clients, stateful, configs, rack_aware)
    assign_standby_replica_tasks(clients, stateful, configs, rack_aware)

    budget = WarmupBudget(configs.max_warmup_replicas)
    caught_up = tasks_to_caught_up_clients(clients, stateful, configs.acceptable_recovery_lag)
    by_lag = tasks_to_clients_by_lag(clients, stateful)
    warmups: dict[uuid.UUID, set[TaskId]] = {}
    active_moves = assign_active_task_movements(caught_up, by_lag, clients, warmups, budget)
    standby_moves = assign_standby_task_movements(caught_up, by_lag, clients, budget, warmups)

    assign_stateless_active_tasks(clients, all_set.difference(stateful), rack_aware)
    return active_moves + standby_moves > 0


def _lags_of(state: KafkaStreamsState, stateful: list[TaskId]) -> dict[TaskId, int]:
    """The client's lag for each stateful task: its whole lag map (a copy made in C) when that lists exactly
    the stateful tasks in the same order, as it does for a group whose lags were all computed."""
    lags = state.stateful_tasks_to_lag_sums()
    return lags if list(lags) == stateful else {t: state.lag_for(t) for t in stateful}


class HighAvailabilityTaskAssignor:
    """Kafka Streams' default assignor behind the pluggable `TaskAssignor` API.

    When probing is needed, the leader's client gets a follow-up rebalance (`legacy_task_assignment`).
    `rack_aware_assignment_strategy`, if given, overrides the configured one: the registry's
    `high_availability_min_traffic` / `high_availability_balance_subtopology` name rack-aware HATA outright,
    so sweeps and scenarios can compare it with plain HATA on the same groups.
    """

    def __init__(self, rack_aware_assignment_strategy: str | None = None) -> None:
        self._strategy = rack_aware_assignment_strategy

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        configs = application_state.assignment_configs
        if self._strategy is not None:
            configs = dataclasses.replace(configs, rack_aware_assignment_strategy=self._strategy)
        infos = application_state.all_tasks
        stateful = [task for task, info in infos.items() if info.is_stateful]
        states = application_state.kafka_streams_states(True)
        clients = {
            pid: ClientState(
                state.num_processing_threads,
                task_lags=_lags_of(state, stateful),
                client_tags=state.client_tags,
                rack_id=state.rack_id,
            )
            for pid, state in states.items()
        }
        rack_aware = rack_aware_task_assignor(application_state, configs)
        probing = assign_clients(clients, infos, stateful, configs, rack_aware)
        return legacy_task_assignment(application_state, clients, probing)
