"""exactly_once_v2 in the task manager, on fake transactional clients and real RocksDB: a commit is one
transaction (output, changelog and input offsets), after which the stores' uncommitted writes reach RocksDB with
their changelog offsets (KIP-892); the lost and migrated paths abort it and keep the stores at their last commit
(no wipe); no `.checkpoint` file is ever written (KIP-1035: the offsets live in the stores)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka.errors import ProducerFenced, RequestTimedOutError
from aiokafka.structs import TopicPartition

from streamlet.runtime.task_state import TaskState
from streamlet.state import timestamped
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME
from streamlet.state.rocksdb_store import RocksDBStore
from tests.unit.runtime._fakes import FakeKafka, commit_failed
from tests.unit.runtime._harness import CHANGELOG, CHANGELOG0, IN0, OUTPUT, T0, Harness, latest, new_kafka

EOS = "exactly_once_v2"


@pytest.fixture
def kafka() -> FakeKafka:
    return new_kafka()


@pytest.fixture
def harness(kafka: FakeKafka, tmp_path: Path) -> Iterator[Harness]:
    h = Harness(kafka, tmp_path, guarantee=EOS)
    yield h
    h.close()


async def running(h: Harness) -> None:
    h.assign(T0)
    await h.task_manager.restore(timeout_ms=0)
    await h.task_manager.initialize_task_times()
    assert h.task_manager.active[T0].state is TaskState.RUNNING


def words(kafka: FakeKafka, *keys: str) -> None:
    for key in keys:
        kafka.append(IN0, key.encode(), b"line")


def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "app" / "0_0" / "rocksdb" / "counts"


def on_disk(tmp_path: Path) -> tuple[dict[str, int], dict[TopicPartition, int]]:
    """The counts and changelog offsets the task's store holds on disk (opened afresh, the task closed)."""
    store = RocksDBStore("counts", store_dir(tmp_path))
    try:
        counts = {k.decode(): struct.unpack(">q", timestamped.value_of(v))[0] for k, v in store.all()}
        return counts, store.committed_offsets()
    finally:
        store.close()


async def test_a_commit_is_one_transaction_of_output_changelog_and_offsets(harness: Harness, kafka: FakeKafka) -> None:
    await running(harness)
    words(kafka, "a", "b", "a")
    await harness.poll_and_process()
    assert kafka.events == []

    await harness.task_manager.commit()

    kinds = [" ".join(e.split()[:2]) for e in kafka.events]
    assert kinds[0] == "begin" and kinds[-3:] == ["producer flush", "send offsets", "commit txn"], kafka.events
    assert kafka.committed == {IN0: 3}
    assert latest(kafka, OUTPUT) == {"a": 2, "b": 1} == latest(kafka, CHANGELOG)
    assert not any(e.startswith("checkpoint") for e in kafka.events)
    assert not (harness.state_directory.task_dir(T0) / CHECKPOINT_FILE_NAME).exists()
    assert harness.task_manager.active[T0].state_manager.checkpointed_offsets() == {CHANGELOG0: 1}  # in the store


async def test_input_offsets_commit_in_a_transaction_even_when_nothing_is_produced(
    harness: Harness, kafka: FakeKafka
) -> None:
    await running(harness)
    kafka.append(IN0, None, b"line")  # a null key: count() drops it, nothing is written
    await harness.poll_and_process()
    await harness.task_manager.commit()
    assert kafka.committed == {IN0: 1} and "commit txn" in kafka.events


async def test_lost_tasks_abort_their_transaction_and_keep_their_committed_state(
    harness: Harness, kafka: FakeKafka, tmp_path: Path
) -> None:
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()
    await harness.task_manager.commit()
    words(kafka, "a", "a")
    await harness.poll_and_process()
    await harness.collector.drain()  # some of the transaction already went out
    harness.task_manager.active[T0].flush_caches()
    await harness.collector.drain()

    await harness.task_manager.handle_lost_all("test")

    assert kafka.events[-1] == "abort txn"
    assert latest(kafka, OUTPUT) == {"a": 1} and kafka.committed == {IN0: 1}  # the aborted 2 and 3 never show
    # the store never got the aborted writes: it holds the committed count and the offset of its changelog record
    assert on_disk(tmp_path) == ({"a": 1}, {CHANGELOG0: 0}) and latest(kafka, CHANGELOG) == {"a": 1}


async def test_a_failed_transaction_commit_takes_the_migrated_path(harness: Harness, kafka: FakeKafka) -> None:
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()
    harness.producer.commit_error = commit_failed()

    assert await harness.task_manager.commit_or_migrate() is False

    assert harness.task_manager.active == {} and kafka.committed == {} and latest(kafka, OUTPUT) == {}


async def test_a_retriable_send_failure_aborts_and_takes_the_migrated_path(harness: Harness, kafka: FakeKafka) -> None:
    """A batch of the transaction expired (RequestTimedOutError: the broker was unreachable longer than the
    producer retries): the transaction is aborted and the tasks close dirty (Kafka's TaskCorruptedException)."""
    await running(harness)
    words(kafka, "a")
    await harness.poll_and_process()
    harness.producer.delivery_error = RequestTimedOutError()

    assert await harness.task_manager.commit_or_migrate() is False

    assert "abort txn" in kafka.events and "commit txn" not in kafka.events, kafka.events
    assert harness.task_manager.active == {} and kafka.committed == {} and latest(kafka, OUTPUT) == {}


async def test_a_producer_fenced_while_sending_takes_the_migrated_path(kafka: FakeKafka, tmp_path: Path) -> None:
    """The transaction timed out under the producer (or a newer one fenced it): its records cannot be sent, and
    the thread must not die of it."""
    h = Harness(kafka, tmp_path, guarantee=EOS, cache_bytes=0)  # no cache: the count is sent at once
    try:
        await running(h)
        words(kafka, "a")
        h.task_manager.process(await h.consumer.getmany(max_records=10))
        h.producer.send_error = ProducerFenced()

        assert await h.task_manager.drain() is False

        assert h.task_manager.active == {} and h.consumer.rejoin_requested
        assert kafka.events == ["begin", "abort txn"] and kafka.committed == {} and latest(kafka, OUTPUT) == {}
    finally:
        h.close()


async def test_a_clean_close_keeps_the_offsets_in_the_store_and_the_next_open_restores_nothing(
    kafka: FakeKafka, tmp_path: Path
) -> None:
    h = Harness(kafka, tmp_path, guarantee=EOS)
    try:
        await running(h)
        words(kafka, "a", "a")
        await h.poll_and_process()
        await h.task_manager.shutdown(clean=True)
        assert on_disk(tmp_path) == ({"a": 2}, {CHANGELOG0: 0})
        assert not (h.state_directory.task_dir(T0) / CHECKPOINT_FILE_NAME).exists()
    finally:
        h.close()
    h = Harness(kafka, tmp_path, guarantee=EOS)
    try:
        await running(h)  # restored from the store's own offset: nothing to read
        assert h.task_manager.active[T0].state_manager.changelog_offsets() == {CHANGELOG0: 1}
        words(kafka, "a")
        await h.poll_and_process()
        await h.task_manager.commit()
        assert latest(kafka, OUTPUT) == {"a": 3}
    finally:
        h.close()
