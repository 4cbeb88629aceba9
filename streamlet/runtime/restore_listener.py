"""StateRestoreListener: progress of changelog restoration, like Kafka Streams' listener of that name.

Restoration is the slow part of moving a task, so operators need to see it. `RestoreProgressTracker` keeps
each store's progress (for the client's metrics and the worker's progress bar); the default listener,
`LoggingRestoreListener`, also logs start, progress every few seconds (percentage, rate, ETA) and end of
every store's restoration, as Kafka Streams' logs do.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Protocol

from aiokafka.structs import TopicPartition

log = logging.getLogger("streamlet.restore")

#: How often the default listener logs each restoring store's progress.
PROGRESS_LOG_INTERVAL_S = 5.0


class StateRestoreListener(Protocol):
    """Callbacks from the restoring thread; they run on the event loop, so keep them quick.

    A listener may also define `on_restore_suspended(partition, store_name, total_restored)`: called when
    a restoration stops before its end because the task left this thread (Kafka Streams' default method);
    and `on_bytes_restored(partition, store_name, num_bytes)`: called before `on_batch_restored` with the
    batch's size in key + value bytes (what Kafka's consumer counts as bytes consumed, headers and framing
    excluded).
    """

    def on_restore_start(
        self, partition: TopicPartition, store_name: str, start_offset: int, end_offset: int
    ) -> None: ...

    def on_batch_restored(
        self, partition: TopicPartition, store_name: str, batch_end_offset: int, num_restored: int
    ) -> None: ...

    def on_restore_end(self, partition: TopicPartition, store_name: str, total_restored: int) -> None: ...


@dataclass
class RestoreProgress:
    """How far one store's restoration from one changelog partition got.

    Progress is measured in offsets (a compacted or transactional changelog has gaps, so records restored
    can be fewer than offsets covered); the rate is records written to the store per second.
    """

    store: str
    partition: TopicPartition
    start_offset: int
    end_offset: int
    started: float = field(default_factory=time.monotonic)
    restored: int = 0
    restored_bytes: int = 0  # key + value bytes of the records restored
    position: int = -1  # the next offset to restore
    last_logged: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        if self.position < 0:
            self.position = self.start_offset

    @property
    def total(self) -> int:
        return max(0, self.end_offset - self.start_offset)

    @property
    def remaining(self) -> int:
        return max(0, self.end_offset - self.position)

    @property
    def fraction(self) -> float:
        return 1.0 if self.total == 0 else min(1.0, (self.position - self.start_offset) / self.total)

    def rate(self, now: float) -> float:
        """Records restored per second so far."""
        elapsed = now - self.started
        return self.restored / elapsed if elapsed > 0 else 0.0

    def eta_s(self, now: float) -> float | None:
        """Seconds to the end at the offset rate so far; None before any progress."""
        covered = self.position - self.start_offset
        elapsed = now - self.started
        if covered <= 0 or elapsed <= 0:
            return None
        return self.remaining / (covered / elapsed)


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class RestoreProgressTracker:
    """A listener that keeps the progress of every restoration under way in this client (all its threads)."""

    def __init__(self) -> None:
        self._progress: dict[tuple[TopicPartition, str], RestoreProgress] = {}
        # records restored by finished (or suspended) restorations, since the client started: a restore that
        # ends between two metrics events is never "in progress" in one, yet an experiment must count it
        self._finished: dict[tuple[TopicPartition, str], int] = {}
        self._finished_bytes: dict[tuple[TopicPartition, str], int] = {}

    def in_progress(self) -> list[RestoreProgress]:
        return sorted(self._progress.values(), key=lambda p: (p.store, p.partition.topic, p.partition.partition))

    def restored_totals(self) -> dict[tuple[TopicPartition, str], int]:
        """Records restored per (changelog partition, store) since the client started, under way ones included."""
        return self._totals(self._finished, "restored")

    def restored_bytes_totals(self) -> dict[tuple[TopicPartition, str], int]:
        """Key + value bytes restored per (changelog partition, store), as `restored_totals` counts records."""
        return self._totals(self._finished_bytes, "restored_bytes")

    def _totals(
        self, finished: dict[tuple[TopicPartition, str], int], attribute: str
    ) -> dict[tuple[TopicPartition, str], int]:
        totals = dict(finished)
        for key, progress in self._progress.items():
            totals[key] = totals.get(key, 0) + getattr(progress, attribute)
        return totals

    def on_bytes_restored(self, partition: TopicPartition, store_name: str, num_bytes: int) -> None:
        progress = self._progress.get((partition, store_name))
        if progress is not None:
            progress.restored_bytes += num_bytes

    def on_restore_start(self, partition: TopicPartition, store_name: str, start_offset: int, end_offset: int) -> None:
        self._progress[(partition, store_name)] = RestoreProgress(store_name, partition, start_offset, end_offset)

    def on_batch_restored(
        self, partition: TopicPartition, store_name: str, batch_end_offset: int, num_restored: int
    ) -> None:
        progress = self._progress.get((partition, store_name))
        if progress is not None:
            progress.restored += num_restored
            progress.position = max(progress.position, batch_end_offset + 1)

    def on_restore_end(self, partition: TopicPartition, store_name: str, total_restored: int) -> None:
        self._finish(partition, store_name)

    def on_restore_suspended(self, partition: TopicPartition, store_name: str, total_restored: int) -> None:
        self._finish(partition, store_name)

    def _finish(self, partition: TopicPartition, store_name: str) -> None:
        progress = self._progress.pop((partition, store_name), None)
        if progress is not None:
            key = (partition, store_name)
            self._finished[key] = self._finished.get(key, 0) + progress.restored
            self._finished_bytes[key] = self._finished_bytes.get(key, 0) + progress.restored_bytes


class LoggingRestoreListener(RestoreProgressTracker):
    """Logs restoration at INFO: start, progress every `interval` seconds, and the final rate."""

    def __init__(self, interval: float | None = None) -> None:
        super().__init__()
        self._interval = PROGRESS_LOG_INTERVAL_S if interval is None else interval

    def on_restore_start(self, partition: TopicPartition, store_name: str, start_offset: int, end_offset: int) -> None:
        super().on_restore_start(partition, store_name, start_offset, end_offset)
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
        super().on_batch_restored(partition, store_name, batch_end_offset, num_restored)
        progress = self._progress.get((partition, store_name))
        if progress is None:
            return
        now = time.monotonic()
        if now - progress.last_logged >= self._interval:
            progress.last_logged = now
            log.info(
                "restoring store %s from %s-%d: %d/%d records (%.0f%%), %.0f records/s, ETA %s",
                store_name,
                partition.topic,
                partition.partition,
                progress.position - progress.start_offset,
                progress.total,
                100.0 * progress.fraction,
                progress.rate(now),
                format_eta(progress.eta_s(now)),
            )

    def on_restore_end(self, partition: TopicPartition, store_name: str, total_restored: int) -> None:
        progress = self._progress.get((partition, store_name))
        super().on_restore_end(partition, store_name, total_restored)
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

    def on_bytes_restored(self, partition: TopicPartition, store_name: str, num_bytes: int) -> None:
        for listener in self._listeners:
            counted = getattr(listener, "on_bytes_restored", None)
            if counted is not None:
                counted(partition, store_name, num_bytes)

    def on_restore_end(self, partition: TopicPartition, store_name: str, total_restored: int) -> None:
        for listener in self._listeners:
            listener.on_restore_end(partition, store_name, total_restored)

    def on_restore_suspended(self, partition: TopicPartition, store_name: str, total_restored: int) -> None:
        for listener in self._listeners:
            suspended = getattr(listener, "on_restore_suspended", None)
            if suspended is not None:
                suspended(partition, store_name, total_restored)
