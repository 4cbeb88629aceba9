"""In-memory Kafka clients for unit tests of the runtime (what MockConsumer/MockProducer are to Kafka Streams).

They implement the `streamlet.runtime.clients` protocols over a shared `FakeKafka` log, and every call
that matters for ordering is appended to `FakeKafka.events`, so a test can assert the order of flush,
produce, commit and checkpoint.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from aiokafka.errors import CommitFailedError
from aiokafka.producer.transaction_manager import TransactionState
from aiokafka.structs import ConsumerRecord, OffsetAndMetadata, RecordMetadata, TopicPartition

from streamlet.config import StreamsConfig
from streamlet.kafka.txn_offset_commit import GroupMetadata


@dataclass(frozen=True)
class FetchedTestRecord:
    """A fetched record as the runtime reads it (`runtime.fetched_records.FetchedRecord`), for queue tests."""

    offset: int
    timestamp: int
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()


class FakeKafka:
    """Partitions as lists of (key, value, timestamp), committed offsets, and an event log."""

    def __init__(self, partitions: Mapping[str, int]) -> None:
        self.partition_counts = dict(partitions)
        self.logs: dict[TopicPartition, list[tuple[bytes | None, bytes | None, int]]] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.committed_metadata: dict[TopicPartition, str] = {}  # what each commit carried (partition times)
        self.events: list[str] = []
        # records of another producer's open transaction at a partition's end: in the log end (high
        # watermark), not readable (a read_committed consumer stops at the last stable offset before them)
        self.open_transaction_records: dict[TopicPartition, int] = {}
        self.dead_letters: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]] = []
        self.headers: dict[tuple[TopicPartition, int], list[tuple[str, bytes]]] = {}  # of the few records with any

    def append(
        self,
        tp: TopicPartition,
        key: bytes | None,
        value: bytes | None,
        timestamp: int = 0,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> int:
        log = self.logs.setdefault(tp, [])
        log.append((key, value, timestamp))
        if headers:
            self.headers[(tp, len(log) - 1)] = list(headers)
        return len(log) - 1

    def records(self, tp: TopicPartition, start: int = 0, end: int | None = None) -> list[ConsumerRecord[Any, Any]]:
        log = self.logs.get(tp, [])[start:end]
        return [
            ConsumerRecord(
                tp.topic,
                tp.partition,
                start + i,
                ts,
                0,
                k,
                v,
                None,
                len(k or b""),
                len(v or b""),
                self.headers.get((tp, start + i), []),
            )
            for i, (k, v, ts) in enumerate(log)
        ]

    def end_offset(self, tp: TopicPartition) -> int:
        """The last stable offset: what a read_committed consumer can read up to."""
        return len(self.logs.get(tp, []))

    def high_watermark(self, tp: TopicPartition) -> int:
        return self.end_offset(tp) + self.open_transaction_records.get(tp, 0)


class FakeConsumer:
    """Main or restore consumer. Assignment is set by the test (`assign`); `getmany` reads the fake log."""

    def __init__(self, kafka: FakeKafka, name: str = "consumer", *, read_uncommitted_ends: bool = False) -> None:
        self.kafka = kafka
        self.name = name
        self._read_uncommitted_ends = read_uncommitted_ends
        self._assigned: set[TopicPartition] = set()
        self._positions: dict[TopicPartition, int] = {}
        # per partition, the end (last stable offset) the last fetch from it reported; none before a fetch
        self._fetched_ends: dict[TopicPartition, int] = {}
        self.paused: set[TopicPartition] = set()
        self.seeks: list[tuple[TopicPartition, int]] = []
        self.lost = False
        self.rejoin_requested = False
        self.commit_error: Exception | None = None
        self.listener: Any = None

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def subscribe(self, topics: Collection[str], listener: Any, assignor: Any) -> None:
        self.listener = listener

    def assign(self, partitions: Collection[TopicPartition]) -> None:
        # as aiokafka: a new assignment forgets every position, kept partitions too (committed offset, else 0)
        self._assigned = set(partitions)
        self._positions = {tp: self.kafka.committed.get(tp, 0) for tp in self._assigned}
        self._fetched_ends = {}

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self.seeks.append((partition, offset))
        self._positions[partition] = offset

    async def position(self, partition: TopicPartition) -> int:
        return self._positions[partition]

    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        end = self.kafka.high_watermark if self._read_uncommitted_ends else self.kafka.end_offset
        return {tp: end(tp) for tp in partitions}

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.paused.difference_update(partitions)

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]:
        out: dict[TopicPartition, list[ConsumerRecord[Any, Any]]] = {}
        budget = max_records if max_records is not None else 1 << 30
        for tp in sorted((set(partitions) if partitions else self._assigned) - self.paused):
            if budget <= 0:
                break
            start = self._positions[tp]
            self._fetched_ends[tp] = self.kafka.end_offset(tp)  # an empty fetch reports it too
            records = self.kafka.records(tp, start, start + budget)
            if records:
                out[tp] = records
                self._positions[tp] = start + len(records)
                budget -= len(records)
        await asyncio.sleep(0)
        return out

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        if self.commit_error is not None:
            raise self.commit_error
        self.kafka.events.append(
            "commit " + " ".join(f"{tp.topic}-{tp.partition}:{m.offset}" for tp, m in offsets.items())
        )
        for tp, meta in offsets.items():
            self.kafka.committed[tp] = meta.offset
            self.kafka.committed_metadata[tp] = meta.metadata

    async def committed_offsets(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        kafka = self.kafka
        return {
            tp: OffsetAndMetadata(kafka.committed[tp], kafka.committed_metadata.get(tp, ""))
            for tp in partitions
            if tp in kafka.committed
        }

    def request_rejoin(self) -> None:
        self.rejoin_requested = True

    def drop_partitions_and_rejoin(self) -> None:
        self.rejoin_requested = True
        self.assign([])  # positions forgotten: the next assignment starts from the committed offsets

    def generation_lost(self) -> bool:
        return self.lost

    def lag(self, partition: TopicPartition) -> int | None:
        """As aiokafka: from the end the last fetch of the partition reported (unknown before one)."""
        end = self._fetched_ends.get(partition)
        if end is None or partition not in self._assigned:
            return None
        return max(0, end - self._positions[partition])

    async def leave_group(self) -> None:
        self.kafka.events.append("leave group")

    def group_metadata(self) -> GroupMetadata:
        return GroupMetadata(-1 if self.lost else 1, "member-1", None)


def commit_failed() -> CommitFailedError:
    return CommitFailedError("the group has already rebalanced and assigned the partitions to another member")


class _FakeBatch:
    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes | None, int | None]] = []
        self.headers: list[Sequence[tuple[str, bytes]]] = []

    def append(
        self,
        *,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None,
        headers: Sequence[tuple[str, bytes]] = (),
    ) -> object:
        self.records.append((key, value, timestamp))
        self.headers.append(headers)
        return object()

    def record_count(self) -> int:
        return len(self.records)

    def close(self) -> None:
        pass


class FakeProducer:
    """Writes batches into the fake log when `send_batch` is called; `flush` is an event.

    Transactional (`transactional_id` given): sends go to the log only when the transaction commits, as a
    read_committed consumer would see them, and an abort drops them.
    """

    def __init__(self, kafka: FakeKafka, transactional_id: str | None = None) -> None:
        self.kafka = kafka
        self.transactional_id = transactional_id
        self._pending: (
            list[tuple[TopicPartition, bytes | None, bytes | None, int, Sequence[tuple[str, bytes]]]] | None
        ) = None
        self._pending_offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self.commit_error: Exception | None = None
        # the state aiokafka's transaction manager is left in when `commit_error` is raised (None: not modelled)
        self.commit_error_state: TransactionState | None = None
        self._txn_manager = SimpleNamespace(state=TransactionState.READY) if transactional_id is not None else None
        # aiokafka's sender, where the freeze gate (kafka/freeze_gate.py) holds batches back: this fake writes a
        # batch at once, so nothing is ever waiting there
        self._sender = SimpleNamespace(_send_produce_req=None, _muted_partitions=set(), _in_flight=set())
        self.send_error: Exception | None = None  # raised by send_batch, as aiokafka does once fenced
        self.delivery_error: Exception | None = None  # a batch's future fails with it (nothing is written)

    async def begin_transaction(self) -> None:
        assert self.transactional_id is not None and self._pending is None, "transaction already open"
        state = self._txn_manager.state
        # aiokafka's own check: no transaction begins from an error state
        assert state is TransactionState.READY, f"Invalid state transition {state} -> TransactionState.IN_TRANSACTION"
        self._pending = []
        self.kafka.events.append("begin")

    async def send_offsets_to_transaction(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], group: str
    ) -> None:
        assert self._pending is not None
        self._pending_offsets.update(offsets)
        self.kafka.events.append(
            "send offsets " + " ".join(f"{tp.topic}-{tp.partition}:{m.offset}" for tp, m in offsets.items())
        )

    async def commit_transaction(self) -> None:
        assert self._pending is not None
        pending, self._pending = self._pending, None
        offsets, self._pending_offsets = self._pending_offsets, {}
        if self.commit_error is not None:
            if self.commit_error_state is not None:
                self._txn_manager.state = self.commit_error_state
            raise self.commit_error
        for tp, key, value, timestamp, headers in pending:
            self.kafka.append(tp, key, value, timestamp, headers)
        self.kafka.committed.update({tp: m.offset for tp, m in offsets.items()})
        self.kafka.committed_metadata.update({tp: m.metadata for tp, m in offsets.items()})
        self.kafka.events.append("commit txn")

    async def abort_transaction(self) -> None:
        assert self._pending is not None
        self._pending, self._pending_offsets = None, {}
        self.kafka.events.append("abort txn")

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def partitions_for(self, topic: str) -> set[int]:
        return set(range(self.kafka.partition_counts[topic]))

    def create_batch(self) -> _FakeBatch:
        return _FakeBatch()

    async def send_batch(self, batch: _FakeBatch, topic: str, *, partition: int) -> asyncio.Future[RecordMetadata]:
        if self.send_error is not None:
            raise self.send_error
        if self.delivery_error is not None:  # e.g. the batch expired while the leader was unreachable
            self.kafka.events.append(f"failed {topic}-{partition}")
            failed: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
            failed.set_exception(self.delivery_error)
            return failed
        tp = TopicPartition(topic, partition)
        base = -1
        for (key, value, timestamp), headers in zip(batch.records, batch.headers, strict=True):
            if self._pending is not None:
                self._pending.append((tp, key, value, timestamp or 0, headers))
                offset = self.kafka.end_offset(tp) + len(self._pending) - 1  # where it will land
            else:
                assert self.transactional_id is None, "a transactional producer sends only in a transaction"
                offset = self.kafka.append(tp, key, value, timestamp or 0, headers)
            base = offset if base < 0 else base
        self.kafka.events.append(f"produce {topic}-{partition} x{len(batch.records)}")
        future: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        future.set_result(RecordMetadata(topic, partition, tp, base, -1, 0, -1))
        return future

    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """A single record with headers (the collector only sends dead letters this way)."""
        self.kafka.dead_letters.append((key, value, list(headers or [])))
        self.kafka.events.append(f"send {topic}")
        future: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        future.set_result(RecordMetadata(topic, 0, TopicPartition(topic, 0), 0, -1, 0, -1))
        return future

    async def flush(self) -> None:
        self.kafka.events.append("producer flush")


class FakeClientSupplier:
    """Hands out fake clients over one FakeKafka and remembers them for the test."""

    def __init__(self, kafka: FakeKafka) -> None:
        self.kafka = kafka
        self.consumers: list[FakeConsumer] = []
        self.restore_consumers: list[FakeConsumer] = []
        self.producers: list[FakeProducer] = []

    def main_consumer(
        self, config: StreamsConfig, client_id: str, group_instance_id: str | None = None
    ) -> FakeConsumer:
        self.consumers.append(FakeConsumer(self.kafka, client_id))
        return self.consumers[-1]

    def restore_consumer(self, config: StreamsConfig, client_id: str) -> FakeConsumer:
        self.restore_consumers.append(FakeConsumer(self.kafka, client_id))
        return self.restore_consumers[-1]

    def admin_consumer(self, config: StreamsConfig, client_id: str) -> FakeConsumer:
        return FakeConsumer(self.kafka, client_id, read_uncommitted_ends=True)

    def producer(self, config: StreamsConfig, client_id: str, transactional_id: str | None = None) -> FakeProducer:
        self.producers.append(FakeProducer(self.kafka, transactional_id))
        return self.producers[-1]
