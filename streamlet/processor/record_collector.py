"""RecordCollector: the bridge from synchronous processors to the asynchronous producer.

Processors run synchronously per record (no await per record keeps the hot path cheap), so sinks and
changelog writes are queued here and handed to aiokafka in bulk between batches. `flush()` waits for
every acknowledgement and returns, per changelog partition, the offset of the last record written:
exactly what a checkpoint may claim, since a checkpoint must never run ahead of the changelog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from aiokafka import AIOKafkaProducer
from aiokafka.structs import RecordMetadata, TopicPartition

from streamlet.errors import StreamletError


class ProductionError(StreamletError):
    """A record could not be written to Kafka; the task stops rather than lose it."""


class RecordCollector:
    """Queues records for one producer and tracks changelog acknowledgements."""

    def __init__(self, producer: AIOKafkaProducer, changelog_topics: Iterable[str] = ()) -> None:
        self._producer = producer
        self._changelog_topics = set(changelog_topics)
        self._queue: list[tuple[str, bytes | None, bytes | None, int | None, int | None]] = []
        self._in_flight: list[asyncio.Future[RecordMetadata]] = []
        self._changelog_in_flight: list[asyncio.Future[RecordMetadata]] = []
        self.records_sent = 0

    def add_changelog_topics(self, topics: Iterable[str]) -> None:
        self._changelog_topics.update(topics)

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int | None = None,
             partition: int | None = None) -> None:  # fmt: skip
        """Queue one record (called from processors, synchronously)."""
        self._queue.append((topic, key, value, partition, timestamp))

    @property
    def pending(self) -> int:
        return len(self._queue)

    async def drain(self) -> None:
        """Hand every queued record to the producer (awaits only when its buffer is full)."""
        if not self._queue:
            return
        queue, self._queue = self._queue, []
        send = self._producer.send
        changelogs = self._changelog_topics
        in_flight = self._in_flight
        changelog_in_flight = self._changelog_in_flight
        for topic, key, value, partition, timestamp in queue:
            future = await send(topic, value=value, key=key, partition=partition, timestamp_ms=timestamp)
            if topic in changelogs:
                changelog_in_flight.append(future)
            else:
                in_flight.append(future)
            # keep the lists short between commits when most sends already completed
            if len(in_flight) > 50_000:
                self._in_flight = in_flight = [f for f in in_flight if not f.done() or f.exception() is not None]
        self.records_sent += len(queue)

    async def flush(self) -> dict[TopicPartition, int]:
        """Send everything queued, wait for all acks, return the last acked offset per changelog partition."""
        await self.drain()
        await self._producer.flush()
        futures, self._in_flight = self._in_flight, []
        changelog, self._changelog_in_flight = self._changelog_in_flight, []
        last: dict[TopicPartition, int] = {}
        for future in futures:
            _raise_if_failed(future)
        for future in changelog:
            meta = _raise_if_failed(future)
            tp = TopicPartition(meta.topic, meta.partition)
            if meta.offset > last.get(tp, -1):
                last[tp] = meta.offset
        return last


def _raise_if_failed(future: asyncio.Future[RecordMetadata]) -> RecordMetadata:
    if not future.done():
        raise ProductionError("a produced record was not acknowledged after the producer flush")
    exc = future.exception()
    if exc is not None:
        raise ProductionError(f"producing a record failed: {exc!r}") from exc
    return future.result()
