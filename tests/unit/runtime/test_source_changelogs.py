"""`reuse.ktable.source.topics` at runtime, on fake Kafka clients and real RocksDB: a source KTable's store is
restored from its source topic up to the committed offset, checkpointed at the consumed offset, never written
to a changelog, and followed by standbys up to the committed offset."""

from __future__ import annotations

from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.runtime.task_state import TaskState
from streamlet.state import timestamped
from streamlet.state.rocksdb_store import DB_FILE_DIR, read_task_store_offsets
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from tests.unit.runtime._fakes import FakeKafka
from tests.unit.runtime._harness import Harness

TABLE, ORDERS, OUT = "customers", "orders", "enriched"
T0 = TaskId(0, 0)
TABLE0, ORDERS0 = TopicPartition(TABLE, 0), TopicPartition(ORDERS, 0)
COUNTS = {TABLE: 1, ORDERS: 1}


def table_join(optimization: str = "reuse.ktable.source.topics") -> Topology:
    builder = StreamsBuilder()
    customers = builder.table(TABLE, key_serde="str", value_serde="str", store_name="customers-store")
    orders = builder.stream(ORDERS, key_serde="str", value_serde="str")
    orders.join(customers, lambda order, customer: f"{order}@{customer}").to(OUT, "str", "str")
    return builder.build(optimization)


def harness(kafka: FakeKafka, tmp_path: Path) -> Harness:
    return Harness(kafka, tmp_path, topology=table_join(), sources=COUNTS)


def new_kafka() -> FakeKafka:
    kafka = FakeKafka({TABLE: 1, ORDERS: 1, OUT: 1})
    for offset, (key, value) in enumerate([("a", "x"), ("b", "y"), ("a", "z")]):
        kafka.append(TABLE0, key.encode(), value.encode(), timestamp=10 + offset)
    return kafka


def stored(h: Harness, task: TaskId, key: str) -> tuple[bytes, int] | None:
    tasks = h.task_manager.active if task in h.task_manager.active else h.task_manager.standby
    state_manager = tasks[task].state_manager
    assert state_manager is not None
    raw = state_manager.store("customers-store").get(key.encode())
    return None if raw is None else (timestamped.value_of(raw), timestamped.timestamp_of(raw))


async def test_restoration_reads_the_source_topic_up_to_the_committed_offset(tmp_path: Path) -> None:
    kafka = new_kafka()
    kafka.committed[TABLE0] = 2  # a -> z (offset 2) is input the task has not processed yet
    h = harness(kafka, tmp_path)
    try:
        h.assign(T0)
        while h.task_manager.active[T0].state is TaskState.RESTORING:
            await h.task_manager.restore(timeout_ms=0)
        assert stored(h, T0, "a") == (b"x", 10) and stored(h, T0, "b") == (b"y", 11)

        kafka.append(ORDERS0, b"a", b"o1", timestamp=20)
        await h.poll_and_process()  # the table's own update (a -> z) comes first, by timestamp
        await h.task_manager.commit(force_checkpoint=True)
        assert [(k, v) for k, v, _ in kafka.logs[TopicPartition(OUT, 0)]] == [(b"a", b"o1@z")]
        assert not [tp for tp in kafka.logs if tp.topic.endswith("-changelog")]  # nothing is change-logged
        checkpoint = read_task_store_offsets(h.state_directory.task_dir(T0) / DB_FILE_DIR)
        assert checkpoint == {TABLE0: 2}  # the last offset consumed from the source topic
    finally:
        h.close()


async def test_without_a_committed_offset_nothing_is_restored(tmp_path: Path) -> None:
    """Kafka takes a missing committed offset as 0: the task reads the whole topic as input instead."""
    h = harness(new_kafka(), tmp_path)
    try:
        h.assign(T0)
        await h.task_manager.restore(timeout_ms=0)
        assert h.task_manager.active[T0].state is TaskState.RUNNING and stored(h, T0, "a") is None
    finally:
        h.close()


async def test_a_restart_resumes_from_the_checkpoint(tmp_path: Path) -> None:
    kafka = new_kafka()
    h = harness(kafka, tmp_path)
    try:
        h.assign(T0)
        await h.task_manager.restore(timeout_ms=0)
        await h.poll_and_process()
        await h.task_manager.shutdown(clean=True)
    finally:
        h.close()
    assert kafka.committed[TABLE0] == 3
    kafka.append(TABLE0, b"b", None, timestamp=13)  # deleted after the restart's committed offset: not restored
    h = harness(kafka, tmp_path)
    try:
        h.assign(T0)
        await h.task_manager.restore(timeout_ms=0)
        assert h.task_manager.active[T0].state is TaskState.RUNNING
        assert (TABLE0, 3) in h.restore_consumer.seeks  # from the checkpoint on, and nothing further
        assert stored(h, T0, "a") == (b"z", 12) and stored(h, T0, "b") == (b"y", 11)
    finally:
        h.close()


async def test_a_standby_follows_the_source_topic_up_to_the_committed_offset(tmp_path: Path) -> None:
    kafka = new_kafka()
    kafka.committed[TABLE0] = 1
    h = harness(kafka, tmp_path)
    try:
        h.assign(standby=(T0,))
        for _ in range(3):
            await h.task_manager.restore(timeout_ms=0)
        assert stored(h, T0, "a") == (b"x", 10) and stored(h, T0, "b") is None

        kafka.committed[TABLE0] = 3  # the active task committed further: the limit moves
        for _ in range(3):
            await h.task_manager.restore(timeout_ms=0)
        assert stored(h, T0, "a") == (b"z", 12) and stored(h, T0, "b") == (b"y", 11)
        await h.task_manager.commit(force_checkpoint=True)
        checkpoint = read_task_store_offsets(h.state_directory.task_dir(T0) / DB_FILE_DIR)
        assert checkpoint == {TABLE0: 2}
    finally:
        h.close()


def test_the_store_has_no_changelog_topic_of_its_own() -> None:
    optimized, plain = table_join(), table_join("none")
    assert optimized.changelog_topics() == {"customers-store": TABLE}
    assert [t.name for t in optimized.internal_topics()] == []
    assert [t.name for t in plain.internal_topics()] == ["customers-store-changelog"]
    assert str(optimized.describe()) == str(plain.describe())
