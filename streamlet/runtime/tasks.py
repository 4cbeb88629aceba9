"""Tasks: the tasks of one stream thread, by id and by input partition (Kafka Streams' `Tasks`).

The task manager decides what to open and close; this registry only keeps the maps, and keeps their
indexes consistent with them: every change goes through `add_active`/`remove_active` (and the standby and
pending equivalents), so the input partition index and the list of grouped tasks can never point at a closed
task or miss an open one.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from aiokafka.structs import TopicPartition

from streamlet.runtime.standby_task import StandbyTask
from streamlet.runtime.stream_task import StreamTask
from streamlet.task_id import TaskId

__all__ = ["OpenRetry", "Tasks"]


@dataclass
class OpenRetry:
    """Exponential backoff for a pending task whose store cannot be opened yet (0.1 s doubling to 10 s)."""

    attempts: int = 0
    next_attempt: float = 0.0

    def failed(self, now: float) -> OpenRetry:
        self.attempts += 1
        self.next_attempt = now + min(10.0, 0.1 * 2 ** (self.attempts - 1))
        return self

    def should_log(self) -> bool:
        """The first failure, then every power of two: a few lines a minute at most."""
        return self.attempts & (self.attempts - 1) == 0


class Tasks:
    """Active and standby tasks by id, the assigned tasks not created yet, and the active tasks' indexes."""

    def __init__(self) -> None:
        self._active: dict[TaskId, StreamTask] = {}
        self._standby: dict[TaskId, StandbyTask] = {}
        self._pending: dict[TaskId, bool] = {}  # assigned, not created yet (directory locked): task -> is_active
        self._retries: dict[TaskId, OpenRetry] = {}  # pending tasks whose store could not be opened
        self._by_partition: dict[TopicPartition, StreamTask] = {}
        self._grouped: list[StreamTask] = []  # active tasks with several input partitions: records wait in queues
        # read-only views: callers iterate and look up, only this class changes the maps
        self.active: Mapping[TaskId, StreamTask] = MappingProxyType(self._active)
        self.standby: Mapping[TaskId, StandbyTask] = MappingProxyType(self._standby)
        self.pending: Mapping[TaskId, bool] = MappingProxyType(self._pending)

    # ---- active -------------------------------------------------------------------------------------------

    def add_active(self, task: StreamTask) -> None:
        """Register an active task that was just created (it must not be registered, nor pending any more)."""
        if task.task_id in self._active:
            raise ValueError(f"active task {task.task_id} is already registered")
        for tp in task.partitions:
            owner = self._by_partition.get(tp)
            if owner is not None:
                raise ValueError(f"input partition {tp} of task {task.task_id} is already task {owner.task_id}'s")
        self._active[task.task_id] = task
        for tp in task.partitions:
            self._by_partition[tp] = task
        if task.partition_group is not None:
            self._grouped.append(task)

    def remove_active(self, task_id: TaskId) -> StreamTask | None:
        """Unregister an active task (closed); None if it was not registered."""
        task = self._active.pop(task_id, None)
        if task is None:
            return None
        for tp in task.partitions:
            if self._by_partition.get(tp) is task:
                del self._by_partition[tp]
        if task.partition_group is not None:
            self._grouped.remove(task)
        return task

    @property
    def by_partition(self) -> Mapping[TopicPartition, StreamTask]:
        """The active task of each input partition (Kafka's `activeTasksForInputPartition`)."""
        return self._by_partition

    @property
    def grouped(self) -> Collection[StreamTask]:
        """The active tasks with several input partitions (their own `PartitionGroup`), in registration order."""
        return self._grouped

    # ---- standby ------------------------------------------------------------------------------------------

    def add_standby(self, task: StandbyTask) -> None:
        if task.task_id in self._standby:
            raise ValueError(f"standby task {task.task_id} is already registered")
        self._standby[task.task_id] = task

    def remove_standby(self, task_id: TaskId) -> StandbyTask | None:
        return self._standby.pop(task_id, None)

    # ---- pending (Kafka's pendingTasksToCreate) -----------------------------------------------------------

    def add_pending(self, task_id: TaskId, *, active: bool) -> None:
        """An assigned task to create once its directory and stores can be opened."""
        self._pending[task_id] = active

    def remove_pending(self, task_id: TaskId) -> None:
        """The task was created (or is no longer assigned): its retries go with it."""
        self._pending.pop(task_id, None)
        self._retries.pop(task_id, None)

    def retain_pending(self, keep: Iterable[TaskId]) -> None:
        """Forget the pending tasks outside `keep` (a new assignment took them away), keeping the order of the rest."""
        kept = set(keep)
        for task_id in [t for t in self._pending if t not in kept]:
            self.remove_pending(task_id)

    def open_retry(self, task_id: TaskId) -> OpenRetry | None:
        """The backoff of a pending task that failed to open, None if it has not failed."""
        return self._retries.get(task_id)

    def open_failed(self, task_id: TaskId, now: float) -> OpenRetry:
        """Count a failed attempt to open a pending task: when to try again, and whether to log it."""
        if task_id not in self._pending:
            raise KeyError(f"task {task_id} is not pending")
        retry = self._retries.setdefault(task_id, OpenRetry())
        return retry.failed(now)

    def has_pending(self) -> bool:
        return bool(self._pending)
