"""Within one client: distribute its tasks over its consumers (stream threads), and cooperative revocation.

Kafka Streams' `StreamsPartitionAssignor.assignTasksToThreads` runs three passes that share one per-thread
load counter (stateful actives, then standbys, then stateless actives; KAFKA-12959), keeps each stateful
task on the thread that reported the lowest lag for it where the quota allows, and deals the rest in
TaskId order. Its last loop iterates a `PriorityQueue` in heap-array order, whose initial array comes from
a `HashSet` for actives; both are emulated so the per-thread result is identical.

Under the COOPERATIVE protocol a task whose input partition another consumer still owns is withheld for one
round (`apply_pending_revocations`), and its consumer is told to rejoin at once; under EAGER nothing is owned at
assign time, so the same rule withholds nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from streamlet.assignment.api import java_string_key
from streamlet.assignment.client_state import LONG_MAX, Partition
from streamlet.assignment.java_collections import JavaPriorityQueue, java_hash_set_order
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId


def sorted_member_ids(member_ids: Iterable[str]) -> list[str]:
    """Consumers in `TreeSet<String>` order (Java `String.compareTo`)."""
    return sorted(set(member_ids), key=java_string_key)


def assign_tasks_to_threads(
    tasks: Sequence[TaskId],
    is_stateful: bool,
    consumers: Sequence[str],
    prev_tasks_by_lag: Callable[[str], Sequence[TaskId]],
    thread_load: dict[str, int],
) -> dict[str, list[TaskId]]:
    """One pass of `assignTasksToThreads`; updates `thread_load` in place.

    `tasks` must be in the iteration order of the Java collection it models (it becomes the initial heap
    array); `consumers` must already be sorted (`sorted_member_ids`).
    """
    assignment: dict[str, list[TaskId]] = {m: [] for m in consumers}
    total = len(tasks) + sum(thread_load.values())
    min_per_thread = total // len(consumers)
    unassigned: JavaPriorityQueue[TaskId] = JavaPriorityQueue.from_collection(tasks)
    to_fill: deque[str] = deque()
    previous_owner: dict[TaskId, str] = {}  # TreeMap: iterated in TaskId order below

    if unassigned:
        for member in consumers:
            thread_tasks = assignment[member]
            target = min_per_thread - thread_load.get(member, 0)
            if is_stateful:
                for task in prev_tasks_by_lag(member):
                    if task in unassigned:
                        if len(thread_tasks) < target:
                            thread_tasks.append(task)
                            unassigned.remove(task)
                        else:
                            previous_owner[task] = member
            if len(thread_tasks) < target:
                to_fill.append(member)

        while to_fill:
            next_task = unassigned.poll()
            if next_task is None:
                raise TaskAssignmentError("ran out of unassigned tasks but some threads were not at capacity")
            member = to_fill.popleft()
            assignment[member].append(next_task)
            if len(assignment[member]) + thread_load.get(member, 0) < min_per_thread:
                to_fill.append(member)

        if unassigned:
            for member in consumers:
                if len(assignment[member]) + thread_load.get(member, 0) == min_per_thread:
                    to_fill.append(member)
            for task in sorted(previous_owner):
                member = previous_owner[task]
                if member in to_fill and task in unassigned:
                    assignment[member].append(task)
                    unassigned.remove(task)
                    to_fill.remove(member)
            for task in unassigned:  # heap-array order, as Java's PriorityQueue iterator
                if not to_fill:
                    raise TaskAssignmentError("more leftover tasks than threads at minimum capacity")
                assignment[to_fill.popleft()].append(task)

    for member, thread_tasks in assignment.items():
        thread_load[member] = thread_load.get(member, 0) + len(thread_tasks)
    return assignment


@dataclass
class ThreadTasks:
    """Tasks of one consumer (stream thread), in the order Kafka Streams lists them."""

    active: list[TaskId] = field(default_factory=list)
    standby: list[TaskId] = field(default_factory=list)


def distribute_tasks_to_threads(
    consumers: Iterable[str],
    active_tasks: Iterable[TaskId],
    standby_tasks: Iterable[TaskId],
    stateful_tasks: Iterable[TaskId] | Mapping[TaskId, object],
    prev_tasks_by_lag: Callable[[str], Sequence[TaskId]],
) -> dict[str, ThreadTasks]:
    """All three passes (stateful actives, standbys, stateless actives) sharing one thread load.

    `prev_tasks_by_lag(member)` is the stateful tasks that member reported, by (lag, TaskId)
    (`ClientState.prev_tasks_by_lag` / `KafkaStreamsState.prev_tasks_by_lag`).
    """
    members = sorted_member_ids(consumers)
    if not members:
        raise TaskAssignmentError("a client with tasks must have at least one consumer")
    stateful = set(stateful_tasks)
    actives = sorted(set(active_tasks))
    thread_load: dict[str, int] = {}
    # statefulActiveTasks()/statelessActiveTasks() are HashSets filled in TaskId order;
    # standbyTasks() is an unmodifiable view of a TreeSet (sorted, and not a SortedSet instance).
    stateful_actives = java_hash_set_order((t for t in actives if t in stateful), TaskId.java_hash_code)
    stateless_actives = java_hash_set_order((t for t in actives if t not in stateful), TaskId.java_hash_code)
    first = assign_tasks_to_threads(stateful_actives, True, members, prev_tasks_by_lag, thread_load)
    standbys = assign_tasks_to_threads(sorted(set(standby_tasks)), True, members, prev_tasks_by_lag, thread_load)
    stateless = assign_tasks_to_threads(stateless_actives, False, members, prev_tasks_by_lag, thread_load)
    return {m: ThreadTasks(first[m] + stateless[m], standbys[m]) for m in members}


def followup_rebalance_times(
    consumers: Iterable[str], pending: Mapping[str, Iterable[TaskId]], deadline_ms: int | None
) -> dict[str, int]:
    """The `nextRebalanceMs` each consumer of one client is sent (`addClientAssignments`).

    A consumer with withheld tasks gets 0 (rebalance now) and cancels the probing deadline for the rest
    of the client; otherwise the first consumer carries the deadline; everyone else gets Long.MAX_VALUE.
    """
    encode_deadline = deadline_ms is not None
    times: dict[str, int] = {}
    for member in sorted_member_ids(consumers):
        if any(True for _ in pending.get(member, ())):
            times[member] = 0
            encode_deadline = False
        elif encode_deadline:
            assert deadline_ms is not None
            times[member] = deadline_ms
            encode_deadline = False
        else:
            times[member] = LONG_MAX
    return times


@dataclass
class ConsumerAssignment:
    """What one consumer is told this round under COOPERATIVE: sorted lists."""

    active: list[TaskId]
    standby: list[TaskId]
    pending_revocation: list[TaskId]


def apply_pending_revocations(
    threads: Mapping[str, ThreadTasks],
    owned_partitions: Mapping[Partition, str],
    all_owned_partitions: Iterable[Partition],
    partitions_for_task: Mapping[TaskId, Iterable[Partition]],
    previous_standby_tasks: Iterable[TaskId],
    stateful_tasks: Iterable[TaskId] | Mapping[TaskId, object],
) -> dict[str, ConsumerAssignment]:
    """Withhold actives whose input partitions another consumer (of any client) still owns.

    `owned_partitions` is this client's partition -> previous owner; `all_owned_partitions` is the union
    over the whole group. A withheld stateful task the client previously had as a standby is given to the
    consumer as a standby meanwhile, so its state is not closed.
    """
    all_owned = set(all_owned_partitions)
    prev_standby = set(previous_standby_tasks)
    stateful = set(stateful_tasks)
    result: dict[str, ConsumerAssignment] = {}
    for member in sorted_member_ids(threads):
        kept: list[TaskId] = []
        withheld: set[TaskId] = set()
        for task in threads[member].active:
            if any(owned_partitions.get(p) != member and p in all_owned for p in partitions_for_task.get(task, ())):
                withheld.add(task)
            else:
                kept.append(task)
        standby = set(threads[member].standby)
        standby.update(t for t in withheld if t in prev_standby and t in stateful)
        result[member] = ConsumerAssignment(sorted(kept), sorted(standby), sorted(withheld))
    return result
