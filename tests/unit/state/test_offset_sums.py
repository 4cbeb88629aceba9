"""Task offset sums, as TaskManager#getTaskOffsetSums computes them."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.state.checkpoint import OFFSET_UNKNOWN, OffsetCheckpoint
from streamlet.state.offset_sums import (
    LATEST_OFFSET,
    MAX_OFFSET_SUM,
    lock_non_empty_task_dirs,
    sum_of_changelog_offsets,
    task_offset_sums,
)
from streamlet.state.rocksdb_store import RocksDBStore
from streamlet.state.state_directory import StateDirectory
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from tests.support.changelog import Record, restore

T = TaskId(0, 0)


def tp(p: int, topic: str = "app-store-changelog") -> TopicPartition:
    return TopicPartition(topic, p)


def test_sum_rules() -> None:
    assert sum_of_changelog_offsets(T, {}) == 0
    assert sum_of_changelog_offsets(T, {tp(0): 5, tp(1): 7}) == 12
    assert sum_of_changelog_offsets(T, {tp(0): 5, tp(1): OFFSET_UNKNOWN}) == 5
    assert sum_of_changelog_offsets(T, {tp(0): 5, tp(1): LATEST_OFFSET}) == LATEST_OFFSET
    assert sum_of_changelog_offsets(T, {tp(0): 2**62, tp(1): 2**62, tp(2): 2**62}) == MAX_OFFSET_SUM
    assert sum_of_changelog_offsets(T, {tp(0): MAX_OFFSET_SUM}) == MAX_OFFSET_SUM
    with pytest.raises(ValueError, match="sentinel"):
        sum_of_changelog_offsets(T, {tp(0): -1})
    with pytest.raises(ValueError):
        sum_of_changelog_offsets(T, {tp(0): -3})


@pytest.fixture
def sd(tmp_path: Path):
    with StateDirectory(tmp_path, "app") as state_dir:
        yield state_dir


def _dir_with_state(sd: StateDirectory, task: TaskId, checkpoint: dict[TopicPartition, int] | None) -> None:
    d = sd.task_dir(task)
    (d / "rocksdb" / "store").mkdir(parents=True)
    if checkpoint is not None:
        OffsetCheckpoint(d / ".checkpoint").write(checkpoint)


def test_task_offset_sums(sd: StateDirectory) -> None:
    running, restoring, standby = TaskId(1, 0), TaskId(1, 1), TaskId(1, 2)
    on_disk, on_disk_unknown, no_checkpoint = TaskId(1, 3), TaskId(1, 4), TaskId(1, 5)
    other_threads, only_checkpoint, stateless = TaskId(1, 6), TaskId(1, 7), TaskId(0, 1)

    # Owned tasks: their state managers report last offset + 1 (0 if unknown).
    psm_restoring = ProcessorStateManager(restoring, sd.task_dir(restoring), {"s": tp(1), "t": tp(1, "other")})
    psm_restoring.register_store("s")
    psm_restoring.register_store("t")
    restore(psm_restoring, tp(1), [(9, b"k", b"v")])
    psm_standby = ProcessorStateManager(standby, sd.task_dir(standby), {"s": tp(2)})
    psm_standby.register_store("s")
    restore(psm_standby, tp(2), [(4, b"k", b"v"), (6, b"k", b"v2")])
    for task in (running, restoring, standby):
        sd.lock_task(task, "thread-1")
    _dir_with_state(sd, running, {tp(0): 100})

    # Not owned, on disk: checkpointed offsets, no +1; -4 skipped.
    _dir_with_state(sd, on_disk, {tp(3): 50, tp(3, "other"): 7})
    _dir_with_state(sd, on_disk_unknown, {tp(4): OFFSET_UNKNOWN})
    _dir_with_state(sd, no_checkpoint, None)
    _dir_with_state(sd, other_threads, {tp(6): 99})
    sd.lock_task(other_threads, "thread-2")
    OffsetCheckpoint(sd.task_dir(only_checkpoint) / ".checkpoint").write({tp(7): 99})

    sums = task_offset_sums(
        sd,
        lock_non_empty_task_dirs(sd, "thread-1"),
        running_active_tasks=[running],
        owned_changelog_offsets={
            restoring: psm_restoring.changelog_offsets(),
            standby: psm_standby.changelog_offsets(),
            stateless: {},
        },
    )
    assert sums == {
        running: LATEST_OFFSET,
        restoring: 10 + 0,
        standby: 7,
        on_disk: 57,
        on_disk_unknown: 0,
    }
    assert list(sums) == sorted(sums)
    # The thread now holds the on-disk dirs it reported; it releases those it is not assigned afterwards.
    assert sd.locked_tasks("thread-1") == {running, restoring, standby, on_disk, on_disk_unknown, no_checkpoint}
    assert sd.task_owner(other_threads) == "thread-2"
    psm_restoring.close(clean=False)
    psm_standby.close(clean=False)


def test_corrupt_checkpoint_of_unowned_dir_is_skipped(sd: StateDirectory, caplog: pytest.LogCaptureFixture) -> None:
    task = TaskId(2, 0)
    _dir_with_state(sd, task, None)
    (sd.task_dir(task) / ".checkpoint").write_text("0\n5\n")
    assert (
        task_offset_sums(sd, lock_non_empty_task_dirs(sd, "t"), running_active_tasks=[], owned_changelog_offsets={})
        == {}
    )
    assert "cannot read checkpoint" in caplog.text


def test_overflow_pins_for_checkpointed_dirs(sd: StateDirectory) -> None:
    task = TaskId(2, 1)
    _dir_with_state(sd, task, {tp(0): MAX_OFFSET_SUM, tp(1): 1})
    locked = lock_non_empty_task_dirs(sd, "t")
    assert task_offset_sums(sd, locked, running_active_tasks=[], owned_changelog_offsets={}) == {task: MAX_OFFSET_SUM}


def test_lock_releases_dirs_emptied_meanwhile_but_not_owned_ones(sd: StateDirectory, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    mine, emptied = TaskId(3, 0), TaskId(3, 1)
    _dir_with_state(sd, mine, None)
    _dir_with_state(sd, emptied, None)
    sd.lock_task(mine, "t")
    # The cleaner empties both dirs between the listing and the second look.
    real = sd.non_empty_task_dirs
    monkeypatch.setattr(sd, "non_empty_task_dirs", lambda: real())
    monkeypatch.setattr(sd, "is_task_dir_empty", lambda task: True)
    assert lock_non_empty_task_dirs(sd, "t") == set()
    assert sd.task_owner(mine) == "t"  # held before: kept
    assert sd.task_owner(emptied) is None  # released again


def test_an_unowned_dir_reports_the_offsets_its_stores_keep(sd: StateDirectory) -> None:
    """KIP-1035: with no `.checkpoint`, the sum comes from the stores' offsets column families (read-only);
    a `.checkpoint` not migrated yet fills in partitions whose store has no offset of its own."""
    task = TaskId(3, 0)
    for name, offset in (("a", 40), ("b", 2)):
        store = RocksDBStore(name, sd.task_dir(task) / "rocksdb" / name)
        store.apply_changelog_records([Record(offset, b"k", b"v")], offsets={tp(0, name): offset})
        store.close()
    OffsetCheckpoint(sd.task_dir(task) / ".checkpoint").write({tp(0, "a"): 7, tp(0, "c"): 5})
    sums = task_offset_sums(sd, lock_non_empty_task_dirs(sd, "t"), running_active_tasks=[], owned_changelog_offsets={})
    assert sums == {task: 40 + 2 + 5}
