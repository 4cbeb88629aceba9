"""Task offset sums: what a client tells the assignor about its local state (TaskManager#getTaskOffsetSums).

In every rebalance each stream thread reports, per stateful task it has state for, the sum over the task's
changelog partitions of "how far its local state goes". The leader subtracts it from the changelogs' end
offsets to get the client's lag per task, and places active tasks on caught-up clients (and warm-up
replicas elsewhere). The numbers follow Kafka Streams exactly so that the assignor behaves the same:

* running active task -> `LATEST_OFFSET` (-2): "fully caught up", whatever the offsets;
* owned but not running (restoring active, standby) -> sum of `ProcessorStateManager.changelog_offsets()`
  (last restored/written offset + 1, 0 if unknown);
* a task dir on disk that this thread could lock but does not own -> sum of the changelog offsets its
  RocksDB stores keep (KIP-1035; read-only), completed by a `.checkpoint` not migrated yet (the last offset
  itself, no +1: an off-by-one that Kafka Streams has too, kept for identical lags);
* in a sum, `OFFSET_UNKNOWN` (-4) entries are skipped, any other negative offset is a bug, and an
  overflowing sum is pinned to 2**63 - 1.

Locking and summing are separate steps. When a rebalance starts (before the join, where I/O may wait), the
thread locks every non-empty task dir nobody else holds (`lock_non_empty_task_dirs`); the subscription then
sums over the dirs it holds (`task_offset_sums`), which takes no lock. After the assignment the thread
releases the dirs it was not given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.errors import CheckpointError
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME, OFFSET_UNKNOWN, OffsetCheckpoint
from streamlet.state.rocksdb_store import DB_FILE_DIR, read_task_store_offsets
from streamlet.state.state_directory import StateDirectory
from streamlet.task_id import TaskId

log = logging.getLogger(__name__)

#: Reported for running active tasks (Kafka's `Task.LATEST_OFFSET`).
LATEST_OFFSET = -2
#: Offset sums saturate here instead of overflowing (Java's Long.MAX_VALUE).
MAX_OFFSET_SUM = 2**63 - 1


def sum_of_changelog_offsets(task_id: TaskId, offsets: Mapping[TopicPartition, int]) -> int:
    """Kafka's `sumOfChangelogOffsets`: -2 wins, -4 is skipped, other negatives raise, overflow pins."""
    total = 0
    for tp, offset in offsets.items():
        if offset == LATEST_OFFSET:
            return LATEST_OFFSET
        if offset == OFFSET_UNKNOWN:
            continue
        if offset < 0:
            raise ValueError(f"task {task_id}: expected no sentinel offset, but got {offset} for {tp}")
        total += offset
        if total > MAX_OFFSET_SUM:
            log.warning("Sum of changelog offsets for task %s overflowed, pinning to %d", task_id, MAX_OFFSET_SUM)
            return MAX_OFFSET_SUM
    return total


def lock_non_empty_task_dirs(state_directory: StateDirectory, owner: str) -> set[TaskId]:
    """Lock for `owner` every non-empty task dir it can (Kafka's tryToLockAllNonEmptyTaskDirectories).

    Dirs held by another thread are skipped: that thread reports them. A dir that turns out empty on a
    second look (the cleaner got there first) is released again, unless `owner` already held it.
    """
    locked: set[TaskId] = set()
    for task in state_directory.non_empty_task_dirs():
        held_before = state_directory.task_owner(task) == owner
        if not state_directory.lock_task(task, owner):
            continue
        if state_directory.is_task_dir_empty(task):
            if not held_before:
                state_directory.unlock_task(task, owner)
            continue
        locked.add(task)
    return locked


def task_offset_sums(
    state_directory: StateDirectory,
    locked_tasks: Iterable[TaskId],
    *,
    running_active_tasks: Iterable[TaskId],
    owned_changelog_offsets: Mapping[TaskId, Mapping[TopicPartition, int]],
) -> dict[TaskId, int]:
    """The offset sum per task for one stream thread's subscription.

    Args:
        state_directory: the app's StateDirectory (where the task dirs are).
        locked_tasks: the task dirs this thread holds (`lock_non_empty_task_dirs`): the only ones whose
            checkpoints it may report.
        running_active_tasks: this thread's RUNNING active tasks *that have changelogs*; a stateless task
            must not be listed (Kafka reports nothing for it).
        owned_changelog_offsets: this thread's other owned tasks (restoring actives, standbys) mapped to
            their `ProcessorStateManager.changelog_offsets()`; tasks with no changelog map to `{}` or are
            left out. Tasks just created or already closed should be left out: their dirs are then
            reported from the checkpoint, as in Kafka Streams.

    Returns: task -> offset sum, in task order.
    """
    running = set(running_active_tasks)
    sums: dict[TaskId, int] = {}
    for task in running:
        sums[task] = LATEST_OFFSET
    for task, offsets in owned_changelog_offsets.items():
        if task in running or not offsets:
            continue
        sums[task] = sum_of_changelog_offsets(task, offsets)

    for task in sorted(locked_tasks):
        if task in running or task in owned_changelog_offsets:
            continue
        offsets = stored_task_offsets(state_directory.app_dir / str(task))
        if offsets:
            sums[task] = sum_of_changelog_offsets(task, offsets)
    return dict(sorted(sums.items()))


def stored_task_offsets(task_dir: Path) -> dict[TopicPartition, int]:
    """The changelog offsets a task directory keeps: its stores' own (KIP-1035), completed by a `.checkpoint`
    file from before the migration (the stores win)."""
    offsets: dict[TopicPartition, int] = {}
    path = task_dir / CHECKPOINT_FILE_NAME
    if path.exists():
        try:
            offsets.update(OffsetCheckpoint(path).read())
        except (CheckpointError, OSError) as exc:
            log.warning("Task dir %s: cannot read checkpoint to report its offset sum: %s", task_dir, exc)
    offsets.update(read_task_store_offsets(task_dir / DB_FILE_DIR))
    return offsets
