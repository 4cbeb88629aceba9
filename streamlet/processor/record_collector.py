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
        # Only the last send per changelog partition is kept: the producer keeps per-partition order, so
        # its offset is the highest. Every other send is checked through a done-callback, never a list scan.
        self._last_changelog_send: dict[tuple[str, int | None], asyncio.Future[RecordMetadata]] = {}
        self._failure: BaseException | None = None
        self.records_sent = 0

    def send(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int | None = None,
             partition: int | None = None) -> None:  # fmt: skip
        """Queue one record (called from processors, synchronously)."""
        self._queue.append((topic, key, value, partition, timestamp))

    def _on_done(self, future: asyncio.Future[RecordMetadata]) -> None:
        if self._failure is None and not future.cancelled() and future.exception() is not None:
            self._failure = future.exception()

    async def drain(self) -> None:
        """Hand every queued record to the producer (awaits only when its buffer is full)."""
        if not self._queue:
            return
        queue, self._queue = self._queue, []
        send = self._producer.send
        changelogs = self._changelog_topics
        last_changelog = self._last_changelog_send
        on_done = self._on_done
        for topic, key, value, partition, timestamp in queue:
            future = await send(topic, value=value, key=key, partition=partition, timestamp_ms=timestamp)
            future.add_done_callback(on_done)
            if topic in changelogs:
                last_changelog[(topic, partition)] = future
        self.records_sent += len(queue)

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
        for future in changelog.values():
            meta = _raise_if_failed(future)
            last[TopicPartition(meta.topic, meta.partition)] = meta.offset
        return last


def _raise_if_failed(future: asyncio.Future[RecordMetadata]) -> RecordMetadata:
    if not future.done():
        raise ProductionError("a produced record was not acknowledged after the producer flush")
    exc = future.exception()
    if exc is not None:
        raise ProductionError(f"producing a record failed: {exc!r}") from exc
    return future.result()
