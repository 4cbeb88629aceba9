"""StateRestoreListener: progress of changelog restoration, like Kafka Streams' listener of that name.

Restoration is the slow part of moving a task, so operators need to see it: the default listener logs
start, periodic progress (records restored of total, rate) and end of every store's restoration.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from aiokafka.structs import TopicPartition

log = logging.getLogger("streamlet.restore")


class StateRestoreListener(Protocol):
    """Callbacks from the restoring thread; they run on the event loop, so keep them quick."""

    def on_restore_start(
        self, partition: TopicPartition, store_name: str, start_offset: int, end_offset: int
    ) -> None: ...

    def on_batch_restored(
        self, partition: TopicPartition, store_name: str, batch_end_offset: int, num_restored: int
    ) -> None: ...

    def on_restore_end(self, partition: TopicPartition, store_name: str, total_restored: int) -> None: ...


@dataclass
class _Progress:
    start_offset: int
    end_offset: int
    started: float = field(default_factory=time.monotonic)
    restored: int = 0
    last_logged: float = field(default_factory=time.monotonic)


class LoggingRestoreListener:
    """Logs restoration at INFO: start, progress every `interval` seconds, and the final rate."""

    def __init__(self, interval: float = 5.0) -> None:
        self._interval = interval
        self._progress: dict[tuple[TopicPartition, str], _Progress] = {}

    def on_restore_start(self, partition: TopicPartition, store_name: str, start_offset: int, end_offset: int) -> None:
        self._progress[(partition, store_name)] = _Progress(start_offset, end_offset)
        log.info(
            "restoring store %s from %s-%d offsets %d..%d (%d records)",
            store_name,
            partition.topic,
            partition.partition,
            start_offset,
            end_offset,
            max(0, end_offset - start_offset),
        )

    def on_batch_restored(
        self, partition: TopicPartition, store_name: str, batch_end_offset: int, num_restored: int
    ) -> None:
        progress = self._progress.get((partition, store_name))
        if progress is None:
            return
        progress.restored += num_restored
        now = time.monotonic()
        if now - progress.last_logged >= self._interval:
            progress.last_logged = now
            total = max(1, progress.end_offset - progress.start_offset)
            rate = progress.restored / max(1e-9, now - progress.started)
            log.info(
                "restoring store %s from %s-%d: %d/%d records (%.0f%%), %.0f records/s",
                store_name,
                partition.topic,
                partition.partition,
                progress.restored,
                total,
                100.0 * progress.restored / total,
                rate,
            )

    def on_restore_end(self, partition: TopicPartition, store_name: str, total_restored: int) -> None:
        progress = self._progress.pop((partition, store_name), None)
        elapsed = time.monotonic() - progress.started if progress else 0.0
        rate = total_restored / elapsed if elapsed > 0 else 0.0
        log.info(
            "restored store %s from %s-%d: %d records in %.2fs (%.0f records/s)",
            store_name,
            partition.topic,
            partition.partition,
            total_restored,
            elapsed,
            rate,
        )


class CompositeRestoreListener:
    """Fans callbacks out to several listeners (the logging one plus the user's)."""

    def __init__(self, *listeners: StateRestoreListener) -> None:
        self._listeners = listeners

    def on_restore_start(self, partition: TopicPartition, store_name: str, start_offset: int, end_offset: int) -> None:
        for listener in self._listeners:
            listener.on_restore_start(partition, store_name, start_offset, end_offset)

    def on_batch_restored(
        self, partition: TopicPartition, store_name: str, batch_end_offset: int, num_restored: int
    ) -> None:
        for listener in self._listeners:
            listener.on_batch_restored(partition, store_name, batch_end_offset, num_restored)

    def on_restore_end(self, partition: TopicPartition, store_name: str, total_restored: int) -> None:
        for listener in self._listeners:
            listener.on_restore_end(partition, store_name, total_restored)
