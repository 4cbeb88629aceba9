"""Kafka Streams' COOPERATIVE per-consumer step, which streamlet's EAGER group never needs.

Under COOPERATIVE rebalancing a task whose input partition another consumer still owns is withheld for a
round; the Java-computed reference cases include that step, so the tests reproduce it here to compare
streamlet's per-thread distribution with Kafka Streams' per-consumer output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from streamlet.assignment.client_state import ClientState, Partition
from streamlet.assignment.thread_assignment import ThreadTasks, distribute_tasks_to_threads, sorted_member_ids
from streamlet.task_id import TaskId


def distribute_client(client: ClientState, consumers: Iterable[str] | None = None) -> dict[str, ThreadTasks]:
    """`distribute_tasks_to_threads` for a ClientState after assignment (consumers default to its own)."""
    members = client.consumer_to_previous_stateful_tasks.keys() if consumers is None else consumers
    return distribute_tasks_to_threads(
        members, client.active_tasks, client.standby_tasks, client.task_lags, client.prev_tasks_by_lag
    )


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
