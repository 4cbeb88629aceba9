"""FaustTaskAssignor: seed 002's design (Faust's partition assignor) behind the KIP-924 API.

Seed 002 ("Partition Assignor") describes how Faust replaces Kafka Streams' task assignment:

* **PartitionGrouper**: "grouping the same partition numbers onto the same clients for all topics with
  the same number of partitions", which keeps co-partitioned topics (joins, aggregates) together. In
  task terms: the tasks `s_p` of every sub-topology with the same number of partitions `n` form one
  *partition group* `(n, p)`, and a group always goes to one client, as active and as standby.
* **StickyAssignor** (KIP-54's sticky partition assignor as the basis): previous owners keep their
  groups as far as balance allows; "assign a partition (where changelog is involved) to a client which
  contains a standby replica for the given topic/partition whenever possible";
* **standbys**: handled explicitly, "evenly and randomly distributing standbys such that over the long
  term each rebalance will cause the partitions being re-assigned be evenly balanced across all clients".

Faust itself has no threads per client; Kafka Streams' rule in the same seed ("assign tasks to a client
proportionally to the number of threads") fills that gap here. For each class of groups (same `n`):

1. *capacity*: client `c` may hold at most `ceil(G * threads_c / total threads)` of the class's `G`
   active groups, so the limits always add up to at least `G`;
2. *sticky*: a group stays with its previous owner (the client that ran most of its tasks, ties in Java
   UUID order) while the owner is under its limit, groups in partition order;
3. *standby promotion*: a group without a place goes to a previous standby holder with room, least
   loaded first;
4. the rest go to the least-loaded client with room (active tasks per thread over all classes, then
   Java UUID order);
5. *standbys*: each group with state gets `min(num_standby_replicas, clients - 1)` copies on clients
   other than its active one. Previous holders keep theirs while they hold fewer than their even share
   (`ceil(G * replicas * threads_c / total threads)`); the other copies go to the clients with the fewest
   standby groups per thread, ties broken at random; then copies move from clients over their share to
   clients under it, through a third client where no group fits directly (a client cannot back up the
   groups it runs, so keeping alone can leave it short).
   The random draws come from `seed`, by default the leader's clock (`ApplicationState.now_ms`): each
   rebalance draws anew, and a simulation (clock 0) is reproducible.

Lags are not read: like Faust, "valid local state" means a previous standby. No probing rebalances.
Like Faust's assignor, which "optimize[s] for not over utilizing resources instead of under-utilizing",
it moves nothing while every client is within its limit: 6 groups kept 2-2-2 by three clients stay put
when a fourth joins (limit ceil(6/4) = 2), and the newcomer idles until a rebalance frees groups.
"""

from __future__ import annotations

import math
import random
import uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from streamlet.assignment.api import (
    ApplicationState,
    AssignedTask,
    KafkaStreamsAssignment,
    KafkaStreamsState,
    TaskAssignment,
    TaskInfo,
    TaskType,
)
from streamlet.assignment.process_id import java_uuid_key
from streamlet.task_id import TaskId


@dataclass(frozen=True)
class PartitionGroup:
    """Partition `partition` of every sub-topology with `num_partitions` partitions: placed as one unit."""

    num_partitions: int
    partition: int
    tasks: tuple[TaskId, ...]
    stateful_tasks: tuple[TaskId, ...]


def partition_groups(all_tasks: Mapping[TaskId, TaskInfo]) -> dict[int, list[PartitionGroup]]:
    """Seed 002's PartitionGrouper: groups by (number of partitions, partition), per number in partition order.

    A sub-topology's number of partitions is its number of tasks (one task per input partition).
    """
    width = Counter(task.subtopology for task in all_tasks)
    members: dict[tuple[int, int], list[TaskId]] = {}
    for task in sorted(all_tasks):
        members.setdefault((width[task.subtopology], task.partition), []).append(task)
    classes: dict[int, list[PartitionGroup]] = {}
    for (n, p), tasks in sorted(members.items()):
        stateful = tuple(t for t in tasks if all_tasks[t].is_stateful)
        classes.setdefault(n, []).append(PartitionGroup(n, p, tuple(tasks), stateful))
    return classes


class FaustTaskAssignor:
    """Seed 002's Faust assignor (see the module doc); `seed` fixes the standby tie-breaks."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def assign(self, application_state: ApplicationState) -> TaskAssignment:
        states = application_state.kafka_streams_states(False)
        run = _FaustRun(states, random.Random(application_state.now_ms if self.seed is None else self.seed))
        replicas = min(application_state.assignment_configs.num_standby_replicas, len(states) - 1)
        for groups in partition_groups(application_state.all_tasks).values():
            run.assign_actives(groups)
            run.assign_standbys(groups, replicas)
        return TaskAssignment(
            KafkaStreamsAssignment.of(
                pid,
                [AssignedTask(t, TaskType.ACTIVE) for t in sorted(run.actives[pid])]
                + [AssignedTask(t, TaskType.STANDBY) for t in sorted(run.standbys[pid])],
            )
            for pid in states
        )


def share(count: int, threads: int, total_threads: int) -> int:
    """A client's even share of `count` units, proportional to its threads, rounded up."""
    return math.ceil(count * threads / total_threads)


