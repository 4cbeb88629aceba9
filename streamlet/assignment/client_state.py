"""ClientState: what the leader knows about one client (process) during one rebalance, and its lags.

Mirrors Kafka Streams' `ClientState` field for field, because the assignor's arithmetic (loads, lags,
"already holds this task" checks) has to be the same to produce the same assignment. One instance lives
for one rebalance: the leader fills in the inputs (capacity, reported offset sums, owned partitions),
computes lags, and the assignor fills in `active_tasks` / `standby_tasks`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeAlias

from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId

#: A topic partition as (topic, partition); sorts like Kafka Streams' TOPIC_PARTITION_COMPARATOR.
Partition: TypeAlias = tuple[str, int]

#: Offset sum a client reports for a task it runs as a RUNNING active (`Task.LATEST_OFFSET`).
LATEST_OFFSET = -2
#: Offset sum for tasks of pre-v7 subscriptions, and every end sum when end offsets could not be fetched.
UNKNOWN_OFFSET_SUM = -3
#: A checkpoint offset that is unknown (`OffsetCheckpoint.OFFSET_UNKNOWN`); skipped when summing.
OFFSET_UNKNOWN = -4
LONG_MAX = (1 << 63) - 1


def compute_task_lag(offset_sum: int | None, end_offset_sum: int) -> int:
    """Lag of one task on one client, exactly `ClientState.computeTaskLags`.

    * not reported (None) counts as offset 0, so the lag is the whole end sum;
    * -2 (running active) and -3 (unknown) pass through as the lag;
    * a reported sum beyond the end (state from a reset/corrupted changelog) counts as no state: lag = end sum.
    """
    offset = 0 if offset_sum is None else offset_sum
    if offset == LATEST_OFFSET:
        return LATEST_OFFSET
    if offset == UNKNOWN_OFFSET_SUM:
        return UNKNOWN_OFFSET_SUM
    if end_offset_sum < offset:
        return end_offset_sum
    return end_offset_sum - offset


def end_offset_sum(end_offsets: Iterable[int]) -> int:
    """Leader side: sum a task's changelog end offsets, pinned to Long.MAX_VALUE on overflow."""
    total = 0
    for offset in end_offsets:
        total += offset
        if total > LONG_MAX:
            return LONG_MAX
    return total


