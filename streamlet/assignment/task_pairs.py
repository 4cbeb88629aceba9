"""TaskPairs: the sticky assignors' memory of which tasks already share a client.

Both of Kafka Streams' sticky assignors (`assignors.StickyTaskAssignor` and the internal
`LegacyStickyTaskAssignor`) carry an identical private copy of this class. When they look for the
least-loaded client they first skip clients on which the task would only form pairs that exist
elsewhere already, so that no two clients end up with the same set of tasks (seed 002's "never the
same set of tasks on two clients"); only if no client forms a new pair do they fall back to load alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId

_INT_MASK = 0xFFFFFFFF


def _java_int(value: int) -> int:
    value &= _INT_MASK
    return value - (1 << 32) if value >= (1 << 31) else value


class TaskPairs:
    """Unordered pairs of tasks that were placed on the same client, capped at all possible pairs."""

    def __init__(self, task_count: int) -> None:
        # Java: `int maxPairs = taskCount * (taskCount - 1) / 2` (32-bit; the product is even, so exact),
        # then `new HashSet<>(maxPairs)`, which rejects a negative (overflowed) capacity.
        self.max_pairs = _java_int(task_count * (task_count - 1)) // 2
        if self.max_pairs < 0:
            raise TaskAssignmentError(f"{task_count} tasks overflow the sticky assignor's task-pair count")
        self._pairs: set[tuple[TaskId, TaskId]] = set()

    @staticmethod
    def pair(task1: TaskId, task2: TaskId) -> tuple[TaskId, TaskId]:
        return (task1, task2) if task1 < task2 else (task2, task1)

    def has_new_pair(self, task: TaskId, assigned: Iterable[TaskId]) -> bool:
        """True if `task` would form a pair with one of `assigned` that no client has yet."""
        if len(self._pairs) == self.max_pairs:
            return False
        return any(self.pair(task, other) not in self._pairs for other in assigned)

    def add_pairs(self, task: TaskId, assigned: Iterable[TaskId]) -> None:
        for other in assigned:
            self._pairs.add(self.pair(other, task))
