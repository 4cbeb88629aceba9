"""KIP-708 rack-aware standbys: Kafka Streams' `ClientTagAwareStandbyTaskAssignor` (4.1.1), exactly.

HATA uses it instead of the default standby assignor when `rack_aware_assignment_tags` is set. Clients
carry tags (`client.tag.<key>` in Kafka Streams, `client_tags` in streamlet), e.g. `zone` and `cluster`.
For each stateful task, in `TaskId` order, and the client running its active:

1. every client is (re-)offered to the shared least-loaded set (total load, no copy of the task yet);
2. the client last used (first the active's) marks its rack-aware tag values as *used*: clients with
   the same value are excluded. A tag key with no more distinct values than clients used so far is
   released instead (all its values count as unused again), so a second standby over two clusters
   still lands in another zone;
3. the least-loaded client outside every used tag value takes a standby; repeat until the task has its
   `num_standby_replicas`, or no client qualifies.

Tasks left short then go, in Java `HashMap` order of the `TaskId`s (which decides who gets the
least-loaded clients first), to the least-loaded clients without a copy, ignoring tags.

Afterwards, HATA balances standbys only between clients whose tags agree on every key of the source
(`is_allowed_task_movement`), so balancing does not undo the spread.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from streamlet.assignment.client_state import ClientState
from streamlet.assignment.constrained_priority_set import ConstrainedPrioritySet
from streamlet.assignment.java_collections import java_hash_set_order
from streamlet.assignment.process_id import java_uuid_key
from streamlet.task_id import TaskId

TagEntry = tuple[str, str]


def is_allowed_task_movement(source: ClientState, destination: ClientState) -> bool:
    """Every tag of the source has the same value on the destination (a missing key never matches)."""
    return all(destination.client_tags.get(key) == value for key, value in source.client_tags.items())


def is_allowed_standby_move(
    source: uuid.UUID, destination: uuid.UUID, task: TaskId, clients: Mapping[uuid.UUID, ClientState]
) -> bool:
    """The 4-argument `isAllowedTaskMovement` (KIP-925's standby optimiser): a move must not shrink the
    number of distinct (tag, value) pairs among the clients holding `task`."""
    with_source: set[TagEntry] = set()
    with_destination: set[TagEntry] = set()
    for pid, client in clients.items():
        if client.has_assigned_task(task) and pid != source and pid != destination:
            with_source.update(client.client_tags.items())
            with_destination.update(client.client_tags.items())
    with_source.update(clients[source].client_tags.items())
    with_destination.update(clients[destination].client_tags.items())
    return len(with_destination) >= len(with_source)


def _least_loaded_without_the_task(clients: Mapping[uuid.UUID, ClientState]) -> ConstrainedPrioritySet:
    """`createLeastLoadedPrioritySetConstrainedByAssignedTask`."""
    return ConstrainedPrioritySet(
        lambda p, t: not clients[p].has_assigned_task(t), lambda p: clients[p].assigned_task_load
    )


def _update_used_tag_entries(
    used_client: ClientState,
    count_of_used_clients: int,
    rack_aware_tags: frozenset[str],
    tag_key_to_values: Mapping[str, set[str]],
    tag_entry_to_clients: Mapping[TagEntry, set[uuid.UUID]],
    used: dict[TagEntry, set[uuid.UUID]],
) -> None:
    """`updateClientsOnAlreadyUsedTagEntries` (keys are independent, so their order does not matter)."""
    for key, value in used_client.client_tags.items():
        if key not in rack_aware_tags:
            continue  # Kafka Streams logs that the tag is ignored
        all_values = tag_key_to_values[key]
        if len(all_values) <= count_of_used_clients:
            for each in all_values:
                used.pop((key, each), None)
        else:
            used[(key, value)] = tag_entry_to_clients[(key, value)]


def _assign_with_different_tags(
    task: TaskId,
    active_client: uuid.UUID,
    clients: Mapping[uuid.UUID, ClientState],
    order: Sequence[uuid.UUID],
    by_load: ConstrainedPrioritySet,
    remaining: dict[TaskId, int],
    rack_aware_tags: frozenset[str],
    tag_key_to_values: Mapping[str, set[str]],
    tag_entry_to_clients: Mapping[TagEntry, set[uuid.UUID]],
) -> None:
    """`assignStandbyTasksToClientsWithDifferentTags`: polled clients are not re-offered for this task."""
    by_load.offer_all(order)
    count_of_used_clients = 1  # the active's client counts as used
    num_remaining = remaining[task]
    used: dict[TagEntry, set[uuid.UUID]] = {}
    last_used = active_client
    while True:  # Java: do { ... } while (numRemainingStandbys > 0)
        _update_used_tag_entries(
            clients[last_used], count_of_used_clients, rack_aware_tags, tag_key_to_values, tag_entry_to_clients, used
        )
        chosen = by_load.poll(task, lambda p: not any(p in members for members in used.values()))
        if chosen is None:
            break
        count_of_used_clients += 1
        num_remaining -= 1
        clients[chosen].assign_standby(task)
        last_used = chosen
        if num_remaining <= 0:
            break
    if num_remaining > 0:
        remaining[task] = num_remaining  # Kafka Streams warns and falls back to the least-loaded clients
    else:
        del remaining[task]


def assign_tag_aware_standbys(
    clients: Mapping[uuid.UUID, ClientState],
    stateful_tasks: Sequence[TaskId],
    num_standby_replicas: int,
    rack_aware_assignment_tags: Sequence[str],
) -> None:
    """`ClientTagAwareStandbyTaskAssignor.assign` on HATA's `TreeMap` of clients and `TreeSet` of tasks."""
    order = sorted(clients, key=java_uuid_key)
    tasks = sorted(stateful_tasks)
    rack_aware_tags = frozenset(rack_aware_assignment_tags)
    # Collectors.toMap: a HashMap filled in TaskId order; its iteration order drives the fallback.
    remaining = dict.fromkeys(tasks, num_standby_replicas)
    remaining_order = java_hash_set_order(tasks, TaskId.java_hash_code)

    tag_key_to_values: dict[str, set[str]] = {}
    tag_entry_to_clients: dict[TagEntry, set[uuid.UUID]] = {}
    for pid in order:
        for key, value in clients[pid].client_tags.items():
            tag_key_to_values.setdefault(key, set()).add(value)
            tag_entry_to_clients.setdefault((key, value), set()).add(pid)

    by_load = _least_loaded_without_the_task(clients)
    for task in tasks:
        for pid in order:
            if task in clients[pid].active_tasks:
                _assign_with_different_tags(
                    task,
                    pid,
                    clients,
                    order,
                    by_load,
                    remaining,
                    rack_aware_tags,
                    tag_key_to_values,
                    tag_entry_to_clients,
                )

    if not remaining:
        return
    by_load.offer_all(order)
    for task in remaining_order:
        if task not in remaining:
            continue
        while remaining[task] > 0:  # `pollClientAndMaybeAssignAndUpdateRemainingStandbyTasks`
            least_loaded = by_load.poll(task)
            if least_loaded is None:
                break  # Kafka Streams logs "Unable to assign ... standby tasks"
            clients[least_loaded].assign_standby(task)
            remaining[task] -= 1
            by_load.offer(least_loaded)
