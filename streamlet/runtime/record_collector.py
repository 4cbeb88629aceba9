"""RecordCollector: the bridge from synchronous processors to the asynchronous producer.

Processors run synchronously per record (no await per record keeps the hot path cheap), so sinks and
changelog writes are queued here and handed to aiokafka in bulk between batches. `flush()` waits for
every acknowledgement and returns, per changelog partition, the offset of the last record written:
exactly what a checkpoint may claim, since a checkpoint must never run ahead of the changelog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.structs import RecordMetadata, TopicPartition

from streamlet.errors import StreamletError
from streamlet.runtime.partitioner import CachingDefaultPartitioner


class ProductionError(StreamletError):
    """A record could not be written to Kafka; the task stops rather than lose it."""


class RecordCollector:
    """Queues records for one producer and tracks changelog acknowledgements."""

    def __init__(self, producer: AIOKafkaProducer, changelog_topics: Iterable[str] = ()) -> None:
        self._producer = producer
        self._changelog_topics = set(changelog_topics)
        self._queue: list[tuple[str, bytes | None, bytes | None, int | None, int | None]] = []
        # Only the last batch per changelog partition is kept (with its record count): batches of a partition
        # are written in order, so it ends at the highest offset. Every batch's errors reach a done-callback.
        self._last_changelog_send: dict[tuple[str, int], tuple[asyncio.Future[RecordMetadata], int]] = {}
        self._partitions: dict[str, list[int]] = {}
        self._partitioner = CachingDefaultPartitioner()
        self._failure: BaseException | None = None

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None = None,
        partition: int | None = None,
    ) -> None:
        """Queue one record (called from processors, synchronously)."""
        self._queue.append((topic, key, value, partition, timestamp))

    def _on_done(self, future: asyncio.Future[RecordMetadata]) -> None:
        if self._failure is None and not future.cancelled() and future.exception() is not None:
            self._failure = future.exception()

    async def drain(self) -> None:
        """Hand every queued record to the producer as per-partition batches.

        One `BatchBuilder` per partition instead of one `send()` per record: aiokafka otherwise creates a
        future, a callback and a metadata lookup for every record, the largest costs of the hot path.
        Order within a partition is preserved (aiokafka keeps batches of a partition in order).
        """
        if not self._queue:
            return
        queue, self._queue = self._queue, []
        groups: dict[tuple[str, int], list[tuple[bytes | None, bytes | None, int | None]]] = {}
        partitioner = self._partitioner
        for topic, key, value, partition, timestamp in queue:
            if partition is None:
                partitions = self._partitions.get(topic)
                if partitions is None:
                    partitions = self._partitions[topic] = sorted(await self._producer.partitions_for(topic))
                partition = partitioner(key, partitions, partitions)
            group = groups.get((topic, partition))
            if group is None:
                group = groups[(topic, partition)] = []
            group.append((key, value, timestamp))
        for (topic, partition), records in groups.items():
            await self._send_records(topic, partition, records)

    async def _send_records(
        self, topic: str, partition: int, records: list[tuple[bytes | None, bytes | None, int | None]]
    ) -> None:
        producer = self._producer
        batch = producer.create_batch()
        for key, value, timestamp in records:
            if batch.append(key=key, value=value, timestamp=timestamp) is not None:
                continue
            if batch.record_count():
                await self._submit(batch, topic, partition)
                batch = producer.create_batch()
                if batch.append(key=key, value=value, timestamp=timestamp) is not None:
                    continue
            # larger than a whole batch: the producer's own send() sizes a batch for it
            future = await producer.send(topic, value=value, key=key, partition=partition, timestamp_ms=timestamp)
            self._track(future, topic, partition, 1)
        if batch.record_count():
            await self._submit(batch, topic, partition)

    async def _submit(self, batch: Any, topic: str, partition: int) -> None:
        count = batch.record_count()
        batch.close()
        future = await self._producer.send_batch(batch, topic, partition=partition)
        self._track(future, topic, partition, count)

    def _track(self, future: asyncio.Future[RecordMetadata], topic: str, partition: int, count: int) -> None:
        future.add_done_callback(self._on_done)
        if topic in self._changelog_topics:
            self._last_changelog_send[(topic, partition)] = (future, count)

    def discard(self) -> None:
        """Drop records not yet handed to the producer (their tasks were lost: nothing of them may be written)."""
        self._queue = []

    async def flush(self) -> dict[TopicPartition, int]:
        """Send everything queued, wait for all acks, return the last acked offset per changelog partition."""
        await self.drain()
        await self._producer.flush()
        if self._failure is not None:
            failure, self._failure = self._failure, None
            self._last_changelog_send = {}
            raise ProductionError(f"producing a record failed: {failure!r}") from failure
        changelog, self._last_changelog_send = self._last_changelog_send, {}
        last: dict[TopicPartition, int] = {}
        for future, count in changelog.values():
            meta = _raise_if_failed(future)  # a batch's metadata carries its base offset
            last[TopicPartition(meta.topic, meta.partition)] = meta.offset + count - 1
        return last


def _raise_if_failed(future: asyncio.Future[RecordMetadata]) -> RecordMetadata:
    if not future.done():
        raise ProductionError("a produced record was not acknowledged after the producer flush")
    exc = future.exception()
    if exc is not None:
        raise ProductionError(f"producing a record failed: {exc!r}") from exc
    return future.result()