class ClientState:
    """One client's inputs (capacity, reported offsets, lags, ownership) and its assignment (output)."""

    def __init__(
        self,
        capacity: int = 0,
        *,
        task_offset_sums: Mapping[TaskId, int] | None = None,
        task_lags: Mapping[TaskId, int] | None = None,
        previous_active_tasks: Iterable[TaskId] = (),
        previous_standby_tasks: Iterable[TaskId] = (),
        client_tags: Mapping[str, str] | None = None,
        rack_id: str | None = None,
    ) -> None:
        self.capacity = capacity
        #: the client's rack (`client_rack`), read by KIP-925 rack-aware assignment; None if unknown
        self.rack_id = rack_id
        #: the client's `client_tags` (KIP-708), read by the rack-aware standby assignor
        self.client_tags: dict[str, str] = dict(client_tags or {})
        #: union over the client's consumers of reported task -> offset sum (later consumers win)
        self.task_offset_sums: dict[TaskId, int] = dict(task_offset_sums or {})
        #: lag of every stateful task of the topology; also defines which tasks are stateful
        self.task_lags: dict[TaskId, int] = dict(task_lags or {})
        #: member id -> tasks that consumer reported offsets for (thread-level stickiness)
        self.consumer_to_previous_stateful_tasks: dict[str, frozenset[TaskId]] = {}
        #: partition -> member id of the consumer that owned it before this rebalance
        self.owned_partitions: dict[Partition, str] = {}
        self.previous_active_tasks: set[TaskId] = set(previous_active_tasks)
        self.previous_standby_tasks: set[TaskId] = set(previous_standby_tasks)
        self.active_tasks: set[TaskId] = set()
        self.standby_tasks: set[TaskId] = set()

    # ---- inputs -------------------------------------------------------------------------------------

    def add_consumer(
        self, member_id: str, task_offset_sums: Mapping[TaskId, int], owned_partitions: Iterable[Partition] = ()
    ) -> None:
        """Register one consumer (stream thread) of this client: one more unit of capacity."""
        self.capacity += 1
        for partition in owned_partitions:
            self.owned_partitions[partition] = member_id
        self.task_offset_sums.update(task_offset_sums)
        self.consumer_to_previous_stateful_tasks[member_id] = frozenset(task_offset_sums)

    def initialize_prev_tasks(self, task_for_partition: Mapping[Partition, TaskId]) -> None:
        """Previous active = tasks of owned partitions and tasks reported at -2; everything else reported is standby."""
        for partition in self.owned_partitions:
            task = task_for_partition.get(partition)
            if task is not None:
                self.previous_active_tasks.add(task)
        for task, offset_sum in self.task_offset_sums.items():
            if task in self.previous_active_tasks:
                continue
            if offset_sum == LATEST_OFFSET:
                self.previous_active_tasks.add(task)
            else:
                self.previous_standby_tasks.add(task)

    def compute_task_lags(self, end_offset_sums: Mapping[TaskId, int]) -> None:
        """Lag for every stateful task (the keys of `end_offset_sums`); see `compute_task_lag`.

        A task the client did not report lags by its whole end sum, so the lags start as a copy of the end
        sums (made in C; a client reports a few of a group's thousands of tasks) and only reported tasks
        are recomputed. Updating existing keys keeps `end_offset_sums`' key order.
        """
        lags = dict(end_offset_sums)
        for task, offset_sum in self.task_offset_sums.items():
            end = lags.get(task)
            if end is not None:
                lags[task] = compute_task_lag(offset_sum, end)
        self.task_lags = lags

    def lag_for(self, task: TaskId) -> int:
        try:
            return self.task_lags[task]
        except KeyError:
            raise TaskAssignmentError(f"no lag known for task {task}: it is not a stateful task") from None

    def is_stateful(self, task: TaskId) -> bool:
        return task in self.task_lags

    def prev_tasks_by_lag(self, member_id: str) -> list[TaskId]:
        """The stateful tasks this consumer reported, by (lag, task id): running actives (-2) come first."""
        tasks = self.consumer_to_previous_stateful_tasks.get(member_id, frozenset())
        return sorted((t for t in tasks if t in self.task_lags), key=lambda t: (self.task_lags[t], t))

    # ---- assignment (output) --------------------------------------------------------------------------

    def assign_active(self, task: TaskId) -> None:
        self._assert_not_assigned(task)
        self.active_tasks.add(task)

    def assign_standby(self, task: TaskId) -> None:
        self._assert_not_assigned(task)
        self.standby_tasks.add(task)

    def unassign_active(self, task: TaskId) -> None:
        if task not in self.active_tasks:
            raise TaskAssignmentError(f"tried to unassign active task {task}, but it is not assigned: {self}")
        self.active_tasks.remove(task)

    def unassign_standby(self, task: TaskId) -> None:
        if task not in self.standby_tasks:
            raise TaskAssignmentError(f"tried to unassign standby task {task}, but it is not assigned: {self}")
        self.standby_tasks.remove(task)

    def has_assigned_task(self, task: TaskId) -> bool:
        return task in self.active_tasks or task in self.standby_tasks

    def has_standby_task(self, task: TaskId) -> bool:
        return task in self.standby_tasks

    def has_active_task(self, task: TaskId) -> bool:
        return task in self.active_tasks

    @property
    def assigned_task_count(self) -> int:
        return len(self.active_tasks) + len(self.standby_tasks)

    @property
    def assigned_task_load(self) -> float:
        """(active + standby) per thread: drives balancing, standby placement and movement sources."""
        return (len(self.active_tasks) + len(self.standby_tasks)) / self.capacity  # hot: heap comparisons

    @property
    def active_task_load(self) -> float:
        """Active tasks per thread: drives stateless placement only."""
        return len(self.active_tasks) / self.capacity

    def stateful_active_tasks(self) -> list[TaskId]:
        return sorted(t for t in self.active_tasks if t in self.task_lags)

    def stateless_active_tasks(self) -> list[TaskId]:
        return sorted(t for t in self.active_tasks if t not in self.task_lags)

    def _assert_not_assigned(self, task: TaskId) -> None:
        if self.has_assigned_task(task):
            raise TaskAssignmentError(f"tried to assign task {task}, but it is already assigned: {self}")

    def __repr__(self) -> str:
        return (
            f"ClientState(capacity={self.capacity}, active={sorted(self.active_tasks)}, "
            f"standby={sorted(self.standby_tasks)})"
        )