class _FaustRun:
    """The running totals of one assignment, over all classes of partition groups."""

    def __init__(self, states: Mapping[uuid.UUID, KafkaStreamsState], rng: random.Random) -> None:
        self.order = sorted(states, key=java_uuid_key)
        self.threads = {pid: states[pid].num_processing_threads for pid in self.order}
        self.total_threads = sum(self.threads.values())
        self.prev_active = {pid: set(states[pid].previous_active_tasks) for pid in self.order}
        self.prev_standby = {pid: set(states[pid].previous_standby_tasks) for pid in self.order}
        self.rng = rng
        self.actives: dict[uuid.UUID, list[TaskId]] = {pid: [] for pid in self.order}
        self.standbys: dict[uuid.UUID, list[TaskId]] = {pid: [] for pid in self.order}
        self.standby_groups = dict.fromkeys(self.order, 0)
        self.owner: dict[PartitionGroup, uuid.UUID] = {}

    def _active_load(self, pid: uuid.UUID) -> tuple[float, tuple[int, int]]:
        return len(self.actives[pid]) / self.threads[pid], java_uuid_key(pid)

    def _previous_owner(self, group: PartitionGroup) -> uuid.UUID | None:
        counts = [(sum(t in self.prev_active[pid] for t in group.tasks), pid) for pid in self.order]
        best = max(counts, key=lambda c: c[0])  # first of the most, in Java UUID order
        return best[1] if best[0] > 0 else None

    def assign_actives(self, groups: list[PartitionGroup]) -> None:
        limit = {pid: share(len(groups), self.threads[pid], self.total_threads) for pid in self.order}
        held = dict.fromkeys(self.order, 0)

        def place(group: PartitionGroup, pid: uuid.UUID) -> None:
            self.owner[group] = pid
            self.actives[pid].extend(group.tasks)
            held[pid] += 1

        for group in groups:
            owner = self._previous_owner(group)
            if owner is not None and held[owner] < limit[owner]:
                place(group, owner)
        for group in groups:
            if group in self.owner:
                continue
            holders = [pid for pid in self.order if self.prev_standby[pid].intersection(group.stateful_tasks)]
            with_room = [pid for pid in holders if held[pid] < limit[pid]]
            if with_room:
                place(group, min(with_room, key=self._active_load))
        for group in groups:
            if group not in self.owner:
                place(group, min((p for p in self.order if held[p] < limit[p]), key=self._active_load))

    def assign_standbys(self, groups: list[PartitionGroup], replicas: int) -> None:
        stateful = [g for g in groups if g.stateful_tasks]
        if replicas <= 0 or not stateful:
            return
        even = {pid: share(len(stateful) * replicas, self.threads[pid], self.total_threads) for pid in self.order}
        count = dict.fromkeys(self.order, 0)  # standby groups of this class per client
        copies: dict[PartitionGroup, list[uuid.UUID]] = {}
        for group in stateful:
            active = self.owner[group]
            chosen: list[uuid.UUID] = []
            for pid in self.order:  # previous holders keep their copy while under their even share
                if (
                    len(chosen) < replicas
                    and pid != active
                    and self.prev_standby[pid].intersection(group.stateful_tasks)
                    and count[pid] < even[pid]
                ):
                    chosen.append(pid)
                    count[pid] += 1
            while len(chosen) < replicas:  # the fewest standbys per thread (all classes), ties at random

                def load(pid: uuid.UUID) -> float:
                    return (self.standby_groups[pid] + count[pid]) / self.threads[pid]

                eligible = [pid for pid in self.order if pid != active and pid not in chosen]
                fewest = min(load(pid) for pid in eligible)
                pick = self.rng.choice([pid for pid in eligible if load(pid) == fewest])
                chosen.append(pick)
                count[pick] += 1
            copies[group] = chosen
        self._even_out(copies, count, even)
        for group, chosen in copies.items():
            for pid in chosen:
                self.standbys[pid].extend(group.stateful_tasks)
                self.standby_groups[pid] += 1

    def _even_out(
        self, copies: dict[PartitionGroup, list[uuid.UUID]], count: dict[uuid.UUID, int], even: dict[uuid.UUID, int]
    ) -> None:
        """Move standby groups from clients over their even share to clients under it.

        Keeping copies in partition order can leave a client that must not hold some groups (it runs
        them) short of standbys while others hold more than their share. Each step moves one copy along a
        chain of clients, from one over its share to one under it, each handing on a group the next may hold
        (one it neither holds nor runs), the highest partition first: when the one under its share may hold
        none of the over one's groups, a third client takes one of them and hands one of its own on. Every
        client in between keeps its count. The shares add up to at least the number of copies, so an
        overloaded client means an underloaded one; the moves stop when no chain joins the two.
        """

        def movable(giver: uuid.UUID, taker: uuid.UUID) -> PartitionGroup | None:
            fits = [
                g for g, chosen in copies.items() if giver in chosen and taker not in chosen and self.owner[g] != taker
            ]
            return fits[-1] if fits else None

        def chain(giver: uuid.UUID) -> list[tuple[uuid.UUID, uuid.UUID, PartitionGroup]] | None:
            """The shortest chain of moves from `giver` to a client under its share (breadth first)."""
            came_from: dict[uuid.UUID, tuple[uuid.UUID, PartitionGroup] | None] = {giver: None}
            frontier = [giver]
            while frontier:
                reached = []
                for source in frontier:
                    for target in self.order:
                        if target in came_from or (group := movable(source, target)) is None:
                            continue
                        came_from[target] = (source, group)
                        if count[target] < even[target]:
                            moves = []
                            while (step := came_from[target]) is not None:
                                moves.append((step[0], target, step[1]))
                                target = step[0]
                            return moves[::-1]
                        reached.append(target)
                frontier = reached
            return None

        moved = True
        while moved:
            moved = False
            for giver in self.order:
                if count[giver] <= even[giver] or (moves := chain(giver)) is None:
                    continue
                for source, target, group in moves:
                    copies[group][copies[group].index(source)] = target
                count[giver] -= 1
                count[moves[-1][1]] += 1
                moved = True
