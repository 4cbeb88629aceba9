"""TaskManager on fake Kafka clients and real RocksDB: commit order, lost / migrated / revoked paths,
seek-back, restoration and directory locks."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aiokafka.errors import RequestTimedOutError, TopicAuthorizationFailedError
from aiokafka.structs import TopicPartition

from streamlet.kafka.group.membership import RebalanceInProgressCommitError
from streamlet.runtime.record_collector import ProductionError, RetriableProductionError
from streamlet.runtime.restore_listener import RestoreProgressTracker
from streamlet.runtime.task_state import TaskState
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME
from streamlet.state.rocksdb_store import DB_FILE_DIR, RocksDBStore, read_task_store_offsets
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from tests.unit.runtime._fakes import FakeKafka, commit_failed
from tests.unit.runtime._harness import CHANGELOG, CHANGELOG0, IN0, OUTPUT, T0, Harness, int64, latest, new_kafka


@pytest.fixture
def kafka(monkeypatch: pytest.MonkeyPatch) -> FakeKafka:
    """The fake cluster; every checkpoint is an event in its log."""
    kafka = new_kafka()
    original = ProcessorStateManager.checkpoint

    def checkpoint(self: ProcessorStateManager) -> None:
        original(self)
        kafka.events.append(f"checkpoint {self.task_id}")

    monkeypatch.setattr(ProcessorStateManager, "checkpoint", checkpoint)
    return kafka


@pytest.fixture
def harness(kafka: FakeKafka, tmp_path: Path) -> Iterator[Harness]:
    h = Harness(kafka, tmp_path)
    yield h
    h.close()


async def running(h: Harness) -> None:
    """Assign task 0_0 and let its (empty) restoration finish."""
    h.assign(T0)
    assert h.task_manager.active[T0].state is TaskState.RESTORING
    await h.task_manager.restore(timeout_ms=0)
    assert h.task_manager.active[T0].state is TaskState.RUNNING


def words(kafka: FakeKafka, *keys: str) -> None:
    for key in keys:
        kafka.append(IN0, key.encode(), b"line")


async def test_commit_flushes_caches_then_producer_then_commits_offsets_then_checkpoints(
    harness: Harness, kafka: FakeKafka
) -> None:
    await running(harness)
    words(kafka, "a", "b", "a")
    assert await harness.poll_and_process() == 3
    assert kafka.events == []  # counts sit in the record cache until the commit

    await harness.task_manager.commit(force_checkpoint=True)

    kinds = [event.split()[0] for event in kafka.events]
    assert kinds == ["produce", "produce", "producer", "commit", "checkpoint"], kafka.events
    assert "commit in-0:3" in kafka.events
    assert latest(kafka, CHANGELOG) == {"a": 2, "b": 1} == latest(kafka, OUTPUT)
    checkpoint = read_task_store_offsets(harness.state_directory.task_dir(T0) / DB_FILE_DIR)
    assert checkpoint == {CHANGELOG0: 1}  # the last changelog offset the producer had acknowledged


async def test_lost_tasks_flush_nothing(harness: Harness, kafka: FakeKafka) -> None:
    await running(harness)
    words(kafka, "a", "a", "b")
    await harness.poll_and_process()
    harness.consumer.lost = True

    assert await harness.task_manager.commit_or_migrate() is False

    assert kafka.events == []  # no changelog or output record, no offset commit, no checkpoint
    assert harness.task_manager.active == {}
    assert harness.state_directory.task_owner(T0) is None
    assert not (harness.state_directory.task_dir(T0) / CHECKPOINT_FILE_NAME).exists()


async def test_lost_path_also_drops_records_not_yet_sent(harness: Harness, kafka: FakeKafka) -> None:
    await running(harness)
    harness.task_manager.active[T0].send(OUTPUT, b"k", int64(1), 0, 0)  # queued in the collector, not drained

    await harness.task_manager.handle_lost_all("test")
    await harness.collector.flush()

    assert kafka.events == ["producer flush"] and kafka.logs == {}


def _commit_refused(h: Harness) -> None:
    h.consumer.commit_error = commit_failed()


def _batch_expired(h: Harness) -> None:
    # a zombie woken after its session timeout finds its in-flight batches expired
    h.producer.delivery_error = RequestTimedOutError()


@pytest.mark.parametrize("fail", [_commit_refused, _batch_expired], ids=["commit refused", "retriable send failure"])
async def test_migrated_tasks_close_dirty_without_commit_or_checkpoint(
    harness: Harness, kafka: FakeKafka, fail: Callable[[Harness], None]
) -> None:
    """A refused commit, or a send failure Kafka calls retriable (as Kafka Streams' TaskCorruptedException):
    the tasks close dirty, their input is redone from the last commit, and the thread goes on (a retriable send
    failure used to raise ProductionError and end the worker)."""
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()
    fail(harness)

    assert await harness.task_manager.commit_or_migrate() is False

    assert not any(e.startswith(("commit", "checkpoint")) for e in kafka.events), kafka.events
    assert harness.task_manager.active == {}
    assert kafka.committed == {}
    assert harness.consumer.rejoin_requested  # the tasks come back through a rebalance


async def test_a_send_failure_kafka_does_not_retry_stops_the_thread(harness: Harness, kafka: FakeKafka) -> None:
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()
    harness.producer.delivery_error = TopicAuthorizationFailedError()

    with pytest.raises(ProductionError, match="TopicAuthorizationFailedError") as raised:
        await harness.task_manager.commit_or_migrate()

    assert not isinstance(raised.value, RetriableProductionError) and kafka.committed == {}


async def test_a_commit_refused_while_the_group_rebalances_keeps_the_tasks_and_is_sent_again(
    harness: Harness, kafka: FakeKafka
) -> None:
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()
    harness.consumer.commit_error = RebalanceInProgressCommitError("the group is rebalancing")

    assert await harness.task_manager.commit_or_migrate() is True

    assert harness.task_manager.active[T0].state is TaskState.RUNNING and kafka.committed == {}
    harness.consumer.commit_error = None
    await harness.task_manager.commit()
    assert kafka.committed == {IN0: 1}  # the same offsets, not marked as committed by the refused commit


async def test_records_of_a_restoring_task_are_sought_back_not_dropped(harness: Harness, kafka: FakeKafka) -> None:
    for i in range(5):
        kafka.append(CHANGELOG0, b"x", int64(i))
    harness.assign(T0)
    assert IN0 in harness.consumer.paused
    harness.consumer.paused.clear()  # records fetched before the pause took effect
    words(kafka, "a", "b")

    await harness.poll_and_process()

    assert harness.consumer.seeks == [(IN0, 0)]
    assert await harness.consumer.position(IN0) == 0


async def test_restoration_completes_in_chunks_then_the_task_runs(kafka: FakeKafka, tmp_path: Path) -> None:
    for value in range(1, 8):
        kafka.append(CHANGELOG0, b"a", int64(value))
    h = Harness(kafka, tmp_path, chunk=3)
    try:
        h.assign(T0)
        steps = 0
        while h.task_manager.active[T0].state is TaskState.RESTORING:
            applied = await h.task_manager.restore(timeout_ms=0)
            assert applied <= 3
            steps += 1
        assert steps == 3 and IN0 not in h.consumer.paused
        words(kafka, "a")
        await h.poll_and_process()
        await h.task_manager.commit()
        assert latest(kafka, OUTPUT) == {"a": 8}  # restored 7, plus one
    finally:
        h.close()


async def test_restoration_waits_for_an_open_transaction_and_the_committed_records_behind_it(
    kafka: FakeKafka, tmp_path: Path
) -> None:
    """A crashed producer's transaction is still open at the changelog's end (until it times out); records
    committed behind it, by the task's later owner, are not readable yet. Ending the restoration at the last
    stable offset would lose them, while their input offsets are committed."""
    kafka.append(CHANGELOG0, b"a", int64(1))
    kafka.open_transaction_records[CHANGELOG0] = 2
    h = Harness(kafka, tmp_path)
    try:
        h.assign(T0)
        for _ in range(3):
            await h.task_manager.restore(timeout_ms=0)
        assert h.task_manager.active[T0].state is TaskState.RESTORING and IN0 in h.consumer.paused

        kafka.open_transaction_records[CHANGELOG0] = 0  # it aborted; the later owner's commit is readable
        kafka.append(CHANGELOG0, b"a", int64(2))
        kafka.append(CHANGELOG0, b"a", int64(3))
        await h.task_manager.restore(timeout_ms=0)
        assert h.task_manager.active[T0].state is TaskState.RUNNING

        words(kafka, "a")
        await h.poll_and_process()
        await h.task_manager.commit()
        assert latest(kafka, OUTPUT) == {"a": 4}
    finally:
        h.close()


async def test_checkpoint_beyond_the_changelog_end_wipes_and_restores(kafka: FakeKafka, tmp_path: Path) -> None:
    h = Harness(kafka, tmp_path)
    try:
        await running(h)
        words(kafka, "a", "a")
        await h.poll_and_process()
        await h.task_manager.shutdown(clean=True)
    finally:
        h.close()
    kafka.logs[CHANGELOG0] = []  # the changelog was recreated: the checkpoint is now beyond its end
    h = Harness(kafka, tmp_path)
    try:
        await running(h)
        words(kafka, "a")
        await h.poll_and_process()
        await h.task_manager.commit()
        assert latest(kafka, CHANGELOG) == {"a": 1}  # the stale local count was wiped, not reused
    finally:
        h.close()


async def test_revoked_tasks_are_suspended_reported_running_and_resumed(harness: Harness, kafka: FakeKafka) -> None:
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()
    task = harness.task_manager.active[T0]

    await harness.task_manager.handle_revocation(harness.consumer.assignment())

    assert task.state is TaskState.SUSPENDED
    assert any(e.startswith("commit") for e in kafka.events)
    assert harness.task_manager.task_offset_sums()[T0] == -2  # Kafka Streams' LATEST_OFFSET: ran until the rebalance
    harness.assign(T0)
    assert harness.task_manager.active[T0] is task and task.state is TaskState.RUNNING


async def test_a_cooperative_revocation_suspends_only_the_tasks_that_lose_a_partition(
    harness: Harness, kafka: FakeKafka
) -> None:
    t1, in1 = TaskId(0, 1), TopicPartition("in", 1)
    harness.assign(T0, t1)
    await harness.task_manager.restore(timeout_ms=0)
    words(kafka, "a")
    kafka.append(in1, b"b", b"line")
    await harness.poll_and_process()
    kept = harness.task_manager.active[T0]

    await harness.task_manager.handle_revocation({in1})  # only 0_1 moves

    assert kept.state is TaskState.RUNNING and harness.task_manager.active[t1].state is TaskState.SUSPENDED
    assert kafka.committed == {IN0: 1, in1: 1}  # one commit for every task, before the moving one stops
    words(kafka, "a")
    await harness.poll_and_process()  # the kept task never stopped
    await harness.task_manager.commit()
    assert latest(kafka, OUTPUT)["a"] == 2 and kafka.committed[IN0] == 2
    harness.assign(T0)  # the assignment without 0_1 closes it (clean: checkpointed), 0_0 goes on as it was
    assert set(harness.task_manager.active) == {T0} and harness.task_manager.active[T0] is kept
    assert kafka.events[-1] == "checkpoint 0_1"


async def test_a_task_whose_directory_another_thread_holds_waits(harness: Harness) -> None:
    assert harness.state_directory.lock_task(T0, "thread-2")
    harness.assign(T0)
    assert T0 not in harness.task_manager.active and harness.task_manager.has_pending()

    harness.task_manager.open_pending()
    assert T0 not in harness.task_manager.active

    harness.state_directory.unlock_task(T0, "thread-2")
    harness.task_manager.open_pending()
    assert T0 in harness.task_manager.active and not harness.task_manager.has_pending()


async def test_a_task_moved_away_is_closed_clean(harness: Harness, kafka: FakeKafka) -> None:
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()

    await harness.task_manager.handle_revocation(
        harness.consumer.assignment()
    )  # eager: every rebalance starts with a revocation
    harness.assign()

    assert harness.task_manager.active == {} and harness.state_directory.task_owner(T0) is None
    assert latest(kafka, CHANGELOG) == {"a": 1}
    assert kafka.events[-1] == "checkpoint 0_0"  # written again on the clean close


async def test_task_states_follow_kafkas_path_and_a_second_close_is_a_no_op(harness: Harness) -> None:
    harness.assign(T0)
    task = harness.task_manager.active[T0]
    assert task.state is TaskState.RESTORING  # CREATED -> RESTORING at once: it has a store
    await harness.task_manager.restore(timeout_ms=0)
    assert task.state is TaskState.RUNNING

    await harness.task_manager.handle_revocation(harness.consumer.assignment())
    assert task.state is TaskState.SUSPENDED
    harness.assign(T0)
    assert task.state is TaskState.RUNNING  # resumed: SUSPENDED -> RESTORING -> RUNNING

    harness.assign()  # moved away: RUNNING -> SUSPENDED -> CLOSED
    assert task.state is TaskState.CLOSED
    task.close(clean=False)
    assert task.state is TaskState.CLOSED


async def test_a_corrupt_store_is_wiped_once_and_restored_from_its_changelog(
    kafka: FakeKafka, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = Harness(kafka, tmp_path)
    try:
        await running(h)
        words(kafka, "a", "a", "b")
        await h.poll_and_process()
        await h.task_manager.shutdown(clean=True)
    finally:
        h.close()
    store_dir = tmp_path / "app" / "0_0" / "rocksdb" / "counts"
    sst = max(store_dir.glob("*.sst"), key=lambda p: p.stat().st_size)
    sst.write_bytes(sst.read_bytes()[:20])

    h = Harness(kafka, tmp_path)
    try:
        h.assign(T0)  # the first open finds the corruption and wipes
        assert T0 not in h.task_manager.active
        h.task_manager.open_pending()
        await h.task_manager.restore(timeout_ms=0)
        assert h.task_manager.active[T0].state is TaskState.RUNNING
        words(kafka, "a")
        await h.poll_and_process()
        await h.task_manager.commit()
        assert latest(kafka, CHANGELOG) == {"a": 3, "b": 1}  # restored 2, plus one
    finally:
        h.close()
    wipes = [r for r in caplog.records if "wiping its local state" in r.getMessage()]
    assert len(wipes) == 1 and "task 0_0" in wipes[0].getMessage()


def _attempts(h: Harness) -> int:
    """How often the pending task 0_0 failed to open."""
    retry = h.task_manager.tasks.open_retry(T0)
    assert retry is not None
    return retry.attempts


async def test_a_locked_store_is_retried_with_backoff(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder = RocksDBStore("counts", tmp_path / "app" / "0_0" / "rocksdb" / "counts")  # e.g. a closing instance
    clock = [1000.0]
    monkeypatch.setattr("streamlet.runtime.task_manager.time.monotonic", lambda: clock[0])
    harness.assign(T0)
    harness.task_manager.open_pending()
    harness.task_manager.open_pending()  # within the backoff: not tried again
    assert T0 not in harness.task_manager.active and _attempts(harness) == 1
    clock[0] += 0.2
    harness.task_manager.open_pending()
    assert _attempts(harness) == 2
    holder.close()
    clock[0] += 0.5
    harness.task_manager.open_pending()
    assert T0 in harness.task_manager.active and not harness.task_manager.has_pending()


async def test_a_restoration_keeps_its_position_when_another_one_finishes(kafka: FakeKafka, tmp_path: Path) -> None:
    """Reassigning the restore consumer forgets every position (aiokafka): the partitions kept are sought back."""
    t1, changelog1 = TaskId(0, 1), TopicPartition(CHANGELOG, 1)
    kafka.append(CHANGELOG0, b"a", int64(1))
    for value in range(1, 10):
        kafka.append(changelog1, b"b", int64(value))
    tracker = RestoreProgressTracker()
    finished: list[tuple[TopicPartition, int]] = []
    tracker.on_restore_end = lambda tp, store, total: finished.append((tp, total))  # type: ignore[method-assign]
    h = Harness(kafka, tmp_path, chunk=2, listener=tracker)
    try:
        h.assign(T0, t1)
        while any(t.state is TaskState.RESTORING for t in h.task_manager.active.values()):
            await h.task_manager.restore(timeout_ms=0)
        assert sorted(finished) == [(CHANGELOG0, 1), (changelog1, 9)]  # each record restored once
    finally:
        h.close()
